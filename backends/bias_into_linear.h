#ifndef GRAFT_BACKENDS_BIAS_INTO_LINEAR_H_
#define GRAFT_BACKENDS_BIAS_INTO_LINEAR_H_

#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft {

// Rewrites add(matmul(x, W), b) (either operand order), with W a module
// tensor [K, N], b one of [N] (float tensors of one dtype) and the product
// read by nothing else, as
// linear(x, W^T, b): the library call adds the bias as it writes the
// product instead of a second pass over it. ONNX exports of GPT-2 and of
// most transformers write their projections that way. Returns whether it
// changed anything. `module` must be typed (shape propagation).
absl::StatusOr<bool> FoldBiasIntoLinear(Module& module);

}  // namespace graft

#endif  // GRAFT_BACKENDS_BIAS_INTO_LINEAR_H_
