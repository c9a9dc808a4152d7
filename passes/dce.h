#ifndef GRAFT_PASSES_DCE_H_
#define GRAFT_PASSES_DCE_H_

#include "passes/pass.h"

namespace graft::passes {

// Dead-code elimination. Removes nodes whose value nobody uses, walking the
// graph backwards once so that chains of dead nodes go in a single linear
// sweep. Keeps placeholders (they are the module's signature), the output,
// and calls of impure or unregistered ops (graft::IsPureNode), as torch.fx
// does. Also
// drops module tensors and submodules that no node refers to any more.
class DcePass : public Pass {
 public:
  absl::string_view name() const override { return "dce"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

// The graph-only part, for callers that hold a bare Graph.
bool EliminateDeadCode(Graph& graph);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_DCE_H_
