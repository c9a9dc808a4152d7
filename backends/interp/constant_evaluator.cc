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

Argument MapArgument(const Argument& a, const NodeMap& map) {
  if (a.is_node()) return Argument(map.at(a.node()));
  if (!a.is_list()) return a;
  ArgumentList list;
  list.reserve(a.list().size());
  for (const Argument& e : a.list()) list.push_back(MapArgument(e, map));
  return Argument(std::move(list));
}

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
  std::vector<Argument> args;
  args.reserve(node.num_args());
  for (const Argument& a : node.args()) args.push_back(MapArgument(a, map));
  Kwargs kwargs;
  for (const auto& [k, v] : node.kwargs())
    kwargs.emplace_back(k, MapArgument(v, map));
  Node* copy =
      graph.CreateNode(OpCode::kCallFunction, node.target(), std::move(args),
                       std::move(kwargs), node.name());
  graph.Output(copy);
  Interpreter interpreter(module);
  return interpreter.Run(inputs);
}

void InstallInterpreterConstantEvaluator() {
  passes::SetConstantEvaluator(EvaluateNode);
}

}  // namespace graft::interp
