#ifndef GRAFT_PASSES_FUSED_OPS_H_
#define GRAFT_PASSES_FUSED_OPS_H_

#include "absl/strings/string_view.h"

namespace graft::passes {

// act(input @ W^T + bias) in one op, made by fuse-linear-activation:
//   graft::linear_activation(input: Tensor, weight: Tensor,
//                            bias: Tensor? = None, activation: str = "relu",
//                            weight_layout: str = "out_in")
// `activation` is "relu", "gelu" (erf form) or "gelu_tanh". `weight` is
// [out, in] as linear's ("out_in") or [in, out] as matmul's second operand
// ("in_out"). Every tensor shares one floating-point dtype; the result is
// input's shape with the last dim replaced by out.
inline constexpr absl::string_view kLinearActivationOp =
    "graft::linear_activation";

// Registers the fused ops (docs/ops.md, "Fused ops") in the global op
// registry. Idempotent and thread-safe; the built-in pass registry calls it,
// and so must a program that reads graphs holding fused ops before it has
// touched the pass registry.
void RegisterFusedOps();

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FUSED_OPS_H_
