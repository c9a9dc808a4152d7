#ifndef GRAFT_GRAPH_TYPE_RULES_H_
#define GRAFT_GRAPH_TYPE_RULES_H_

#include "absl/status/statusor.h"
#include "graph/op_registry.h"

// Type rules shared by many ops of the core set.
namespace graft::rules {

// NumPy broadcasting of two shapes. Symbolic dims: equal symbols match, a
// symbol against 1 gives the symbol, a symbol against a constant n != 1
// gives n (the only size that can be valid).
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// One result with the type of parameter "input".
absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx);
// Broadcast "input" and "other"; dtype promoted.
absl::StatusOr<std::vector<TensorType>> BroadcastBinary(const InferContext& ctx);

}  // namespace graft::rules

#endif  // GRAFT_GRAPH_TYPE_RULES_H_
