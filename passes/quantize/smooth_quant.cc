#include "passes/quantize/smooth_quant.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/fused_ops.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/node_util.h"
#include "passes/quantize/convert.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

// Smoothing beyond these factors only moves rounding error around.
constexpr double kMinFactor = 1e-5;
constexpr double kMaxFactor = 1e5;

// A call SmoothQuant can smooth: it reads `activation` (channels on the
// last dim) times a constant f32 `weight` that no other node reads, whose
// input channels run along `weight_axis`.
struct Smoothable {
  Node* call = nullptr;
  Node* activation = nullptr;
  const Node* weight = nullptr;
  int64_t weight_axis = 0;
};

int64_t WeightInputAxis(const Node& call, int64_t weight_rank) {
  if (call.is_call("matmul")) return weight_rank - 2;
  if (call.target() == kLinearActivationOp) {
    absl::StatusOr<OpCall> bound = OpCall::Bind(call);
    if (bound.ok() && bound->String("weight_layout") == "in_out") return 0;
  }
  return 1;
}

std::optional<Smoothable> AsSmoothable(const Module& module, const QuantConfig& config, Node* n) {
  if (!(n->is_call("linear") || n->is_call("matmul") || n->target() == kLinearActivationOp) ||
      !config.Quantizes(*n)) {
    return std::nullopt;
  }
  absl::StatusOr<OpCall> bound = OpCall::Bind(*n);
  if (!bound.ok()) return std::nullopt;
  Node* activation = bound->TensorNode("input");
  const Node* weight = WeightNode(*n);
  const Tensor* w = PrivateConstant(module, weight);
  if (activation == nullptr || w == nullptr || w->dtype() != DType::kF32 || w->rank() < 2 ||
      !activation->type().has_value() || activation->type()->rank() < 1 ||
      activation->type()->dtype != DType::kF32) {
    return std::nullopt;
  }
  const int64_t axis = WeightInputAxis(*n, w->rank());
  const Dim channels = activation->type()->shape.back();
  if (!channels.is_constant() || channels.value() != w->dim(static_cast<int>(axis))) {
    return std::nullopt;
  }
  return Smoothable{n, activation, weight, axis};
}

// Calls `f(index, channel)` for every element of a tensor of `dims`, with
// the element's index along `axis`.
template <typename F>
void ForEachAlong(const std::vector<int64_t>& dims, int64_t axis, F f) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t len = dims[axis];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < len; ++c) {
      for (int64_t i = 0; i < inner; ++i) f((o * len + c) * inner + i, c);
    }
  }
}

// Divides the activation's channels by `factors` in the layer_norm that
// makes it, when every reader of it is smoothed and the norm's weight and
// bias are its own f32 constants of the channel count.
bool FoldIntoLayerNorm(Module& module, Node* activation, const std::vector<Smoothable>& calls,
                       const std::vector<double>& factors) {
  if (!activation->is_call("layer_norm") ||
      activation->num_uses() != calls.size()) {
    return false;
  }
  absl::StatusOr<OpCall> bound = OpCall::Bind(*activation);
  if (!bound.ok()) return false;
  const Node* nodes[2] = {bound->TensorNode("weight"), bound->TensorNode("bias")};
  for (const Node* p : nodes) {
    const Tensor* t = PrivateConstant(module, p);
    if (t == nullptr || t->dtype() != DType::kF32 || t->rank() != 1 ||
        t->dim(0) != static_cast<int64_t>(factors.size())) {
      return false;
    }
  }
  for (const Node* p : nodes) {
    Tensor t = module.FindTensor(p->target())->Clone();
    for (size_t j = 0; j < factors.size(); ++j) t.data<float>()[j] /= factors[j];
    module.SetTensor(p->target(), t);
  }
  return true;
}

// Divides the activation's channels by `factors` in the linear that makes
// it (through a ReLU, which commutes with positive factors), when every
// reader of it is smoothed and the linear's weight and bias are its own.
bool FoldIntoProducer(Module& module, Node* activation, const std::vector<Smoothable>& calls,
                      const std::vector<double>& factors) {
  if (activation->num_uses() != calls.size()) return false;
  Node* producer = activation;
  if (activation->is_call("relu")) {
    absl::StatusOr<OpCall> relu = OpCall::Bind(*activation);
    producer = relu.ok() ? relu->TensorNode("input") : nullptr;
    if (producer == nullptr || producer->num_uses() != 1) return false;
  }
  if (!producer->is_call("linear")) return false;
  absl::StatusOr<OpCall> bound = OpCall::Bind(*producer);
  if (!bound.ok()) return false;
  const int64_t channels = static_cast<int64_t>(factors.size());
  const Node* weight = bound->TensorNode("weight");
  const Tensor* w = PrivateConstant(module, weight);
  if (w == nullptr || w->dtype() != DType::kF32 || w->rank() != 2 || w->dim(0) != channels) {
    return false;
  }
  const Node* bias = bound->IsNone("bias") ? nullptr : bound->TensorNode("bias");
  const Tensor* b = bias == nullptr ? nullptr : PrivateConstant(module, bias);
  if (!bound->IsNone("bias") &&
      (b == nullptr || b->dtype() != DType::kF32 || b->NumElements() != channels)) {
    return false;
  }
  Tensor scaled = w->Clone();
  ForEachAlong(scaled.dims(), 0, [&](int64_t i, int64_t o) {
    scaled.data<float>()[i] = static_cast<float>(scaled.data<float>()[i] / factors[o]);
  });
  module.SetTensor(weight->target(), scaled);
  if (b != nullptr) {
    Tensor shifted = b->Clone();
    for (int64_t o = 0; o < channels; ++o) {
      shifted.data<float>()[o] = static_cast<float>(shifted.data<float>()[o] / factors[o]);
    }
    module.SetTensor(bias->target(), shifted);
  }
  return true;
}

// Divides the activation by `factors` for the smoothed calls only, through
// a new mul before the first of them.
void InsertScale(Module& module, Node* activation, const std::vector<Smoothable>& calls,
                 const std::vector<double>& factors) {
  Graph& graph = module.graph();
  Node* first = calls.front().call;  // The calls are in graph order.
  Tensor inverse(DType::kF32, {static_cast<int64_t>(factors.size())});
  for (size_t j = 0; j < factors.size(); ++j) {
    inverse.data<float>()[j] = static_cast<float>(1.0 / factors[j]);
  }
  const std::string name = module.UniqueTensorName(activation->name() + "_smooth");
  module.SetTensor(name, inverse);
  auto at = graph.InsertingBefore(first);
  Node* scale = graph.GetAttr(name, inverse.type());
  Node* scaled = graph.CallFunction("mul", {Argument(activation), Argument(scale)});
  InferAndSetType(scaled);
  for (const Smoothable& s : calls) s.call->ReplaceInputWith(activation, scaled);
}

}  // namespace

std::vector<std::string> SmoothableActivations(const Module& module, const QuantConfig& config) {
  std::vector<std::string> names;
  absl::flat_hash_set<const Node*> seen;
  for (Node* n : module.graph().nodes()) {
    std::optional<Smoothable> s = AsSmoothable(module, config, n);
    if (s.has_value() && seen.insert(s->activation).second) names.push_back(s->activation->name());
  }
  return names;
}

absl::StatusOr<SmoothQuantReport> SmoothQuant(
    Module& module, const QuantConfig& config,
    const std::map<std::string, std::vector<double>>& abs_max, double alpha) {
  if (!(alpha >= 0.0 && alpha <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SmoothQuant's alpha must be in [0, 1], got ", alpha));
  }
  RETURN_IF_ERROR(config.Validate());
  RETURN_IF_ERROR(PropagateShapes(module).status());
  // The smoothable calls, grouped by the activation they read, in order.
  std::vector<Node*> order;
  absl::flat_hash_map<Node*, std::vector<Smoothable>> groups;
  for (Node* n : module.graph().nodes()) {
    std::optional<Smoothable> s = AsSmoothable(module, config, n);
    if (!s.has_value()) continue;
    if (!groups.contains(s->activation)) order.push_back(s->activation);
    groups[s->activation].push_back(*s);
  }
  SmoothQuantReport report;
  for (Node* activation : order) {
    const std::vector<Smoothable>& calls = groups[activation];
    auto stats = abs_max.find(activation->name());
    const int64_t channels = activation->type()->shape.back().value();
    if (stats == abs_max.end() || static_cast<int64_t>(stats->second.size()) != channels) continue;
    std::vector<double> weight_max(channels, 0.0);
    for (const Smoothable& s : calls) {
      const Tensor* w = module.FindTensor(s.weight->target());
      const float* data = w->data<float>();
      ForEachAlong(w->dims(), s.weight_axis, [&](int64_t i, int64_t j) {
        if (std::isfinite(data[i])) weight_max[j] = std::max(weight_max[j], std::fabs(double{data[i]}));
      });
    }
    std::vector<double> factors(channels, 1.0);
    for (int64_t j = 0; j < channels; ++j) {
      const double a = stats->second[j], w = weight_max[j];
      if (a > 0 && w > 0 && std::isfinite(a) && std::isfinite(w)) {
        factors[j] = std::clamp(std::pow(a, alpha) / std::pow(w, 1.0 - alpha), kMinFactor, kMaxFactor);
      }
    }
    for (const Smoothable& s : calls) {
      Tensor w = module.FindTensor(s.weight->target())->Clone();
      float* data = w.data<float>();
      ForEachAlong(w.dims(), s.weight_axis,
                   [&](int64_t i, int64_t j) { data[i] = static_cast<float>(data[i] * factors[j]); });
      module.SetTensor(s.weight->target(), w);
    }
    std::string how;
    if (FoldIntoLayerNorm(module, activation, calls, factors)) {
      how = "folded into the layer_norm";
      ++report.folded;
    } else if (FoldIntoProducer(module, activation, calls, factors)) {
      how = "folded into the linear before";
      ++report.folded;
    } else {
      InsertScale(module, activation, calls, factors);
      how = "mul";
      ++report.inserted;
    }
    std::vector<std::string> names;
    for (const Smoothable& s : calls) names.push_back(s.call->name());
    report.smoothed.push_back(
        absl::StrCat(activation->name(), " -> ", absl::StrJoin(names, ", "), " (", how, ")"));
  }
  RETURN_IF_ERROR(PropagateShapes(module).status());
  return report;
}

}  // namespace graft::passes::quantize
