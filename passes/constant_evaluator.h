#ifndef GRAFT_PASSES_CONSTANT_EVALUATOR_H_
#define GRAFT_PASSES_CONSTANT_EVALUATOR_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/node.h"
#include "graph/tensor.h"

namespace graft::passes {

// Computes the value of one call_function node from its inputs' values, for
// fold-constants. `inputs` holds one tensor per element of
// node.unique_inputs(), in that order. Returns one tensor, or one per
// element for an op that returns a tuple. Passes cannot depend on backends,
// so the program gives one through PassContext::constant_evaluator; the
// interpreter's is graft::interp::EvaluateNode.
using ConstantEvaluator = std::function<absl::StatusOr<std::vector<Tensor>>(
    const Node& node, absl::Span<const Tensor> inputs)>;

}  // namespace graft::passes

#endif  // GRAFT_PASSES_CONSTANT_EVALUATOR_H_
