#include "cli/flop_count.h"

#include <optional>

#include "graph/node.h"
#include "graph/shape.h"

namespace graft::cli {
namespace {

// The static type of a node argument, if it has one.
std::optional<TensorType> StaticTypeOf(const Argument& arg) {
  if (!arg.is_node()) return std::nullopt;
  const std::optional<TensorType>& type = arg.node()->type();
  if (!type.has_value() || !IsStatic(type->shape)) return std::nullopt;
  return type;
}

// The size each result element sums over, or 0 when it is unknown.
int64_t ContractedSize(const Node& node) {
  if (node.num_args() < 2) return 0;
  if (node.is_call("linear") || node.is_call("graft::linear_activation") ||
      node.is_call("matmul")) {
    std::optional<TensorType> input = StaticTypeOf(node.arg(0));
    if (!input.has_value() || input->rank() == 0) return 0;
    return input->shape.back().value();
  }
  if (node.is_call("conv2d")) {
    std::optional<TensorType> weight = StaticTypeOf(node.arg(1));
    if (!weight.has_value() || weight->rank() != 4) return 0;
    return weight->shape[1].value() * weight->shape[2].value() *
           weight->shape[3].value();
  }
  return 0;
}

}  // namespace

int64_t CountMatmulFlops(const Graph& graph) {
  int64_t flops = 0;
  for (const Node* node : graph.nodes()) {
    if (node->op() != OpCode::kCallFunction) continue;
    const std::optional<TensorType>& type = node->type();
    if (!type.has_value() || !IsStatic(type->shape)) continue;
    flops += 2 * NumElements(type->shape) * ContractedSize(*node);
  }
  return flops;
}

}  // namespace graft::cli
