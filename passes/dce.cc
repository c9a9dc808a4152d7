#include "passes/dce.h"

#include <set>

#include "graph/op_registry.h"
#include "passes/node_util.h"

namespace graft::passes {
namespace {

bool IsRemovable(const Node& node) {
  switch (node.op()) {
    case OpCode::kPlaceholder:
    case OpCode::kOutput:
      return false;
    case OpCode::kGetAttr:
    case OpCode::kCallModule:
    case OpCode::kCallFunction:
      return IsPureNode(node);
  }
  return false;
}

// Drops tensors and submodules no get_attr/call_module names.
bool DropUnreferenced(Module& module) {
  std::set<std::string> submodules;
  for (Node* n : module.graph().nodes()) {
    if (n->op() == OpCode::kCallModule) submodules.insert(n->target());
  }
  std::vector<std::string> dead_submodules;
  for (const auto& [name, m] : module.submodules()) {
    if (!submodules.contains(name)) dead_submodules.push_back(name);
  }
  for (const std::string& name : dead_submodules) module.RemoveSubmodule(name);
  const bool dropped_tensors = RemoveUnreadTensors(module);
  return dropped_tensors || !dead_submodules.empty();
}

}  // namespace

bool EliminateDeadCode(Graph& graph) {
  bool changed = false;
  for (Node* node : graph.reversed_nodes()) {
    if (!node->has_uses() && IsRemovable(*node)) {
      // Cannot fail: the node has no uses.
      (void)graph.EraseNode(node);
      changed = true;
    }
  }
  return changed;
}

absl::StatusOr<bool> DcePass::Run(Module& module, PassContext& ctx) {
  bool changed = EliminateDeadCode(module.graph());
  changed |= DropUnreferenced(module);
  return changed;
}

}  // namespace graft::passes
