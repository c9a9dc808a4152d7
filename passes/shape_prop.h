#ifndef GRAFT_PASSES_SHAPE_PROP_H_
#define GRAFT_PASSES_SHAPE_PROP_H_

#include "passes/pass.h"

namespace graft::passes {

// Shape propagation: computes every node's type (dtype and shape, symbolic
// dims kept) from the placeholders' types, the module's tensors and the op
// registry's type rules, in one forward walk. call_module nodes propagate
// through their submodule. A type error names the node and the op.
class ShapePropPass : public Pass {
 public:
  absl::string_view name() const override { return "shape-prop"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

// The same, callable without a pipeline.
absl::StatusOr<bool> PropagateShapes(Module& module);

// One step of that walk: `node`'s type from its inputs' types, for passes
// that change a graph as they walk it. Returns whether the type changed.
absl::StatusOr<bool> PropagateNodeShapes(Module& module, Node* node);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_SHAPE_PROP_H_
