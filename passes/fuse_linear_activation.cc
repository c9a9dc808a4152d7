#include "passes/fuse_linear_activation.h"

#include <optional>
#include <string>
#include <vector>

#include "graph/op_registry.h"
#include "graph/type_rules.h"
#include "graph/fused_ops.h"
#include "passes/node_util.h"

namespace graft::passes {
namespace {

// The fused op's operands and the nodes it replaces.
struct Fusion {
  Node* input = nullptr;
  Node* weight = nullptr;
  Node* bias = nullptr;  // Null: no bias.
  std::string layout;
  std::vector<Node*> replaced;  // Producers, activation last.
};

// True when `n` is used exactly once, by `user`.
bool OnlyUsedBy(const Node* n, const Node* user) {
  return n->num_uses() == 1 && n->uses()[0].user == user;
}

bool FloatType(const Node* n) {
  std::optional<TensorType> t = KnownType(*n);
  return t.has_value() && IsFloatingPoint(t->dtype);
}

// The activation string of a relu/gelu node; nullopt for anything else.
std::optional<std::string> ActivationOf(const Node& act, const OpCall& call) {
  if (act.is_call("relu")) return std::string("relu");
  if (!act.is_call("gelu")) return std::nullopt;
  const std::string& approximate = call.String("approximate");
  if (approximate == "none") return std::string("gelu");
  if (approximate == "tanh") return std::string("gelu_tanh");
  return std::nullopt;
}

// matmul(x, W) with a 2-D W, used only by `user`.
bool MatchMatmul(Node* mm, const Node* user, Fusion& f) {
  if (mm == nullptr || !mm->is_call("matmul") || !OnlyUsedBy(mm, user)) {
    return false;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(*mm);
  if (!call.ok()) return false;
  Node* x = call->TensorNode("input");
  Node* w = call->TensorNode("other");
  if (x == nullptr || w == nullptr) return false;
  std::optional<TensorType> wt = KnownType(*w);
  if (!wt.has_value() || wt->rank() != 2) return false;
  f.input = x;
  f.weight = w;
  f.layout = "in_out";
  f.replaced.push_back(mm);
  return true;
}

// The producer side of a fusion ending in `act`, whose input is `in`.
std::optional<Fusion> MatchProducer(Node* in, const Node* act) {
  Fusion f;
  if (in == nullptr || !OnlyUsedBy(in, act) || !FloatType(in)) {
    return std::nullopt;
  }
  if (in->is_call("linear")) {
    absl::StatusOr<OpCall> call = OpCall::Bind(*in);
    if (!call.ok()) return std::nullopt;
    std::optional<TensorType> wt;
    if (Node* w = call->TensorNode("weight")) wt = KnownType(*w);
    if (!wt.has_value() || wt->rank() != 2) return std::nullopt;
    if (call->TensorNode("bias") == nullptr && !call->IsNone("bias")) {
      return std::nullopt;
    }
    f.input = call->TensorNode("input");
    f.weight = call->TensorNode("weight");
    f.bias = call->TensorNode("bias");
    f.layout = "out_in";
    f.replaced.push_back(in);
    return f;
  }
  if (in->is_call("matmul")) {
    if (!MatchMatmul(in, act, f)) return std::nullopt;
    return f;
  }
  if (in->is_call("add") && in->num_args() == 2 && in->kwargs().empty() &&
      in->arg(0).is_node() && in->arg(1).is_node()) {
    // add(matmul, bias) or add(bias, matmul); bias a vector of the result's
    // dtype and last dim, so the add neither broadcasts up nor promotes.
    for (int side = 0; side < 2; ++side) {
      Node* mm = in->arg(side).node();
      Node* bias = in->arg(1 - side).node();
      if (mm == bias) continue;
      Fusion candidate;
      if (!MatchMatmul(mm, in, candidate)) continue;
      std::optional<TensorType> bt = KnownType(*bias);
      std::optional<TensorType> mt = KnownType(*mm);
      if (!bt.has_value() || !mt.has_value() || bt->rank() != 1 ||
          mt->rank() == 0 || bt->dtype != mt->dtype ||
          bt->shape[0] != mt->shape.back() || KnownType(*in) != mt) {
        continue;
      }
      candidate.bias = bias;
      candidate.replaced.push_back(in);
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<bool> FuseLinearActivationPass::Run(Module& module,
                                                   PassContext& ctx) {
  Graph& graph = module.graph();
  bool changed = false;
  for (Node* act : graph.nodes()) {
    if (!act->is_call("relu") && !act->is_call("gelu")) continue;
    absl::StatusOr<OpCall> call = OpCall::Bind(*act);
    if (!call.ok()) continue;
    std::optional<std::string> activation = ActivationOf(*act, *call);
    if (!activation.has_value()) continue;
    std::optional<Fusion> f = MatchProducer(call->TensorNode("input"), act);
    if (!f.has_value() || f->input == nullptr) continue;
    std::optional<TensorType> want = KnownType(*act);
    if (!want.has_value()) continue;
    Node* fused;
    {
      auto guard = graph.InsertingBefore(act);
      fused = graph.CallFunction(
          kLinearActivationOp,
          {f->input, f->weight,
           f->bias == nullptr ? Argument() : Argument(f->bias), *activation,
           f->layout});
    }
    InferAndSetType(fused);
    if (fused->type() != want) {
      (void)graph.EraseNode(fused);
      continue;
    }
    f->replaced.push_back(act);
    ctx.RecordProvenance(fused, f->replaced);
    act->ReplaceAllUsesWith(fused);
    EraseIfDead(graph, act);
    changed = true;
  }
  return changed;
}

}  // namespace graft::passes
