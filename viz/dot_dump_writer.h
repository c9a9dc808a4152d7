#ifndef GRAFT_VIZ_DOT_DUMP_WRITER_H_
#define GRAFT_VIZ_DOT_DUMP_WRITER_H_

#include "absl/status/status.h"
#include "passes/dump_writer.h"

namespace graft {

// Writes the picture of one pass-pipeline dump (--dump dot|svg): submodules
// as clusters, and in an "after" picture the nodes the pass created
// highlighted and the nodes it removed drawn as ghosts where they were.
absl::Status WriteDotDump(const passes::DumpRequest& request);

}  // namespace graft

#endif  // GRAFT_VIZ_DOT_DUMP_WRITER_H_
