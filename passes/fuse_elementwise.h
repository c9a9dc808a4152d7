#ifndef GRAFT_PASSES_FUSE_ELEMENTWISE_H_
#define GRAFT_PASSES_FUSE_ELEMENTWISE_H_

#include "passes/pass.h"

namespace graft::passes {

// Elementwise fusion: groups connected pointwise ops (OpKind::kPointwise in the op registry)
// into one call_module each, so a backend compiles every group as a single
// loop that reads the group's inputs once and writes one result. A producer
// joins its consumer's group only when that consumer is its one and only
// user, so each group is a tree whose root is the only value used outside
// it: the group's inputs all come before the root and every outside user
// after it, and putting the call_module at the root's place can never form a
// cycle. Groups of one node are left alone. Submodules are named fused_0,
// fused_1, ... (skipping names already taken); their placeholders are the
// group's inputs, in first-use order. One backward walk assigns the groups,
// so the pass runs in time linear in the graph's size.
class FuseElementwisePass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-elementwise"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FUSE_ELEMENTWISE_H_
