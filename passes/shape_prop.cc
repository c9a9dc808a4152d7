#include "passes/shape_prop.h"

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::passes {
namespace {

bool SetTypes(Node* node, std::vector<TensorType> types, bool tuple) {
  if (tuple) {
    if (node->meta().tuple_types == types) return false;
    node->meta().tuple_types = std::move(types);
    return true;
  }
  if (node->type() == types[0]) return false;
  node->set_type(std::move(types[0]));
  return true;
}

absl::Status Located(const Node& node, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(node.Ref(), ": ", message));
}

absl::StatusOr<bool> PropagateCallModule(Module& module, Node* node) {
  Module* sub = module.FindSubmodule(node->target());
  if (sub == nullptr) {
    return Located(*node, absl::StrCat("no submodule named '", node->target(), "'"));
  }
  std::vector<Node*> inputs = node->inputs();
  std::vector<Node*> params = sub->graph().placeholders();
  if (inputs.size() != params.size()) {
    return Located(*node, absl::StrCat("submodule '", node->target(), "' takes ",
                                       params.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!inputs[i]->type().has_value()) return false;
    params[i]->set_type(*inputs[i]->type());
  }
  absl::StatusOr<bool> inner = PropagateShapes(*sub);
  if (!inner.ok()) {
    return Located(*node, absl::StrCat("in submodule '", node->target(), "': ",
                                       inner.status().message()));
  }
  Node* out = sub->graph().output();
  if (out == nullptr || out->num_args() != 1) return false;
  const Argument& value = out->arg(0);
  if (value.is_node()) {
    if (!value.node()->type().has_value()) return false;
    return SetTypes(node, {*value.node()->type()}, false);
  }
  std::vector<TensorType> types;
  for (const Argument& a : value.list()) {
    if (!a.is_node() || !a.node()->type().has_value()) return false;
    types.push_back(*a.node()->type());
  }
  return SetTypes(node, std::move(types), true);
}

}  // namespace

absl::StatusOr<bool> PropagateNodeShapes(Module& module, Node* node) {
  switch (node->op()) {
    case OpCode::kPlaceholder:
    case OpCode::kOutput:
      return false;
    case OpCode::kGetAttr: {
      const Tensor* t = module.FindTensor(node->target());
      if (t == nullptr) {
        return Located(*node, absl::StrCat("no tensor named '", node->target(), "'"));
      }
      return SetTypes(node, {t->type()}, false);
    }
    case OpCode::kCallFunction: {
      auto types = InferNodeTypes(*node);
      if (!types.ok()) return Located(*node, types.status().message());
      if (!types->has_value()) return false;
      bool tuple = node->schema() != nullptr && node->schema()->returns_tuple;
      return SetTypes(node, std::move(**types), tuple);
    }
    case OpCode::kCallModule:
      return PropagateCallModule(module, node);
  }
  return false;
}

absl::StatusOr<bool> PropagateShapes(Module& module) {
  bool changed = false;
  for (Node* node : module.graph().nodes()) {
    ASSIGN_OR_RETURN(bool c, PropagateNodeShapes(module, node));
    changed |= c;
  }
  return changed;
}

absl::StatusOr<bool> ShapePropPass::Run(Module& module, PassContext& ctx) {
  return PropagateShapes(module);
}

}  // namespace graft::passes
