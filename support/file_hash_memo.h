#ifndef GRAFT_SUPPORT_FILE_HASH_MEMO_H_
#define GRAFT_SUPPORT_FILE_HASH_MEMO_H_

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include "support/fingerprint.h"

namespace graft {

// A file's contents as the kernel tells them apart: a file with the same
// device, inode, size, modification and change time has the bytes it had.
// Any write, and any change of its times (`touch`), moves the change time,
// which no user can set back; a copy is another inode.
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;

  static FileIdentity Of(const struct stat& st);
  bool operator==(const FileIdentity&) const = default;
};

// Content hashes of large regions of files (the weights in a .gpb side
// file), remembered in a folder of the cache directory and valid only for
// the file identity they were taken with. A module loaded again from the
// same unchanged file then takes its weights' hashes from here instead of
// reading 100 MB to fingerprint it. Nothing in the model files is trusted:
// the memo is written only by this machine's own hashing. Best effort: a
// folder that cannot be written costs the hashing, nothing else.
class FileHashMemo {
 public:
  // Regions smaller than this are hashed each time (cheaply).
  static constexpr uint64_t kMinRegionBytes = uint64_t{1} << 20;
  // Memo files kept at most; the oldest half goes when there are more.
  static constexpr int kMaxFiles = 4096;

  explicit FileHashMemo(std::string dir) : dir_(std::move(dir)) {}
  // DefaultCacheDir()/file-hashes.
  static const FileHashMemo& Default();

  std::optional<Fingerprint> Find(const FileIdentity& file, uint64_t offset,
                                  uint64_t length) const;
  void Record(const FileIdentity& file, uint64_t offset, uint64_t length,
              const Fingerprint& hash) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const FileIdentity& file, uint64_t offset, uint64_t length) const;
  void Trim() const;

  std::string dir_;
};

}  // namespace graft

#endif  // GRAFT_SUPPORT_FILE_HASH_MEMO_H_
