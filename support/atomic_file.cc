#include "support/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft {
namespace {

absl::Status ErrnoError(absl::string_view what, absl::string_view path,
                        int err) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

// Writes all of `size` bytes at the file position (or at `offset` when it is
// not negative), retrying short writes and EINTR.
bool WriteAll(int fd, const char* p, size_t size, int64_t offset) {
  while (size > 0) {
    const size_t chunk = std::min<size_t>(size, size_t{1} << 30);
    const ssize_t n =
        offset < 0 ? ::write(fd, p, chunk) : ::pwrite(fd, p, chunk, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    if (offset >= 0) offset += n;
  }
  return true;
}

}  // namespace

absl::StatusOr<AtomicFile> AtomicFile::Create(std::string path, Durability durability) {
  // The pid and a counter keep concurrent writers (processes, threads) of
  // the same destination apart.
  static std::atomic<uint64_t> counter{0};
  std::string temp =
      absl::StrCat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
  // 0666 less the umask, as any program's new files.
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  // The message names the file the user asked for, not the temporary one.
  if (fd < 0) return ErrnoError("cannot write", path, errno);
  return AtomicFile(std::move(path), std::move(temp), fd, durability);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      fd_(other.fd_),
      durability_(other.durability_),
      size_(other.size_),
      finished_(other.finished_),
      published_(other.published_) {
  other.fd_ = -1;
  other.published_ = true;  // Nothing left for the moved-from to clean up.
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!published_) ::unlink(temp_.c_str());
}

absl::Status AtomicFile::Fail(absl::string_view what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return ErrnoError(what, path_, err);
}

absl::Status AtomicFile::Write(const void* data, size_t size) {
  if (fd_ < 0) return absl::FailedPreconditionError("write after Finish()");
  if (!WriteAll(fd_, static_cast<const char*>(data), size, -1)) {
    return Fail("cannot write", errno);
  }
  size_ += size;
  return absl::OkStatus();
}

absl::Status AtomicFile::PadTo(uint64_t size) {
  static constexpr char kZeros[4096] = {};
  while (size_ < size) {
    const uint64_t n = std::min<uint64_t>(size - size_, sizeof(kZeros));
    RETURN_IF_ERROR(Write(kZeros, n));
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::WriteAt(uint64_t offset, absl::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError("write after Finish()");
  if (offset + data.size() > size_) {
    return absl::InternalError("WriteAt past the written end");
  }
  if (!WriteAll(fd_, data.data(), data.size(), static_cast<int64_t>(offset))) {
    return Fail("cannot write", errno);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Finish() {
  if (fd_ < 0) {
    return absl::FailedPreconditionError("Finish() after Finish() or an error");
  }
  const int fd = fd_;
  fd_ = -1;
  if (durability_ == Durability::kDurable && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoError("cannot write", path_, err);
  }
  if (::close(fd) != 0) return ErrnoError("cannot write", path_, errno);
  finished_ = true;
  return absl::OkStatus();
}

absl::Status AtomicFile::Publish() {
  if (!finished_) {
    return absl::FailedPreconditionError(
        "Publish() without a successful Finish()");
  }
  if (published_) return absl::FailedPreconditionError("Publish() twice");
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    return ErrnoError("cannot rename into", path_, errno);
  }
  published_ = true;
  return absl::OkStatus();
}

}  // namespace graft
