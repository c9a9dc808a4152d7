#include "passes/quantize/convert.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/fused_ops.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "passes/node_util.h"
#include "passes/pass_context.h"
#include "passes/quantize/range_observer.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::passes::quantize {
namespace {

constexpr double kMinScale = 1e-12;

struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit SplitAt(const Tensor& t, int64_t axis) {
  AxisSplit s;
  if (axis < 0) {
    s.inner = t.NumElements();
    return s;
  }
  for (int64_t d = 0; d < axis; ++d) s.outer *= t.dim(d);
  s.len = t.dim(axis);
  for (int64_t d = axis + 1; d < t.rank(); ++d) s.inner *= t.dim(d);
  return s;
}

}  // namespace

QuantizedWeight QuantizeWeight(const Tensor& weight, int64_t axis, DType dtype) {
  QuantizedWeight q;
  q.axis = axis;
  const AxisSplit s = SplitAt(weight, axis);
  const std::vector<double> w = weight.ToDoubles();
  std::vector<double> magnitude(s.len, 0.0);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.len; ++c) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const double x = w[(o * s.len + c) * s.inner + i];
        if (std::isfinite(x)) magnitude[c] = std::max(magnitude[c], std::fabs(x));
      }
    }
  }
  const bool float8 = IsFloat8(dtype);
  const double largest = float8 ? kFloat8E4M3Max : 127.0;
  for (double m : magnitude) q.scales.push_back(std::max(m / largest, kMinScale));
  if (float8) {
    q.values = Tensor(dtype, weight.dims());
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t c = 0; c < s.len; ++c) {
        for (int64_t i = 0; i < s.inner; ++i) {
          const int64_t at = (o * s.len + c) * s.inner + i;
          const double r = w[at] / q.scales[c];
          q.values.SetFromDouble(at, std::isnan(r) ? 0.0 : std::clamp(r, -largest, largest));
        }
      }
    }
    return q;
  }
  q.values = Tensor(DType::kI8, weight.dims());
  int8_t* out = q.values.data<int8_t>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.len; ++c) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t at = (o * s.len + c) * s.inner + i;
        const double r = std::nearbyint(w[at] / q.scales[c]);
        out[at] = static_cast<int8_t>(std::isnan(r) ? 0 : std::clamp(r, -127.0, 127.0));
      }
    }
  }
  return q;
}

Tensor DequantizeWeight(const QuantizedWeight& weight) {
  Tensor out(DType::kF32, weight.values.dims());
  const AxisSplit s = SplitAt(weight.values, weight.axis);
  float* dst = out.data<float>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t c = 0; c < s.len; ++c) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t at = (o * s.len + c) * s.inner + i;
        dst[at] = static_cast<float>(weight.values.GetAsDouble(at) * weight.scales[c]);
      }
    }
  }
  return out;
}

const Node* WeightNode(const Node& call) {
  absl::StatusOr<OpCall> bound = OpCall::Bind(call);
  if (!bound.ok()) return nullptr;
  const char* param = call.is_call("matmul") ? "other" : "weight";
  if (bound->schema().ParamIndex(param) < 0) return nullptr;
  const Node* w = bound->TensorNode(param);
  return w != nullptr && w->op() == OpCode::kGetAttr ? w : nullptr;
}

int64_t WeightAxis(const Node& call) {
  const Node* w = WeightNode(call);
  if (w == nullptr || !w->type().has_value()) return -1;
  if (call.is_call("matmul")) return w->type()->rank() - 1;
  if (call.target() == kLinearActivationOp) {
    absl::StatusOr<OpCall> bound = OpCall::Bind(call);
    if (bound.ok() && bound->String("weight_layout") == "in_out") return 1;
  }
  return 0;
}

namespace {

class Converter {
 public:
  Converter(Module& module, const QuantConfig& config, const InputMeans* means)
      : module_(module), config_(config), means_(means) {}

  absl::StatusOr<ConvertReport> Run() {
    RETURN_IF_ERROR(config_.Validate());
    RETURN_IF_ERROR(PropagateShapes(module_).status());
    // The calls to quantize: those the config names that Prepare observed.
    std::vector<Node*> observers, calls;
    for (Node* n : module_.graph().nodes()) {
      if (n->is_call(kObserveOp)) observers.push_back(n);
      if (config_.Quantizes(*n) && Observed(*n)) {
        calls.push_back(n);
        quantized_.insert(n);
      }
    }
    for (Node* o : observers) RETURN_IF_ERROR(Lower(o));
    for (Node* n : calls) {
      RETURN_IF_ERROR(QuantizeWeightOf(n));
      report_.quantized.push_back(n->name());
    }
    DropFloatWeights();
    RETURN_IF_ERROR(PropagateShapes(module_).status());
    return report_;
  }

 private:
  // Prepared: reads through an observer.
  static bool Observed(const Node& n) {
    for (const Node* input : n.inputs()) {
      if (input->is_call(kObserveOp)) return true;
    }
    return false;
  }

  // An observer becomes quantize -> dequantize for the calls that read
  // quantized values, and disappears for the others.
  absl::Status Lower(Node* observer) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(*observer));
    Node* value = call.TensorNode("input");
    if (!value->type().has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(observer->Ref(), " observes ", value->Ref(), ", whose type is unknown"));
    }
    if (call.IsNone("scale") || call.IsNone("zero_point")) {
      return absl::FailedPreconditionError(absl::StrCat(
          observer->Ref(), " (observing ", value->Ref(),
          ") has no scale: calibrate the prepared model first (graft quantize)"));
    }
    // Only the quantized calls read the quantized value; every other reader
    // (a call kept float, a bias add) reads the float one.
    Graph& graph = module_.graph();
    Node* dequantized = nullptr;
    for (Node* user : observer->users()) {
      if (!quantized_.contains(user)) continue;
      if (dequantized == nullptr) {
        auto at = graph.InsertingAfter(observer);
        Node* q = graph.CallFunction(
            "quantize_per_tensor", {Argument(value), Argument(call.Float("scale")),
                                    Argument(call.Int("zero_point")),
                                    Argument(call.GetDType("dtype"))});
        InferAndSetType(q);
        dequantized = graph.CallFunction(
            "dequantize", {Argument(q), Argument(call.Float("scale")),
                           Argument(call.Int("zero_point"))},
            {{"dtype", Argument(value->type()->dtype)}});
        InferAndSetType(dequantized);
        ++report_.quantize_ops;
      }
      user->ReplaceInputWith(observer, dequantized);
    }
    observer->ReplaceAllUsesWith(value);
    return graph.EraseNode(observer);
  }

  // The call's constant weight, stored as int8 and dequantized where read.
  absl::Status QuantizeWeightOf(Node* n) {
    const Node* w = WeightNode(*n);
    const Tensor* tensor = AttrTensor(module_, w);
    if (w == nullptr || tensor == nullptr || !IsFloatingPoint(tensor->dtype())) {
      return absl::OkStatus();
    }
    const int64_t axis = config_.per_channel_weights ? WeightAxis(*n) : -1;
    auto key = std::make_pair(w->target(), axis);
    auto cached = weights_.find(key);
    Node* dequantized;
    if (cached != weights_.end()) {
      dequantized = cached->second;
    } else {
      const QuantizedWeight q = QuantizeWeight(*tensor, axis, config_.weight_dtype);
      Graph& graph = module_.graph();
      auto at = graph.InsertingBefore(n);
      const std::string base = w->target();
      const std::string values =
          module_.UniqueTensorName(base + (IsFloat8(config_.weight_dtype) ? "_f8" : "_int8"));
      module_.SetTensor(values, q.values);
      Node* stored = graph.GetAttr(values, q.values.type());
      if (axis < 0) {
        dequantized = graph.CallFunction("dequantize", {Argument(stored), Argument(q.scales[0]),
                                                        Argument(int64_t{0})},
                                         {{"dtype", Argument(tensor->dtype())}});
      } else {
        Tensor scales(DType::kF32, {static_cast<int64_t>(q.scales.size())});
        for (size_t c = 0; c < q.scales.size(); ++c) {
          scales.data<float>()[c] = static_cast<float>(q.scales[c]);
        }
        Tensor zero_points(DType::kI64, {static_cast<int64_t>(q.scales.size())});
        std::fill_n(zero_points.data<int64_t>(), q.scales.size(), 0);
        const std::string scales_name = module_.UniqueTensorName(base + "_scales");
        module_.SetTensor(scales_name, scales);
        const std::string zeros_name = module_.UniqueTensorName(base + "_zero_points");
        module_.SetTensor(zeros_name, zero_points);
        dequantized = graph.CallFunction(
            "dequantize",
            {Argument(stored), Argument(graph.GetAttr(scales_name, scales.type())),
             Argument(graph.GetAttr(zeros_name, zero_points.type()))},
            {{"axis", Argument(axis)}, {"dtype", Argument(tensor->dtype())}});
      }
      InferAndSetType(dequantized);
      weights_[key] = dequantized;
    }
    if (means_ != nullptr) {
      auto mean = means_->find(n->name());
      if (mean != means_->end()) {
        RETURN_IF_ERROR(CorrectBias(n, *tensor,
                                    QuantizeWeight(*tensor, axis, config_.weight_dtype),
                                    mean->second));
      }
    }
    Node* float_weight = const_cast<Node*>(w);
    n->ReplaceInputWith(float_weight, dequantized);
    replaced_.push_back(float_weight);
    return absl::OkStatus();
  }

  // The mean shift of each output channel that the weight's rounding
  // error `error` (the weight's dims) makes, given the input channels'
  // means; empty when the call's layout is not one this knows.
  std::vector<double> MeanShift(const Node& n, const Tensor& error,
                                const std::vector<double>& mean) const {
    const std::vector<double> e = error.ToDoubles();
    const int64_t in = static_cast<int64_t>(mean.size());
    std::vector<double> shift;
    if (n.is_call("conv2d") && error.rank() == 4) {
      absl::StatusOr<OpCall> bound = OpCall::Bind(n);
      const int64_t out = error.dim(0), per_group = error.dim(1);
      const int64_t window = error.dim(2) * error.dim(3);
      const int64_t groups = bound.ok() ? bound->Int("groups") : 1;
      if (groups <= 0 || per_group * groups != in || out % groups != 0) return {};
      shift.assign(out, 0.0);
      for (int64_t o = 0; o < out; ++o) {
        const int64_t first = (o / (out / groups)) * per_group;
        for (int64_t c = 0; c < per_group; ++c) {
          for (int64_t k = 0; k < window; ++k) {
            shift[o] += e[(o * per_group + c) * window + k] * mean[first + c];
          }
        }
      }
      return shift;
    }
    if (error.rank() != 2) return {};
    // matmul's [in, out] weight, or graft::linear_activation's in_out one.
    const bool in_out = n.is_call("matmul") || WeightAxis(n) == 1;
    const int64_t out = in_out ? error.dim(1) : error.dim(0);
    if ((in_out ? error.dim(0) : error.dim(1)) != in) return {};
    shift.assign(out, 0.0);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) shift[o] += e[in_out ? i * out + o : o * in + i] * mean[i];
    }
    return shift;
  }

  // The constant f32 vector of `out` elements that `add` adds to
  // `product`, or null.
  Node* BiasOfAdd(const Node& add, const Node& product, int64_t out) const {
    absl::StatusOr<OpCall> bound = OpCall::Bind(add);
    if (!bound.ok()) return nullptr;
    for (const char* param : {"input", "other"}) {
      Node* operand = bound->TensorNode(param);
      const Tensor* t = AttrTensor(module_, operand);
      if (operand != &product && t != nullptr && t->dtype() == DType::kF32 && t->rank() == 1 &&
          t->NumElements() == out) {
        return operand;
      }
    }
    return nullptr;
  }

  // Subtracts from `n`'s bias (or, for a matmul, from the constant an add
  // after it adds) the mean shift its quantized weight makes.
  absl::Status CorrectBias(Node* n, const Tensor& weight, const QuantizedWeight& q,
                           const std::vector<double>& mean) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(*n));
    // f32 layers only: a bias of another dtype (or a new f32 one beside
    // bf16 values) would not fit the call.
    if (weight.dtype() != DType::kF32 || !n->type().has_value() ||
        n->type()->dtype != DType::kF32) {
      return absl::OkStatus();
    }
    Node* target = n;  // The call whose bias takes the correction.
    if (call.schema().ParamIndex("bias") < 0) {
      // matmul: the constant that an add after it adds (ONNX's MatMul, Add).
      target = SoleUser(*n);
      if (target == nullptr || !target->is_call("add")) return absl::OkStatus();
    }
    Tensor error = DequantizeWeight(q);
    const std::vector<double> w = weight.ToDoubles();
    for (int64_t i = 0; i < error.NumElements(); ++i) {
      error.data<float>()[i] = static_cast<float>(error.data<float>()[i] - w[i]);
    }
    const std::vector<double> shift = MeanShift(*n, error, mean);
    if (shift.empty()) return absl::OkStatus();
    const int64_t out = static_cast<int64_t>(shift.size());
    Tensor bias(DType::kF32, {out});
    Node* old = target == n ? call.TensorNode("bias") : BiasOfAdd(*target, *n, out);
    if (target != n && old == nullptr) return absl::OkStatus();
    if (old != nullptr) {
      const Tensor* t = AttrTensor(module_, old);
      if (t == nullptr || t->dtype() != DType::kF32 || t->NumElements() != out) {
        return absl::OkStatus();  // A computed bias: nothing to fold into.
      }
      std::copy_n(t->data<float>(), out, bias.data<float>());
    } else if (!call.IsNone("bias")) {
      return absl::OkStatus();
    }
    for (int64_t o = 0; o < out; ++o) {
      bias.data<float>()[o] = static_cast<float>(bias.data<float>()[o] - shift[o]);
    }
    // A tensor of its own: another call may share the old bias.
    const std::string name = module_.UniqueTensorName(n->name() + "_corrected_bias");
    module_.SetTensor(name, bias);
    auto at = module_.graph().InsertingBefore(n);
    Node* corrected = module_.graph().GetAttr(name, bias.type());
    if (old != nullptr) {
      target->ReplaceInputWith(old, corrected);
      replaced_.push_back(old);
    } else {
      CallOperands operands = WithParam(*n, "bias", Argument(corrected));
      n->SetArgs(std::move(operands.args));
      n->SetKwargs(std::move(operands.kwargs));
    }
    report_.bias_corrected.push_back(n->name());
    return absl::OkStatus();
  }

  // The float weights nothing reads any more, and their tensors; nothing
  // else of the model is touched.
  void DropFloatWeights() {
    Graph& graph = module_.graph();
    std::vector<std::string> tensors;
    for (Node* w : replaced_) {
      if (w->erased() || w->has_uses()) continue;
      tensors.push_back(w->target());
      (void)graph.EraseNode(w);
    }
    graph.Cleanup();
    absl::flat_hash_set<std::string> read;
    for (const Node* n : graph.nodes()) {
      if (n->op() == OpCode::kGetAttr) read.insert(n->target());
    }
    for (const std::string& tensor : tensors) {
      if (!read.contains(tensor)) module_.RemoveTensor(tensor);
    }
  }

  Module& module_;
  const QuantConfig& config_;
  const InputMeans* means_;
  ConvertReport report_;
  absl::flat_hash_map<std::pair<std::string, int64_t>, Node*> weights_;
  absl::flat_hash_set<const Node*> quantized_;
  std::vector<Node*> replaced_;  // Float weight get_attrs the calls stopped reading.
};

}  // namespace

absl::StatusOr<ConvertReport> Convert(Module& module, const QuantConfig& config,
                                      const InputMeans* bias_correction) {
  return Converter(module, config, bias_correction).Run();
}

absl::StatusOr<std::unique_ptr<ConvertPass>> ConvertPass::FromOptions(const PassOptions& options) {
  QuantConfig config;
  ReadOpsAndSkip(options, config);
  ASSIGN_OR_RETURN(bool per_tensor, options.GetBool("per-tensor", false));
  config.per_channel_weights = !per_tensor;
  const std::string weights = options.GetString("weights", "i8");
  if (weights != "i8" && weights != "f8e4m3") {
    return absl::InvalidArgumentError(
        absl::StrCat("quantize-convert{weights=", weights, "}: weights are i8 or f8e4m3"));
  }
  config.weight_dtype = weights == "f8e4m3" ? DType::kF8E4M3 : DType::kI8;
  return std::make_unique<ConvertPass>(std::move(config));
}

absl::StatusOr<bool> ConvertPass::Run(Module& module, PassContext&) {
  ASSIGN_OR_RETURN(ConvertReport report, Convert(module, config_));
  return !report.quantized.empty();
}

}  // namespace graft::passes::quantize
