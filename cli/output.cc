#include "cli/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graft::cli {

absl::Status WriteStdout(absl::string_view text) {
  bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  ok = std::fflush(stdout) == 0 && ok;
  if (!ok) {
    return absl::UnavailableError(absl::StrCat(
        "cannot write to standard output: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace graft::cli
