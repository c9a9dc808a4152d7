#ifndef GRAFT_PASSES_PIPELINE_H_
#define GRAFT_PASSES_PIPELINE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/dump_writer.h"
#include "passes/pass.h"
#include "passes/pass_context.h"

namespace graft::passes {

// One entry of a pipeline string: a pass name and its options.
struct PipelineEntry {
  std::string name;
  std::map<std::string, std::string> options;
};

// Parses "shape-prop,dce,fold-constants{max-size=1024}". Errors give the
// column and what was expected.
absl::StatusOr<std::vector<PipelineEntry>> ParsePipeline(absl::string_view text);


// A sequence of passes run as one transaction: the passes work on a copy of
// the module, which replaces the caller's only if every pass succeeded and
// (with verify_each) left a valid graph. On error the caller's module is
// exactly as it was and the message names the pass.
class Pipeline {
 public:
  Pipeline() = default;
  // Builds the passes of a pipeline string from the registry.
  static absl::StatusOr<Pipeline> FromString(absl::string_view text);

  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  size_t size() const { return passes_.size(); }

  // True if any pass changed the module.
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx);

 private:
  // `before`: for an "after" picture, the module before the pass.
  absl::Status Dump(const Module& module, const Module* before,
                    const PassContext& ctx, size_t index,
                    absl::string_view pass, absl::string_view when) const;

  std::vector<std::unique_ptr<Pass>> passes_;
};

// Frees erased nodes of a module and of its submodules.
void CleanupModule(Module& module);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_PIPELINE_H_
