#ifndef GRAFT_BACKENDS_INTERP_CONSTANT_EVALUATOR_H_
#define GRAFT_BACKENDS_INTERP_CONSTANT_EVALUATOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/node.h"
#include "graph/tensor.h"

namespace graft::interp {

// Computes one call_function node with the interpreter, given one tensor
// per element of node.unique_inputs(): the node is copied into a module of
// its own whose placeholders are those inputs, and that module is run.
// Returns one tensor, or a tuple's elements. This is the
// passes::ConstantEvaluator contract.
absl::StatusOr<std::vector<Tensor>> EvaluateNode(
    const Node& node, absl::Span<const Tensor> inputs);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_CONSTANT_EVALUATOR_H_
