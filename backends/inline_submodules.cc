#include "backends/inline_submodules.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/op_traits.h"
#include "support/status_macros.h"

namespace graft {
namespace {

bool IsPointwiseGroup(const Module& sub) {
  for (const Node* n : sub.graph().nodes()) {
    if (n->op() == OpCode::kPlaceholder || n->op() == OpCode::kOutput) continue;
    if (n->op() != OpCode::kCallFunction || !PointwiseFormulaOf(*n)) return false;
  }
  return true;
}

absl::Status Inline(Module& module, Node* call, const Module& sub) {
  Graph& graph = module.graph();
  const std::vector<Node*> placeholders = sub.graph().placeholders();
  if (placeholders.size() != call->num_args() || !call->kwargs().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("%", call->name(), " passes ", call->num_args(),
                     " arguments to submodule '", call->target(), "', which takes ",
                     placeholders.size()));
  }
  absl::flat_hash_map<const Node*, Node*> map;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    if (!call->arg(i).is_node()) {
      return absl::UnimplementedError(absl::StrCat(
          "%", call->name(), ": a submodule argument that is not a tensor"));
    }
    map[placeholders[i]] = call->arg(i).node();
  }
  auto guard = graph.InsertingBefore(call);
  Node* result = nullptr;
  for (const Node* n : sub.graph().nodes()) {
    switch (n->op()) {
      case OpCode::kPlaceholder:
        continue;
      case OpCode::kOutput:
        if (n->num_args() != 1 || !n->arg(0).is_node()) {
          return absl::UnimplementedError(absl::StrCat(
              "submodule '", call->target(), "' returns more than one tensor"));
        }
        result = map.at(n->arg(0).node());
        continue;
      case OpCode::kCallModule:
        return absl::UnimplementedError(absl::StrCat(
            "submodule '", call->target(), "' calls submodules of its own"));
      case OpCode::kGetAttr: {
        const Tensor* tensor = sub.FindTensor(n->target());
        if (tensor == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "submodule '", call->target(), "' reads tensor '", n->target(),
              "', which it does not have"));
        }
        const std::string name =
            module.UniqueTensorName(absl::StrCat(call->target(), ".", n->target()));
        module.SetTensor(name, *tensor);
        map[n] = graph.GetAttr(name, n->type());
        continue;
      }
      case OpCode::kCallFunction:
        map[n] = graph.CopyNode(*n, map);
        continue;
    }
  }
  if (result == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("submodule '", call->target(), "' has no output"));
  }
  call->ReplaceAllUsesWith(result);
  return graph.EraseNode(call);
}

}  // namespace

absl::Status InlineSubmodules(Module& module) {
  std::vector<Node*> calls;
  for (Node* node : module.graph().nodes()) {
    if (node->op() != OpCode::kCallModule) continue;
    const Module* sub = module.FindSubmodule(node->target());
    if (sub == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", node->name(), " calls submodule '", node->target(),
          "', which the module does not have"));
    }
    if (!IsPointwiseGroup(*sub)) calls.push_back(node);
  }
  for (Node* call : calls) {
    RETURN_IF_ERROR(Inline(module, call, *module.FindSubmodule(call->target())));
  }
  return absl::OkStatus();
}

}  // namespace graft
