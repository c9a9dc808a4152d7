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
// the memo is written only by this machine's own hashing.
//
// File times are not proof of content: writes through a shared mapping to
// pages already dirty move neither time, and some filesystems keep coarse
// or settable times. So a record also keeps a hash of 64 pages spread over
// the region, checked against the file on every use; a record is written
// only for a file whose change time is at least two seconds old and whose
// sampled pages in memory match the file's (a process that wrote into the
// loaded tensor first does not record its own bytes). A change that
// touches none of the sampled pages while keeping every time would still
// be missed: set GRAFT_FILE_HASH_MEMO=0 to hash every time. Best effort: a
// folder that cannot be written costs the hashing, nothing else.
class FileHashMemo {
 public:
  // Regions smaller than this are hashed each time (cheaply).
  static constexpr uint64_t kMinRegionBytes = uint64_t{1} << 20;
  // Memo files kept at most; the oldest half goes when there are more.
  static constexpr int kMaxFiles = 4096;

  explicit FileHashMemo(std::string dir) : dir_(std::move(dir)) {}
  // DefaultCacheDir()/file-hashes, as the environment says now; disabled
  // (finds and records nothing) when GRAFT_FILE_HASH_MEMO is 0.
  static FileHashMemo Default();
  // The memo in `cache_dir`/file-hashes, or disabled as Default() is.
  static FileHashMemo In(const std::string& cache_dir);

  // `data`: the region's bytes as mapped from the file now.
  std::optional<Fingerprint> Find(const FileIdentity& file, uint64_t offset, uint64_t length,
                                  const void* data) const;
  // `hash`: of `data`, the region as the caller holds it; `path` the file.
  void Record(const std::string& path, const FileIdentity& file, uint64_t offset,
              uint64_t length, const Fingerprint& hash, const void* data) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string PathOf(const FileIdentity& file, uint64_t offset, uint64_t length) const;
  void Trim() const;

  std::string dir_;  // Empty: disabled.
};

}  // namespace graft

#endif  // GRAFT_SUPPORT_FILE_HASH_MEMO_H_
