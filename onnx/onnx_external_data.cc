#include "onnx/onnx_external_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::onnx_import {

namespace fs = std::filesystem;

// A whole file mapped copy-on-write: tensors that view it may be written
// by careless code without touching the file.
struct ExternalDataReader::MappedFile {
  void* data = nullptr;
  size_t size = 0;
  ~MappedFile() {
    if (data != nullptr) munmap(data, size);
  }
};

ExternalDataReader::ExternalDataReader(std::string base_dir)
    : base_dir_(std::move(base_dir)) {}

ExternalDataReader::~ExternalDataReader() = default;

absl::StatusOr<std::string> ExternalDataReader::Resolve(
    absl::string_view tensor_name, const std::string& location) const {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", tensor_name, "': external data location '",
                     location, "' ", why));
  };
  if (location.empty()) return refuse("is empty");
  if (location.find('\0') != std::string::npos) return refuse("holds a NUL");
  const fs::path loc(location);
  if (loc.is_absolute()) {
    return refuse(
        "is an absolute path; it must be relative to the model's "
        "directory");
  }
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir_.empty() ? "." : base_dir_, ec);
  if (ec) {
    return absl::NotFoundError(absl::StrCat(
        "tensor '", tensor_name, "': cannot open the model's directory '",
        base_dir_, "': ", ec.message()));
  }
  const fs::path target = fs::weakly_canonical(base / loc, ec);
  if (ec) return refuse(absl::StrCat("cannot be resolved: ", ec.message()));
  auto [base_end, unused] =
      std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (base_end != base.end() || target == base) {
    return refuse(
        absl::StrCat("is outside the model's directory '", base.string(), "'"));
  }
  return target.string();
}

absl::StatusOr<std::shared_ptr<ExternalDataReader::MappedFile>>
ExternalDataReader::Map(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open external data file '",
                                            path, "': ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("external data file '", path, "' is not a regular file"));
  }
  auto file = std::make_shared<MappedFile>();
  file->size = static_cast<size_t>(st.st_size);
  if (file->size > 0) {
    void* p =
        mmap(nullptr, file->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("cannot map external data file '",
                                              path, "': ", std::strerror(err)));
    }
    file->data = p;
  }
  close(fd);
  files_[path] = file;
  return file;
}

absl::StatusOr<Tensor> ExternalDataReader::Read(
    absl::string_view tensor_name, const std::string& location,
    std::optional<uint64_t> offset, std::optional<uint64_t> length, DType dtype,
    const std::vector<int64_t>& dims) {
  uint64_t bytes = static_cast<uint64_t>(DTypeSize(dtype));
  for (int64_t d : dims) {
    if (d < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", tensor_name, "' has an invalid shape"));
    }
  }
  if (length.has_value() && *length != bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", tensor_name, "': external data length ", *length,
        " does not match the ", bytes, " bytes its type needs"));
  }
  ASSIGN_OR_RETURN(std::string path, Resolve(tensor_name, location));
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, Map(path));
  const uint64_t start = offset.value_or(0);
  const uint64_t size = file->size;
  if (start > size || bytes > size - start) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", tensor_name, "': external data file '", location, "' has ",
        size, " bytes, but the tensor needs bytes ", start, " to ",
        start + bytes, " (offset ", start, ", length ", bytes, ")"));
  }
  std::byte* data = static_cast<std::byte*>(file->data);
  if (bytes == 0) return Tensor(dtype, dims);
  std::byte* p = data + start;
  if (reinterpret_cast<uintptr_t>(p) % Storage::kAlignment == 0) {
    std::shared_ptr<void> keep_alive = file;
    return Tensor(dtype, dims, Storage::Wrap(p, bytes, std::move(keep_alive)));
  }
  Tensor t(dtype, dims);
  std::memcpy(t.raw_data(), p, bytes);
  return t;
}

}  // namespace graft::onnx_import
