#include "serialize/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graft {
namespace {


absl::Status OpenError(absl::string_view path, absl::string_view what,
                       absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot open ", path, what.empty() ? "" : " (", what,
                   what.empty() ? "" : ")", ": ", reason));
}

// Closes the descriptor on every path out of Open.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<MappedFile>> MappedFile::Open(
    const std::string& path, absl::string_view what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return OpenError(path, what, std::strerror(errno));
  FdCloser closer(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return OpenError(path, what, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return OpenError(path, what, "it is a directory");
  if (!S_ISREG(st.st_mode)) {
    return OpenError(path, what, "it is not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const FileIdentity identity = FileIdentity::Of(st);
  if (size == 0) {
    return std::shared_ptr<MappedFile>(
        new MappedFile(path, nullptr, 0, identity));
  }
  if (size > static_cast<uint64_t>(SIZE_MAX)) {
    return OpenError(path, what, "it is too large to map");
  }
  // Private and writable: writes copy the page (see the class comment).
  // MAP_NORESERVE: untouched pages need no swap reservation.
  void* data =
      ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  if (data == MAP_FAILED) {
    return OpenError(path, what,
                     absl::StrCat("cannot map it: ", std::strerror(errno)));
  }
  return std::shared_ptr<MappedFile>(
      new MappedFile(path, static_cast<std::byte*>(data), size, identity));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, static_cast<size_t>(size_));
}

}  // namespace graft
