// QuantizeLinear and DequantizeLinear: graft's quantize_per_tensor,
// quantize_per_channel and dequantize, which share ONNX's arithmetic
// (round half to even, saturate to the zero point's type). A model
// quantized in ONNX Runtime's QDQ format imports as the reference
// quantized graph graft's own quantization writes, so `quantize-lower`
// can fuse it into int8 products. Scales and zero points must be known at
// import time; int8 and uint8 only (no 16-bit, int4 or float8 types). A
// DequantizeLinear of a known int32 tensor (a quantized bias) is
// evaluated here.

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"
#include "onnx/onnx_tensor.h"

namespace graft::onnx_import {
namespace {

// What a QuantizeLinear/DequantizeLinear node's scale and zero point say.
struct QuantParams {
  const Tensor* scale = nullptr;
  const Tensor* zero_point = nullptr;  // Null when absent (0).
  DType quantized = DType::kU8;        // The zero point's type; uint8 without one.
  bool per_axis = false;
  int64_t axis = 1;
};

absl::StatusOr<QuantParams> ReadQuantParams(NodeContext& ctx, int64_t rank) {
  QuantParams p;
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 1));
  ASSIGN_OR_RETURN(int64_t block_size, ctx.attrs().Int("block_size", 0));
  if (block_size != 0) return NodeContext::Unsupported("blocked quantization (block_size) is not supported");
  p.scale = ctx.Constant(1);
  if (p.scale == nullptr) return NodeContext::Unsupported("the scale must be known at import time");
  if (ctx.HasInput(2)) {
    p.zero_point = ctx.Constant(2);
    if (p.zero_point == nullptr) return NodeContext::Unsupported("the zero point must be known at import time");
    p.quantized = p.zero_point->dtype();
  }
  if (p.quantized != DType::kI8 && p.quantized != DType::kU8) {
    return NodeContext::Unsupported(absl::StrCat(DTypeName(p.quantized),
                                                 " quantized values are not supported (int8 and uint8 are)"));
  }
  if (!IsFloatingPoint(p.scale->dtype())) {
    return NodeContext::Invalid(absl::StrCat("the scale ", p.scale->TypeString(), " must be floating point"));
  }
  p.per_axis = p.scale->rank() == 1 && p.scale->NumElements() != 1;
  if (p.scale->rank() > 1) {
    return NodeContext::Invalid(absl::StrCat("the scale ", p.scale->TypeString(), " must be a scalar or 1-D"));
  }
  if (p.zero_point != nullptr && p.zero_point->NumElements() != p.scale->NumElements()) {
    return NodeContext::Invalid(absl::StrCat("the zero point ", p.zero_point->TypeString(), " and the scale ",
                                             p.scale->TypeString(), " must have as many values"));
  }
  if (p.per_axis) {
    ASSIGN_OR_RETURN(p.axis, NormalizeAxis(axis, rank));
  }
  for (int64_t i = 0; i < p.scale->NumElements(); ++i) {
    const double s = p.scale->GetAsDouble(i);
    if (!(s > 0) || !std::isfinite(s)) {
      return NodeContext::Invalid(absl::StrCat("scale ", s, " must be positive and finite"));
    }
  }
  return p;
}

int64_t ZeroPointAt(const QuantParams& p, int64_t i) {
  return p.zero_point == nullptr ? 0 : static_cast<int64_t>(p.zero_point->GetAsDouble(i));
}

// scales and zero points as f32 and i64 vectors (the per-channel ops' operands).
absl::StatusOr<std::pair<Node*, Node*>> PerAxisOperands(NodeContext& ctx, const QuantParams& p) {
  const int64_t n = p.scale->NumElements();
  Tensor scales(DType::kF32, {n});
  std::vector<int64_t> zero_points(n);
  for (int64_t i = 0; i < n; ++i) {
    scales.SetFromDouble(i, p.scale->GetAsDouble(i));
    zero_points[i] = ZeroPointAt(p, i);
  }
  ASSIGN_OR_RETURN(Node * s, ctx.ConstantNode(std::move(scales), "scales"));
  ASSIGN_OR_RETURN(Node * z, I64Constant(ctx, {n}, zero_points, "zero_points"));
  return std::make_pair(s, z);
}

absl::Status ConvertQuantizeLinear(NodeContext& ctx) {
  ASSIGN_OR_RETURN(int64_t saturate, ctx.attrs().Int("saturate", 1));
  (void)saturate;  // Only float8 outputs read it.
  ASSIGN_OR_RETURN(std::optional<int64_t> output_dtype, ctx.attrs().OptionalInt("output_dtype"));
  if (output_dtype.has_value() && *output_dtype != 0) {
    return NodeContext::Unsupported("output_dtype is not supported; give the type by the zero point");
  }
  // Opset 23: the division's precision, the scale's type by default; graft
  // divides in f32 (FLOAT) or wider.
  ASSIGN_OR_RETURN(int64_t precision, ctx.attrs().Int("precision", 0));
  if (precision != 0 && precision != onnx::TensorProto::FLOAT) {
    return NodeContext::Unsupported(absl::StrCat("precision=", precision, " is not supported (0 or 1, float)"));
  }
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  ASSIGN_OR_RETURN(QuantParams p, ReadQuantParams(ctx, tx.rank()));
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "x"));
  if (tx.dtype != DType::kF32) {
    ASSIGN_OR_RETURN(x, ctx.Call("cast", {x, DType::kF32}));
  }
  Node* y;
  if (p.per_axis) {
    ASSIGN_OR_RETURN(auto operands, PerAxisOperands(ctx, p));
    ASSIGN_OR_RETURN(y, ctx.Call("quantize_per_channel", {x, operands.first, operands.second, p.axis, p.quantized}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Call("quantize_per_tensor", {x, p.scale->GetAsDouble(0), ZeroPointAt(p, 0), p.quantized}));
  }
  return ctx.SetOutput(0, y);
}

// The result's type: opset 23's output_dtype, else the scale's.
absl::StatusOr<DType> DequantizedType(NodeContext& ctx, DType scale_type) {
  ASSIGN_OR_RETURN(int64_t output_dtype, ctx.attrs().Int("output_dtype", 0));
  if (output_dtype == 0) return scale_type;
  ASSIGN_OR_RETURN(DType out, DTypeFromOnnx(static_cast<int32_t>(output_dtype)));
  if (!IsFloatingPoint(out)) {
    return NodeContext::Invalid(absl::StrCat("output_dtype ", DTypeName(out), " is not a float type"));
  }
  return out;
}

// A known int32 input (a bias) is dequantized here: (x - zero point) * scale.
absl::StatusOr<bool> FoldDequantizeLinear(NodeContext& ctx) {
  const Tensor* x = ctx.Constant(0);
  if (x == nullptr || x->dtype() != DType::kI32) return false;
  const Tensor* scale = ctx.Constant(1);
  const Tensor* zero_point = ctx.HasInput(2) ? ctx.Constant(2) : nullptr;
  if (scale == nullptr || (ctx.HasInput(2) && zero_point == nullptr)) return false;
  ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().Int("axis", 1));
  const int64_t n = scale->NumElements();
  if (zero_point != nullptr && zero_point->NumElements() != n) {
    return NodeContext::Invalid(absl::StrCat("the zero point has ", zero_point->NumElements(),
                                             " values and the scale ", n));
  }
  int64_t channel_stride = 1, channels = 1;
  if (n != 1) {
    ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, x->rank()));
    channels = x->dim(a);
    for (int64_t d = a + 1; d < x->rank(); ++d) channel_stride *= x->dim(d);
    if (channels != n) {
      return NodeContext::Invalid(absl::StrCat("the scale has ", n, " values for ", channels, " channels"));
    }
  }
  ASSIGN_OR_RETURN(DType out_type, DequantizedType(ctx, scale->dtype()));
  Tensor out(out_type, x->dims());
  for (int64_t i = 0; i < x->NumElements(); ++i) {
    const int64_t c = n == 1 ? 0 : (i / channel_stride) % channels;
    const double zp = zero_point == nullptr ? 0 : zero_point->GetAsDouble(c);
    out.SetFromDouble(i, (x->GetAsDouble(i) - zp) * scale->GetAsDouble(c));
  }
  RETURN_IF_ERROR(ctx.SetOutputConstant(0, std::move(out)));
  return true;
}

absl::Status ConvertDequantizeLinear(NodeContext& ctx) {
  ASSIGN_OR_RETURN(TensorType tx, ctx.InputType(0));
  if (tx.dtype != DType::kI8 && tx.dtype != DType::kU8) {
    return NodeContext::Unsupported(absl::StrCat("dequantizing ", DTypeName(tx.dtype),
                                                 " computed at run time is not supported (int8 and uint8 are)"));
  }
  ASSIGN_OR_RETURN(QuantParams p, ReadQuantParams(ctx, tx.rank()));
  if (p.zero_point != nullptr && p.zero_point->dtype() != tx.dtype) {
    return NodeContext::Invalid(absl::StrCat("the zero point ", p.zero_point->TypeString(), " and the input ",
                                             tx.ToString(), " must have one type"));
  }
  ASSIGN_OR_RETURN(Node * x, ctx.Input(0, "x"));
  Node* y;
  if (p.per_axis) {
    ASSIGN_OR_RETURN(auto operands, PerAxisOperands(ctx, p));
    // Symmetric weights (every zero point 0, as quantization tools write
    // them) take the literal 0, which quantize-lower recognizes.
    bool symmetric = true;
    for (int64_t i = 0; i < p.scale->NumElements(); ++i) symmetric = symmetric && ZeroPointAt(p, i) == 0;
    Argument zero_points = symmetric ? Argument(int64_t{0}) : Argument(operands.second);
    ASSIGN_OR_RETURN(y, ctx.Call("dequantize", {x, operands.first, zero_points, p.axis}));
  } else {
    ASSIGN_OR_RETURN(y, ctx.Call("dequantize", {x, p.scale->GetAsDouble(0), ZeroPointAt(p, 0)}));
  }
  ASSIGN_OR_RETURN(DType out, DequantizedType(ctx, p.scale->dtype()));
  ASSIGN_OR_RETURN(y, CastIfNeeded(ctx, y, out));
  return ctx.SetOutput(0, y);
}

}  // namespace

void AddQuantizeConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "QuantizeLinear", .convert = ConvertQuantizeLinear});
  table.push_back({.op_type = "DequantizeLinear", .fold = FoldDequantizeLinear, .convert = ConvertDequantizeLinear});
}

}  // namespace graft::onnx_import
