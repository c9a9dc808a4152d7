#include "backends/interp/constant_evaluator.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backends/interp/interpreter.h"
#include "graph/module.h"
#include "passes/constant_evaluator.h"

namespace graft::interp {
namespace {

using NodeMap = absl::flat_hash_map<const Node*, Node*>;

}  // namespace

absl::StatusOr<std::vector<Tensor>> EvaluateNode(
    const Node& node, absl::Span<const Tensor> inputs) {
  if (node.op() != OpCode::kCallFunction) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Ref(), " is not a call_function"));
  }
  std::vector<Node*> operands = node.unique_inputs();
  if (operands.size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node.Ref(), " reads ", operands.size(), " values, but ",
                     inputs.size(), " were given"));
  }
  Module module;
  Graph& graph = module.graph();
  NodeMap map;
  for (size_t i = 0; i < operands.size(); ++i) {
    map[operands[i]] =
        graph.Placeholder(absl::StrCat("in", i), inputs[i].type());
  }
  graph.Output(graph.CopyNode(node, map));
  Interpreter interpreter(module);
  return interpreter.Run(inputs);
}

}  // namespace graft::interp
