#include "backends/fold_dequantized_weights.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/node.h"
#include "graph/op_registry.h"

namespace graft {
namespace {

// The operand a product reads its weight from.
bool ReadsAsWeight(const Node& user, const Node& value) {
  const char* name = nullptr;
  if (user.is_call("conv2d") || user.is_call("linear") ||
      user.is_call("graft::linear_activation")) {
    name = "weight";
  } else if (user.is_call("matmul")) {
    name = "other";
  } else {
    return false;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(user);
  return call.ok() && call->TensorNode(name) == &value && call->TensorNode("input") != &value;
}

// A module tensor's values, or a number's, one per channel (a single
// value applies to every channel); nullopt where the interpreter would
// refuse them (it then says why when the op runs).
std::optional<std::vector<double>> Params(const Module& module, const Argument& arg,
                                          int64_t channels, bool per_channel) {
  if (arg.is_number()) return std::vector<double>(channels, arg.number());
  if (!arg.is_node() || arg.node()->op() != OpCode::kGetAttr) return std::nullopt;
  const Tensor* t = module.FindTensor(arg.node()->target());
  if (t == nullptr || !t->on_host()) return std::nullopt;
  if (t->NumElements() == 1) return std::vector<double>(channels, t->GetAsDouble(0));
  if (!per_channel || t->rank() > 1 || t->NumElements() != channels) return std::nullopt;
  return t->ToDoubles();
}

// The folded values of `dequantize`, or nullopt where it is not a
// dequantize of constants that the interpreter would run.
std::optional<Tensor> Folded(const Module& module, const Node& dequantize) {
  absl::StatusOr<OpCall> call = OpCall::Bind(dequantize);
  if (!call.ok() || call->GetDType("dtype") != DType::kF32) return std::nullopt;
  const Node* input = call->TensorNode("input");
  if (input == nullptr || input->op() != OpCode::kGetAttr) return std::nullopt;
  const Tensor* q = module.FindTensor(input->target());
  if (q == nullptr || !q->on_host() || (!IsInteger(q->dtype()) && !IsFloat8(q->dtype()))) {
    return std::nullopt;
  }
  int64_t outer = 1, channels = 1, inner = q->NumElements();
  const bool per_channel = !call->IsNone("axis");
  if (per_channel) {
    int64_t axis = call->Int("axis");
    if (axis < 0) axis += q->rank();
    if (axis < 0 || axis >= q->rank()) return std::nullopt;
    channels = q->dim(axis);
    inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= q->dim(d);
    for (int64_t d = axis + 1; d < q->rank(); ++d) inner *= q->dim(d);
  }
  const std::optional<std::vector<double>> scales =
      Params(module, call->Get("scale"), channels, per_channel);
  const std::optional<std::vector<double>> zero_points =
      Params(module, call->Get("zero_point"), channels, per_channel);
  if (!scales || !zero_points) return std::nullopt;
  Tensor out(DType::kF32, q->dims());
  float* values = out.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * channels + c) * inner + i;
        values[at] = static_cast<float>((q->GetAsDouble(at) - (*zero_points)[c]) * (*scales)[c]);
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<bool> FoldDequantizedWeights(Module& module) {
  Graph& graph = module.graph();
  std::vector<Node*> weights;
  for (Node* node : graph.nodes()) {
    if (!node->is_call("dequantize") || node->num_uses() == 0) continue;
    bool only_weights = true;
    for (const Node* user : node->users()) only_weights &= ReadsAsWeight(*user, *node);
    if (only_weights) weights.push_back(node);
  }
  bool changed = false;
  for (Node* dequantize : weights) {
    std::optional<Tensor> values = Folded(module, *dequantize);
    if (!values.has_value()) continue;
    const Node* source = dequantize->inputs()[0];
    const std::string name = module.UniqueTensorName(source->target() + "_dequantized");
    const TensorType type = values->type();
    module.SetTensor(name, *std::move(values));
    Node* replacement;
    {
      auto at = graph.InsertingBefore(dequantize);
      replacement = graph.GetAttr(name, type);
    }
    std::vector<Node*> inputs = dequantize->unique_inputs();
    dequantize->ReplaceAllUsesWith(replacement);
    if (!graph.EraseNode(dequantize).ok()) {
      return absl::InternalError("folding a dequantized weight left users behind");
    }
    for (Node* in : inputs) {
      if (in->op() == OpCode::kGetAttr && in->num_uses() == 0) (void)graph.EraseNode(in);
    }
    changed = true;
  }
  return changed;
}

}  // namespace graft
