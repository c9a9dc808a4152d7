#include "passes/fold_constants.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "passes/constant_evaluator.h"
#include "passes/node_util.h"

namespace graft::passes {
namespace {

// The value of a constant node: one tensor, or a tuple's elements.
struct ConstantValue {
  std::vector<Tensor> values;
  bool tuple = false;
};

using ConstantMap = absl::flat_hash_map<const Node*, ConstantValue>;

bool IsCreationOp(const Node& n) {
  return n.is_call("full") || n.is_call("zeros") || n.is_call("arange");
}

// False when the node's static type says its result is too large.
bool SmallEnough(const Node& n, int64_t max_size) {
  if (n.type().has_value() && IsStatic(n.type()->shape)) {
    return NumElements(n.type()->shape) <= max_size;
  }
  for (const TensorType& t : n.meta().tuple_types) {
    if (IsStatic(t.shape) && NumElements(t.shape) > max_size) return false;
  }
  return true;
}

// Computes `n` from constant inputs; nullopt when it is not constant, too
// large, or the evaluator refuses it (noted in `ctx`).
std::optional<ConstantValue> Evaluate(const Node& n,
                                      const ConstantMap& constants,
                                      const ConstantEvaluator& evaluate,
                                      int64_t max_size, PassContext& ctx) {
  if (n.op() != OpCode::kCallFunction || !IsPureNode(n)) return std::nullopt;
  std::vector<Node*> inputs = n.unique_inputs();
  std::vector<Tensor> values;
  values.reserve(inputs.size());
  for (Node* in : inputs) {
    auto it = constants.find(in);
    if (it == constants.end()) return std::nullopt;
    if (it->second.tuple) {
      // Only getitem reads a tuple: pick the element here.
      if (!n.is_call("getitem") || !n.arg(1).is_int()) return std::nullopt;
      const int64_t i = n.arg(1).int_value();
      const std::vector<Tensor>& elements = it->second.values;
      if (i < 0 || i >= static_cast<int64_t>(elements.size()))
        return std::nullopt;
      return ConstantValue{{elements[i]}, false};
    }
    values.push_back(it->second.values[0]);
  }
  if (!SmallEnough(n, max_size)) return std::nullopt;
  absl::StatusOr<std::vector<Tensor>> result = evaluate(n, values);
  if (!result.ok()) {
    ctx.Note(absl::StrCat("fold-constants: left ", n.Ref(), " (", n.target(),
                          ") as it is: ", result.status().message()));
    return std::nullopt;
  }
  for (const Tensor& t : *result) {
    if (!t.defined() || t.NumElements() > max_size) return std::nullopt;
  }
  const bool tuple = n.schema() != nullptr && n.schema()->returns_tuple;
  if (!tuple && result->size() != 1) return std::nullopt;
  // Users were typed against the node's recorded type; a value of another
  // type in its place would no longer verify.
  if (!tuple && n.type().has_value() && *n.type() != (*result)[0].type()) {
    ctx.Note(absl::StrCat("fold-constants: left ", n.Ref(),
                          " as it is: its type is ", n.type()->ToString(),
                          " but it computes ", (*result)[0].TypeString()));
    return std::nullopt;
  }
  return ConstantValue{*std::move(result), tuple};
}

}  // namespace

absl::StatusOr<bool> FoldConstantsPass::Run(Module& module, PassContext& ctx) {
  if (!ctx.constant_evaluator) {
    return absl::FailedPreconditionError(
        "fold-constants computes values with the interpreter, but the pass "
        "context has no constant evaluator: link graft_interp and set "
        "PassContext::constant_evaluator = graft::interp::EvaluateNode");
  }
  const ConstantEvaluator* evaluate = &ctx.constant_evaluator;
  Graph& graph = module.graph();
  ConstantMap constants;
  for (Node* n : graph.nodes()) {
    if (n->op() == OpCode::kGetAttr) {
      const Tensor* t = module.FindTensor(n->target());
      if (t != nullptr && t->defined()) constants[n] = {{*t}, false};
      continue;
    }
    std::optional<ConstantValue> value =
        Evaluate(*n, constants, *evaluate, max_size_, ctx);
    if (value.has_value()) constants[n] = *std::move(value);
  }

  // A node stays live unless it is a constant whose users all go away. A
  // foldable constant with a live user becomes a tensor; tuples and
  // creation ops are never stored, so they stay live while a user does.
  // Users come later in the graph, so one backward walk decides.
  absl::flat_hash_map<const Node*, bool> live;
  std::vector<Node*> to_store;
  for (Node* n : graph.reversed_nodes()) {
    auto c = constants.find(n);
    if (c == constants.end() || n->op() != OpCode::kCallFunction) {
      live[n] = true;
      continue;
    }
    bool has_live_user = false;
    for (Node* user : n->users()) has_live_user |= live.at(user);
    const bool storable = !c->second.tuple && !IsCreationOp(*n);
    if (storable && has_live_user) to_store.push_back(n);
    live[n] = !storable && has_live_user;
  }

  for (Node* n : to_store) {
    const Tensor& value = constants.at(n).values[0];
    const std::string name =
        module.UniqueTensorName(absl::StrCat(n->name(), "_folded"));
    module.SetTensor(name, value);
    Node* attr;
    {
      auto guard = graph.InsertingBefore(n);
      attr = graph.GetAttr(name, value.type());
    }
    ctx.RecordProvenance(attr, {n});
    n->ReplaceAllUsesWith(attr);
  }
  for (Node* n : to_store) EraseIfDead(graph, n);
  return !to_store.empty();
}

}  // namespace graft::passes
