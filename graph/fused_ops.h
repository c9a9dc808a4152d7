#ifndef GRAFT_GRAPH_FUSED_OPS_H_
#define GRAFT_GRAPH_FUSED_OPS_H_

#include "absl/strings/string_view.h"

namespace graft {

// graft's own fused ops, which its passes create. They are core ops like any
// other (graph/core_ops_fused.cc registers them with the rest), so every
// program reads graphs that hold them.
//
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

// Attention in one op, made by fuse-attention where a backend runs it:
//   graft::attention(query: Tensor, key: Tensor, value: Tensor,
//                    mask: Tensor? = None, scale: float = 1.0,
//                    masked_value: float = -inf, causal: bool = false)
// = softmax(where(mask, masked_value, (query @ key^T) * scale), -1) @ value,
// with query [..., T, D], key [..., S, D], value [..., S, Dv] sharing one
// floating-point dtype and the same leading dims, and mask (bool, true
// where the score is replaced, as torch.masked_fill) broadcasting to
// [..., T, S]; `causal` also sets the scores of keys after the query
// (j > i) to -inf (torch's is_causal). The result is [..., T, Dv]. A row
// whose every score is -inf is NaN, as softmax makes it.
inline constexpr absl::string_view kAttentionOp = "graft::attention";


}  // namespace graft

#endif  // GRAFT_GRAPH_FUSED_OPS_H_
