#ifndef GRAFT_PASSES_FUSE_LINEAR_ACTIVATION_H_
#define GRAFT_PASSES_FUSE_LINEAR_ACTIVATION_H_

#include "passes/pass.h"

namespace graft::passes {

// Linear/activation fusion: a relu or gelu whose input is a linear, a
// matmul by a 2-D weight, or such a matmul plus a bias vector, becomes one
// graft::linear_activation (graph/fused_ops.h), which GEMM libraries run
// with the bias and activation as an epilogue instead of three passes over
// memory. Every intermediate value must have the activation as its only
// user, and all types must be known and floating point: the fused node must
// have exactly the activation's type, so a bias add that broadcasts to a
// larger shape or changes the dtype is left alone. A matmul keeps its weight
// as is ("in_out" layout) rather than gaining a transpose.
class FuseLinearActivationPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-linear-activation"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FUSE_LINEAR_ACTIVATION_H_
