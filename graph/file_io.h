#ifndef GRAFT_GRAPH_FILE_IO_H_
#define GRAFT_GRAPH_FILE_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graft {

// Reads a whole file; errors name the path and the system's reason.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to a temporary file beside `path`, flushes it, and
// renames it over `path`, so readers never see a half-written file and a
// failed write leaves any old file untouched.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

}  // namespace graft

#endif  // GRAFT_GRAPH_FILE_IO_H_
