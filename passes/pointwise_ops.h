#ifndef GRAFT_PASSES_POINTWISE_OPS_H_
#define GRAFT_PASSES_POINTWISE_OPS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/node.h"

namespace graft::passes {

// The pointwise ops of the core set: each element of the result depends
// only on the elements at the same (broadcast) position of the inputs, so a
// chain of them runs as one loop. Unary and binary elementwise ops,
// comparisons, logical ops, cast, clamp, where, leaky_relu, gelu and
// identity. Sorted.
const std::vector<std::string>& PointwiseOps();
bool IsPointwiseOp(absl::string_view op);
// A call_function of a pointwise op.
bool IsPointwise(const Node& node);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_POINTWISE_OPS_H_
