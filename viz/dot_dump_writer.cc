#include "viz/dot_dump_writer.h"

#include "absl/strings/str_cat.h"
#include "viz/dot_writer.h"

namespace graft {

absl::Status WriteDotDump(const passes::DumpRequest& request) {
  if (request.module == nullptr) {
    return absl::InvalidArgumentError("dump request without a module");
  }
  DotOptions options;
  // Fusion and partitioning passes are what these pictures are for: show
  // what went into each group (collapsed anyway above max_nodes).
  options.cluster_fused = true;
  if (request.before != nullptr) {
    options.title = absl::StrCat("after ", request.pass);
    AddPassDiff(*request.before, *request.module, request.pass, &options);
  } else if (!request.pass.empty()) {
    options.title = absl::StrCat("before ", request.pass);
  }
  return WriteModulePicture(*request.module, request.path, options);
}


}  // namespace graft
