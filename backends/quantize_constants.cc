#include "backends/quantize_constants.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"

namespace graft {
namespace {

// The module tensor behind argument `name` of `call`, if it is one.
const Tensor* ConstantArg(const Module& module, const OpCall& call, absl::string_view name) {
  if (call.schema().ParamIndex(name) < 0 || call.IsNone(name)) return nullptr;
  const Argument& a = call.Get(name);
  if (!a.is_node() || a.node()->op() != OpCode::kGetAttr) return nullptr;
  auto it = module.tensors().find(a.node()->target());
  return it == module.tensors().end() ? nullptr : &it->second.value;
}

absl::Status Bad(const Node& node, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("%", node.name(), " (", node.target(), "): ", what));
}

absl::Status CheckScales(const Node& node, const Tensor& scales, absl::string_view name) {
  for (int64_t c = 0; c < scales.NumElements(); ++c) {
    const double v = scales.GetAsDouble(c);
    if (!(v > 0) || !std::isfinite(v)) {
      return Bad(node, absl::StrCat(name, "[", c, "] must be positive and finite, got ", v));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckZeroPoints(const Node& node, const Tensor& zero_points, DType quantized,
                             absl::string_view name) {
  const bool f8 = IsFloat8(quantized);
  const double lo = quantized == DType::kU8 ? 0 : f8 ? 0 : -128;
  const double hi = quantized == DType::kU8 ? 255 : f8 ? 0 : 127;
  for (int64_t c = 0; c < zero_points.NumElements(); ++c) {
    const double v = zero_points.GetAsDouble(c);
    if (!(v >= lo && v <= hi)) {
      return Bad(node, absl::StrCat(name, "[", c, "] ", v, " is out of range for ",
                                    DTypeName(quantized), " [", lo, ", ", hi, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNode(const Module& module, const Node& node) {
  const bool per_channel = node.is_call("quantize_per_channel");
  const bool dequantize = node.is_call("dequantize");
  const bool product = node.is_call(kQuantizedLinearOp) || node.is_call(kQuantizedConv2dOp);
  if (!per_channel && !dequantize && !product) return absl::OkStatus();
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok()) return absl::OkStatus();  // Type inference reports it.
  if (product) {
    const Tensor* scales = ConstantArg(module, *call, "weight_scales");
    return scales == nullptr ? absl::OkStatus() : CheckScales(node, *scales, "weight_scales");
  }
  // The quantized side: quantize's result, dequantize's input.
  std::optional<DType> quantized;
  if (per_channel) {
    quantized = call->GetDType("dtype");
  } else if (const Node* input = call->TensorNode("input");
             input != nullptr && input->type().has_value()) {
    quantized = input->type()->dtype;
  }
  const Tensor* scales = ConstantArg(module, *call, per_channel ? "scales" : "scale");
  if (scales != nullptr) RETURN_IF_ERROR(CheckScales(node, *scales, per_channel ? "scales" : "scale"));
  const Tensor* zero_points =
      ConstantArg(module, *call, per_channel ? "zero_points" : "zero_point");
  if (zero_points != nullptr && quantized.has_value()) {
    RETURN_IF_ERROR(CheckZeroPoints(node, *zero_points, *quantized,
                                    per_channel ? "zero_points" : "zero_point"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckQuantizeConstants(const Module& module) {
  for (const Node* node : module.graph().nodes()) {
    if (node->op() != OpCode::kCallFunction) continue;
    RETURN_IF_ERROR(CheckNode(module, *node));
  }
  return absl::OkStatus();
}

}  // namespace graft
