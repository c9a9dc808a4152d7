#include "passes/node_util.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace graft::passes {

std::optional<TensorType> KnownType(const Node& node) {
  if (node.type().has_value()) return node.type();
  if (node.op() != OpCode::kCallFunction) return std::nullopt;
  if (node.schema() != nullptr && node.schema()->returns_tuple) {
    return std::nullopt;
  }
  auto types = InferNodeTypes(node);
  if (!types.ok() || !types->has_value() || (*types)->size() != 1) {
    return std::nullopt;
  }
  return (**types)[0];
}

void InferAndSetType(Node* node) {
  if (node->op() != OpCode::kCallFunction) return;
  auto types = InferNodeTypes(*node);
  if (types.ok() && types->has_value()) SetInferredTypes(node, **types);
}

void SetInferredTypes(Node* node, const std::vector<TensorType>& types) {
  if (types.empty()) return;
  if (node->schema() != nullptr && node->schema()->returns_tuple) {
    node->meta().tuple_types = types;
  } else {
    node->set_type(types[0]);
  }
}

CallOperands OperandsOf(const Node& node) {
  CallOperands out;
  out.args.assign(node.args().begin(), node.args().end());
  out.kwargs = node.kwargs();
  return out;
}

void SetParam(const OpSchema& schema, CallOperands& operands,
              absl::string_view param, Argument value) {
  const int index = schema.ParamIndex(param);
  if (index >= 0 && static_cast<size_t>(index) < operands.args.size()) {
    operands.args[index] = std::move(value);
    return;
  }
  for (auto& [key, v] : operands.kwargs) {
    if (key == param) {
      v = std::move(value);
      return;
    }
  }
  operands.kwargs.emplace_back(std::string(param), std::move(value));
}

CallOperands WithParam(const Node& node, absl::string_view param,
                       Argument value) {
  CallOperands out = OperandsOf(node);
  const OpSchema* schema = node.schema() != nullptr
                               ? node.schema()
                               : OpRegistry::Global().Find(node.target());
  if (schema != nullptr) SetParam(*schema, out, param, std::move(value));
  return out;
}

const Tensor* AttrTensor(const Module& module, const Node* node) {
  if (node == nullptr || node->op() != OpCode::kGetAttr) return nullptr;
  return module.FindTensor(node->target());
}

void EraseIfDead(Graph& graph, Node* node) {
  std::vector<Node*> work = {node};
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (n->erased() || n->has_uses() || !IsPureNode(*n)) continue;
    std::vector<Node*> inputs = n->unique_inputs();
    (void)graph.EraseNode(n);
    for (Node* in : inputs) work.push_back(in);
  }
}

const Tensor* PrivateConstant(const Module& module, const Node* node) {
  const Tensor* t = AttrTensor(module, node);
  if (t == nullptr || node->num_uses() != 1) return nullptr;
  for (const Node* other : module.graph().nodes()) {
    if (other != node && other->op() == OpCode::kGetAttr && other->target() == node->target()) {
      return nullptr;
    }
  }
  return t;
}

Node* SoleUser(const Node& node) {
  std::vector<Node*> users = node.users();
  return users.size() == 1 && node.num_uses() == 1 ? users[0] : nullptr;
}

bool AllUsesBy(const Node* node, const Node* user) {
  for (const Use& u : node->uses()) {
    if (u.user != user) return false;
  }
  return node->has_uses();
}

bool RemoveUnreadTensors(Module& module) {
  absl::flat_hash_set<std::string> read;
  for (const Node* n : module.graph().nodes()) {
    if (n->op() == OpCode::kGetAttr) read.insert(n->target());
  }
  std::vector<std::string> unread;
  for (const auto& [name, t] : module.tensors()) {
    if (!read.contains(name)) unread.push_back(name);
  }
  for (const std::string& name : unread) module.RemoveTensor(name);
  return !unread.empty();
}

}  // namespace graft::passes
