#include "graph/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace graft {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("cannot open", path, errno);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return ErrnoError("cannot read", path, errno);
  return std::move(buffer).str();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file.Write(contents));
  RETURN_IF_ERROR(file.Finish());
  return file.Publish();
}

}  // namespace graft
