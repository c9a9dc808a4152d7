#ifndef GRAFT_CLI_OUTPUT_H_
#define GRAFT_CLI_OUTPUT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graft::cli {

// Writes `text` to stdout and flushes; a failed write (full disk, closed
// pipe) is an error rather than silently lost output.
absl::Status WriteStdout(absl::string_view text);

}  // namespace graft::cli

#endif  // GRAFT_CLI_OUTPUT_H_
