#include "passes/pointwise_ops.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace graft::passes {
namespace {

const absl::flat_hash_set<std::string>& PointwiseSet() {
  static const auto* set = new absl::flat_hash_set<std::string>(
      PointwiseOps().begin(), PointwiseOps().end());
  return *set;
}

}  // namespace

const std::vector<std::string>& PointwiseOps() {
  static const auto* ops = [] {
    auto* v = new std::vector<std::string>{
        // One input.
        "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
        "sigmoid", "relu", "silu", "erf", "reciprocal", "logical_not", "gelu",
        "leaky_relu", "clamp", "cast", "identity",
        // Two or three inputs, broadcasting.
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne",
        "lt", "le", "gt", "ge", "logical_and", "logical_or", "where"};
    std::sort(v->begin(), v->end());
    return v;
  }();
  return *ops;
}

bool IsPointwiseOp(absl::string_view op) { return PointwiseSet().contains(op); }

bool IsPointwise(const Node& node) {
  return node.op() == OpCode::kCallFunction && IsPointwiseOp(node.target());
}

}  // namespace graft::passes
