#include "passes/fold_batchnorm.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"

namespace graft::passes {
namespace {

// A per-channel vector of C elements, or the default when absent.
std::optional<std::vector<double>> ChannelVector(const Module& module,
                                                 Node* node, int64_t channels,
                                                 double fallback) {
  if (node == nullptr) return std::vector<double>(channels, fallback);
  const Tensor* t = AttrTensor(module, node);
  if (t == nullptr || t->rank() != 1 || t->NumElements() != channels) {
    return std::nullopt;
  }
  return t->ToDoubles();
}

// What folding one batch_norm into its producer needs.
struct FoldPlan {
  Node* producer;  // The conv2d or linear.
  const Tensor* weight;
  std::vector<double> bias, mean, var, gamma, beta;
  double eps;
};

// The plan for `bn`, or nullopt when it cannot be folded.
std::optional<FoldPlan> Plan(const Module& module, Node* bn) {
  absl::StatusOr<OpCall> call = OpCall::Bind(*bn);
  if (!call.ok()) return std::nullopt;
  Node* producer = call->TensorNode("input");
  if (producer == nullptr || producer->users().size() != 1 ||
      producer->num_uses() != 1) {
    return std::nullopt;
  }
  const bool is_conv = producer->is_call("conv2d");
  if (!is_conv && !producer->is_call("linear")) return std::nullopt;
  absl::StatusOr<OpCall> pcall = OpCall::Bind(*producer);
  if (!pcall.ok()) return std::nullopt;
  const Tensor* weight = AttrTensor(module, pcall->TensorNode("weight"));
  if (weight == nullptr || !IsFloatingPoint(weight->dtype()))
    return std::nullopt;
  if (is_conv) {
    if (weight->rank() != 4) return std::nullopt;
  } else {
    // batch_norm's channels are dim 1: the features only for a 2-D result.
    std::optional<TensorType> out = KnownType(*producer);
    if (weight->rank() != 2 || !out.has_value() || out->rank() != 2) {
      return std::nullopt;
    }
  }
  const int64_t channels = weight->dim(0);
  Node* bias_node = pcall->TensorNode("bias");
  if (bias_node == nullptr && !pcall->IsNone("bias")) return std::nullopt;
  auto bias = ChannelVector(module, bias_node, channels, 0.0);
  Node* mean_node = call->TensorNode("running_mean");
  Node* var_node = call->TensorNode("running_var");
  if (mean_node == nullptr || var_node == nullptr) return std::nullopt;
  auto mean = ChannelVector(module, mean_node, channels, 0.0);
  auto var = ChannelVector(module, var_node, channels, 1.0);
  auto gamma = ChannelVector(module, call->TensorNode("weight"), channels, 1.0);
  auto beta = ChannelVector(module, call->TensorNode("bias"), channels, 0.0);
  // A literal where a tensor belongs is not ours to interpret.
  for (const char* p : {"weight", "bias"}) {
    if (call->TensorNode(p) == nullptr && !call->IsNone(p)) return std::nullopt;
  }
  if (!bias || !mean || !var || !gamma || !beta) return std::nullopt;
  return FoldPlan{producer, weight, *bias, *mean,
                  *var,     *gamma, *beta, call->Float("eps")};
}

// Applies the plan: new weight and bias tensors and a new producer call.
Node* Fold(Module& module, Node* bn, const FoldPlan& plan,
           const PassContext& ctx) {
  const Tensor& w = *plan.weight;
  const int64_t channels = w.dim(0);
  const int64_t per_channel = channels == 0 ? 0 : w.NumElements() / channels;
  Tensor new_w(w.dtype(), w.dims());
  Tensor new_b(w.dtype(), {channels});
  for (int64_t c = 0; c < channels; ++c) {
    const double scale = plan.gamma[c] / std::sqrt(plan.var[c] + plan.eps);
    for (int64_t i = 0; i < per_channel; ++i) {
      const int64_t k = c * per_channel + i;
      new_w.SetFromDouble(k, w.GetAsDouble(k) * scale);
    }
    new_b.SetFromDouble(c,
                        (plan.bias[c] - plan.mean[c]) * scale + plan.beta[c]);
  }
  Node* producer = plan.producer;
  const std::string base = producer->name();
  const std::string w_name = module.UniqueTensorName(base + "_folded_weight");
  module.SetTensor(w_name, new_w);
  const std::string b_name = module.UniqueTensorName(base + "_folded_bias");
  module.SetTensor(b_name, new_b);

  Graph& graph = module.graph();
  auto guard = graph.InsertingBefore(bn);
  Node* w_node = graph.GetAttr(w_name, new_w.type());
  Node* b_node = graph.GetAttr(b_name, new_b.type());
  CallOperands operands = OperandsOf(*producer);
  SetParam(*producer->schema(), operands, "weight", Argument(w_node));
  SetParam(*producer->schema(), operands, "bias", Argument(b_node));
  Node* folded = graph.CallFunction(
      producer->target(), std::move(operands.args), std::move(operands.kwargs));
  InferAndSetType(folded);
  for (Node* n : {w_node, b_node, folded})
    ctx.RecordProvenance(n, {producer, bn});
  return folded;
}

}  // namespace

absl::StatusOr<bool> FoldBatchNormPass::Run(Module& module, PassContext& ctx) {
  Graph& graph = module.graph();
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!node->is_call("batch_norm")) continue;
    std::optional<FoldPlan> plan = Plan(module, node);
    if (!plan.has_value()) continue;
    Node* folded = Fold(module, node, *plan, ctx);
    node->ReplaceAllUsesWith(folded);
    EraseIfDead(graph, node);
    changed = true;
  }
  return changed;
}

}  // namespace graft::passes
