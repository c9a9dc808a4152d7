#ifndef GRAFT_SUPPORT_ATOMIC_FILE_H_
#define GRAFT_SUPPORT_ATOMIC_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

// A file written in pieces to a temporary name beside its destination and
// renamed into place only when complete, for outputs too large to build in
// one string (WriteFileAtomically in graph/file_io.h does the one-string
// case). Until Publish() succeeds the destination is untouched, and an
// AtomicFile destroyed before that removes its temporary file, so a failed
// or abandoned write leaves nothing behind.
//
// Several files that belong together are written completely (Finish), then
// published in an order that keeps readers safe (the side file of a .gpb
// before the .gpb).
class AtomicFile {
 public:
  // kDurable: Finish() flushes the data to disk (fsync), so a published
  // file survives a crash whole. kCache: it does not, for files whose loss
  // or damage costs only speed (compile cache entries, checked when read):
  // a large entry would otherwise wait for the disk.
  enum class Durability { kDurable, kCache };

  static absl::StatusOr<AtomicFile> Create(std::string path,
                                           Durability durability = Durability::kDurable);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  absl::Status Write(const void* data, size_t size);
  absl::Status Write(absl::string_view data) {
    return Write(data.data(), data.size());
  }
  // Writes zero bytes until the file is `size` long.
  absl::Status PadTo(uint64_t size);
  // Overwrites bytes already written (a header filled in at the end).
  absl::Status WriteAt(uint64_t offset, absl::string_view data);
  uint64_t size() const { return size_; }

  // Flushes the data to disk (when durable) and closes the temporary file.
  absl::Status Finish();
  // Renames the finished temporary file over the destination.
  absl::Status Publish();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_; }

 private:
  AtomicFile(std::string path, std::string temp, int fd, Durability durability)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd), durability_(durability) {}
  absl::Status Fail(absl::string_view what, int err);

  std::string path_;
  std::string temp_;
  int fd_ = -1;
  Durability durability_ = Durability::kDurable;
  uint64_t size_ = 0;
  bool finished_ = false;
  bool published_ = false;
};

}  // namespace graft

#endif  // GRAFT_SUPPORT_ATOMIC_FILE_H_
