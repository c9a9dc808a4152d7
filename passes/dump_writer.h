#ifndef GRAFT_PASSES_DUMP_WRITER_H_
#define GRAFT_PASSES_DUMP_WRITER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "graph/module.h"

namespace graft::passes {

// How to write before/after dumps of each pass.
enum class DumpFormat { kNone, kText, kDot, kSvg };

// One DOT or SVG dump: the module to draw and where. An "after" dump also
// names the pass that just ran and gives the module as it was before it, so
// the picture can mark what the pass created and what it removed.
struct DumpRequest {
  const Module* module = nullptr;
  const Module* before = nullptr;  // Null for a "before" dump.
  std::string pass;
  std::string path;
  DumpFormat format = DumpFormat::kNone;
};

// Writes a picture (DOT or SVG) of a module to a file, for dumps in those
// formats. Passes do not depend on the DOT writer: the program gives one
// through PassContext::dump_writer (graft::WriteDotDump draws with graft's).
using DumpWriter = std::function<absl::Status(const DumpRequest&)>;

}  // namespace graft::passes

#endif  // GRAFT_PASSES_DUMP_WRITER_H_
