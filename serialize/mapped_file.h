#ifndef GRAFT_SERIALIZE_MAPPED_FILE_H_
#define GRAFT_SERIALIZE_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/file_hash_memo.h"

namespace graft {

// A whole regular file mapped into memory, private and copy-on-write: reads
// page the file in lazily (a 1 GB model "loads" without reading it), and a
// write into a mapped tensor changes this process's copy, never the file and
// never a crash. Held through a shared_ptr: tensors that view the mapping
// (Storage::Wrap) keep it alive, and the last one unmaps it.
//
// The file must not be truncated while mapped (reading a page past the new
// end raises SIGBUS); graft's writers never do that, they write a new file
// and rename it over the old one, which leaves existing mappings intact.
class MappedFile {
 public:
  // Fails, naming `path` and the reason, for a missing or unreadable file, a
  // directory, or anything else that is not a regular file (opening a FIFO
  // does not block). `what` describes the file in messages ("the side file
  // of model.gpb"); empty for none.
  static absl::StatusOr<std::shared_ptr<MappedFile>> Open(
      const std::string& path, absl::string_view what = {});

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Null for an empty file.
  std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  absl::string_view bytes() const {
    return absl::string_view(reinterpret_cast<const char*>(data_), size_);
  }
  const std::string& path() const { return path_; }
  // The file's identity when it was opened (support/file_hash_memo.h).
  const FileIdentity& identity() const { return identity_; }

 private:
  MappedFile(std::string path, std::byte* data, uint64_t size, const FileIdentity& identity)
      : path_(std::move(path)), data_(data), size_(size), identity_(identity) {}

  std::string path_;
  std::byte* data_;
  uint64_t size_;
  FileIdentity identity_;
};

}  // namespace graft

#endif  // GRAFT_SERIALIZE_MAPPED_FILE_H_
