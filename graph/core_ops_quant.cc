// Quantization ops of docs/ops.md. Quantized values are plain i8/u8
// tensors; scale and zero point travel as arguments.

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "graph/core_ops_internal.h"
#include "graph/int4_ops.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::Status RequireFloatInput(const InferContext& ctx, const TensorType& t) {
  if (IsFloatingPoint(t.dtype)) return absl::OkStatus();
  return ctx.Error(
      absl::StrCat("input ", t.ToString(), " must be floating point"));
}

absl::StatusOr<DType> QuantizedDType(const InferContext& ctx) {
  DType d = ctx.call().GetDType("dtype");
  if (d == DType::kI8 || d == DType::kU8 || d == DType::kF8E4M3) return d;
  return ctx.Error(absl::StrCat("dtype must be i8, u8 or f8e4m3, got ", DTypeName(d)));
}

// Parameter `param`, a zero point, must be a value of `dtype` (i8 or u8),
// or 0 for f8e4m3 (symmetric only).
absl::Status CheckZeroPoint(const InferContext& ctx, absl::string_view param, DType dtype) {
  const int64_t zero_point = ctx.call().Int(param);
  if (IsFloat8(dtype)) {
    if (zero_point == 0) return absl::OkStatus();
    return ctx.Error(absl::StrCat(param, " must be 0 for f8e4m3, got ", zero_point));
  }
  const int64_t lo = dtype == DType::kU8 ? 0 : -128, hi = dtype == DType::kU8 ? 255 : 127;
  if (zero_point >= lo && zero_point <= hi) return absl::OkStatus();
  return ctx.Error(absl::StrCat(param, " ", zero_point, " is out of range for ", DTypeName(dtype),
                                " [", lo, ", ", hi, "]"));
}

absl::StatusOr<TensorType> QuantizePerTensor(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloatInput(ctx, t);
  if (!status.ok()) return status;
  absl::StatusOr<DType> dtype = QuantizedDType(ctx);
  if (!dtype.ok()) return dtype.status();
  double scale = ctx.call().Float("scale");
  if (!(scale > 0) || !std::isfinite(scale)) {
    return ctx.Error(
        absl::StrCat("scale must be positive and finite, got ", scale));
  }
  status = CheckZeroPoint(ctx, "zero_point", *dtype);
  if (!status.ok()) return status;
  t.dtype = *dtype;
  return t;
}

// `param` must be a 1-D tensor with one entry per channel of `axis`.
absl::Status CheckChannels(const InferContext& ctx, absl::string_view param,
                           const TensorType& input, int64_t axis) {
  TensorType p = ctx.Type(param);
  Dim channels = input.shape[axis];
  if (p.rank() == 1 && !rules::DimsConflict(p.shape[0], channels)) {
    return absl::OkStatus();
  }
  return ctx.Error(absl::StrCat(param, " ", p.ToString(), " must be 1-D with ",
                                channels.ToString(),
                                " entries, one per channel of axis ", axis,
                                " of input ", input.ToString()));
}

absl::Status CheckScaleDType(const InferContext& ctx, absl::string_view scale,
                             absl::string_view zero_point) {
  if (ctx.IsTensor(scale) && !IsFloatingPoint(ctx.Type(scale).dtype)) {
    return ctx.Error(absl::StrCat(scale, " ", ctx.Type(scale).ToString(),
                                  " must be floating point"));
  }
  if (ctx.IsTensor(zero_point) && !IsInteger(ctx.Type(zero_point).dtype)) {
    return ctx.Error(absl::StrCat(zero_point, " ",
                                  ctx.Type(zero_point).ToString(),
                                  " must hold integers"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> QuantizePerChannel(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloatInput(ctx, t);
  if (!status.ok()) return status;
  absl::StatusOr<DType> dtype = QuantizedDType(ctx);
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<int64_t> axis =
      rules::NormalizeDim(ctx, ctx.call().Int("axis"), t.rank(), "axis");
  if (!axis.ok()) return axis.status();
  for (const char* param : {"scales", "zero_points"}) {
    status = CheckChannels(ctx, param, t, *axis);
    if (!status.ok()) return status;
  }
  status = CheckScaleDType(ctx, "scales", "zero_points");
  if (!status.ok()) return status;
  t.dtype = *dtype;
  return t;
}

absl::StatusOr<TensorType> Dequantize(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  if (!IsInteger(t.dtype) && !IsFloat8(t.dtype)) {
    return ctx.Error(absl::StrCat("input ", t.ToString(),
                                  " is not a quantized (integer or f8e4m3) tensor"));
  }
  DType dtype = ctx.call().GetDType("dtype");
  if (!IsFloatingPoint(dtype)) {
    return ctx.Error(absl::StrCat("dtype must be a floating-point type, got ",
                                  DTypeName(dtype)));
  }
  absl::Status status = CheckScaleDType(ctx, "scale", "zero_point");
  if (!status.ok()) return status;
  if (ctx.call().IsNone("axis")) {
    // Per tensor: a tensor scale or zero point must hold one value.
    for (const char* param : {"scale", "zero_point"}) {
      if (!ctx.IsTensor(param)) continue;
      std::optional<Dim> n = rules::NumElementsDim(ctx.Type(param).shape);
      if (n.has_value() && n->is_constant() && n->value() != 1) {
        return ctx.Error(absl::StrCat(
            param, " ", ctx.Type(param).ToString(), " has ", n->value(),
            " values; give axis for per-channel dequantization"));
      }
    }
    t.dtype = dtype;
    return t;
  }
  absl::StatusOr<int64_t> axis =
      rules::NormalizeDim(ctx, ctx.call().Int("axis"), t.rank(), "axis");
  if (!axis.ok()) return axis.status();
  for (const char* param : {"scale", "zero_point"}) {
    if (!ctx.IsTensor(param)) continue;
    status = CheckChannels(ctx, param, t, *axis);
    if (!status.ok()) return status;
  }
  t.dtype = dtype;
  return t;
}

absl::StatusOr<TensorType> Observe(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloatInput(ctx, t);
  if (!status.ok()) return status;
  absl::StatusOr<DType> dtype = QuantizedDType(ctx);
  if (!dtype.ok()) return dtype.status();
  if (!ctx.call().IsNone("scale")) {
    double scale = ctx.call().Float("scale");
    if (!(scale > 0) || !std::isfinite(scale)) {
      return ctx.Error(absl::StrCat("scale must be positive and finite, got ", scale));
    }
  }
  return t;
}

// The int8 weight [out, in], its per-output scales and the optional f32
// bias of a quantized linear layer whose input is `x`.
absl::Status CheckInt8Weight(const InferContext& ctx, const TensorType& x) {
  TensorType w = ctx.Type("weight");
  TensorType scales = ctx.Type("weight_scales");
  if (w.dtype != DType::kI8 || w.rank() != 2 || rules::DimsConflict(w.shape[1], x.shape.back())) {
    return ctx.Error(absl::StrCat("weight ", w.ToString(), " must be i8[out, ",
                                  x.shape.back().ToString(), "]"));
  }
  if (scales.dtype != DType::kF32 || scales.rank() != 1 ||
      rules::DimsConflict(scales.shape[0], w.shape[0])) {
    return ctx.Error(absl::StrCat("weight_scales ", scales.ToString(), " must be f32[",
                                  w.shape[0].ToString(), "]"));
  }
  if (ctx.call().TensorNode("bias") != nullptr) {
    TensorType b = ctx.Type("bias");
    if (b.dtype != DType::kF32 || b.rank() != 1 || rules::DimsConflict(b.shape[0], w.shape[0])) {
      return ctx.Error(absl::StrCat("bias ", b.ToString(), " must be f32[",
                                    w.shape[0].ToString(), "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorType> DynamicQuantizedLinear(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  if (x.dtype != DType::kF32 || x.rank() < 1) {
    return ctx.Error(absl::StrCat("input ", x.ToString(), " must be f32 with a dim"));
  }
  RETURN_IF_ERROR(CheckInt8Weight(ctx, x));
  x.shape.back() = ctx.Type("weight").shape[0];
  return x;
}

// The scales, zero points and activation of an int8 product on input `x`,
// and the dtype of its result (f32, or quantized again).
absl::StatusOr<DType> CheckQuantizedProduct(const InferContext& ctx, const TensorType& x) {
  auto positive = [&](absl::string_view name) -> absl::Status {
    if (ctx.call().IsNone(name)) return absl::OkStatus();
    const double v = ctx.call().Float(name);
    if (v > 0 && std::isfinite(v)) return absl::OkStatus();
    return ctx.Error(absl::StrCat(name, " must be positive and finite, got ", v));
  };
  RETURN_IF_ERROR(positive("input_scale"));
  RETURN_IF_ERROR(positive("output_scale"));
  RETURN_IF_ERROR(CheckZeroPoint(ctx, "input_zero_point", x.dtype));
  const std::string& activation = ctx.call().String("activation");
  if (activation != "none" && activation != "relu") {
    return ctx.Error(absl::StrCat("activation must be \"none\" or \"relu\", got \"", activation,
                                  "\""));
  }
  const DType out = ctx.call().GetDType("output_dtype");
  if (ctx.call().IsNone("output_scale") != (out == DType::kF32)) {
    return ctx.Error("output_scale goes with an i8 or u8 output_dtype, and only with one");
  }
  if (out != DType::kF32 && out != DType::kI8 && out != DType::kU8) {
    return ctx.Error(absl::StrCat("output_dtype must be f32, i8 or u8, got ", DTypeName(out)));
  }
  if (out != DType::kF32) RETURN_IF_ERROR(CheckZeroPoint(ctx, "output_zero_point", out));
  return out;
}

absl::StatusOr<TensorType> QuantizedLinear(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  if ((x.dtype != DType::kI8 && x.dtype != DType::kU8) || x.rank() < 1) {
    return ctx.Error(absl::StrCat("input ", x.ToString(), " must be i8 or u8 with a dim"));
  }
  RETURN_IF_ERROR(CheckInt8Weight(ctx, x));
  ASSIGN_OR_RETURN(DType dtype, CheckQuantizedProduct(ctx, x));
  TensorType out = x;
  out.dtype = dtype;
  out.shape.back() = ctx.Type("weight").shape[0];
  return out;
}

absl::StatusOr<TensorType> QuantizedConv2d(const InferContext& ctx) {
  TensorType x = ctx.Type("input");
  if (x.dtype != DType::kI8 && x.dtype != DType::kU8) {
    return ctx.Error(absl::StrCat("input ", x.ToString(), " must be i8 or u8"));
  }
  TensorType w = ctx.Type("weight");
  TensorType scales = ctx.Type("weight_scales");
  if (w.dtype != DType::kI8) return ctx.Error(absl::StrCat("weight ", w.ToString(), " must be i8"));
  ASSIGN_OR_RETURN(TensorType out, Conv2dShape(ctx));
  if (scales.dtype != DType::kF32 || scales.rank() != 1 ||
      rules::DimsConflict(scales.shape[0], w.shape[0])) {
    return ctx.Error(absl::StrCat("weight_scales ", scales.ToString(), " must be f32[",
                                  w.shape[0].ToString(), "]"));
  }
  if (ctx.IsTensor("bias") && ctx.Type("bias").dtype != DType::kF32) {
    return ctx.Error(absl::StrCat("bias ", ctx.Type("bias").ToString(), " must be f32"));
  }
  ASSIGN_OR_RETURN(out.dtype, CheckQuantizedProduct(ctx, x));
  return out;
}

absl::StatusOr<TensorType> UnpackInt4(const InferContext& ctx) {
  TensorType t = ctx.Type("packed");
  if (t.dtype != DType::kU8 || t.rank() < 1 || t.shape.back().is_symbolic()) {
    return ctx.Error(absl::StrCat("packed ", t.ToString(),
                                  " must be u8 with a last dim of known size"));
  }
  t.dtype = DType::kI8;
  t.shape.back() = Dim(2 * t.shape.back().value());
  return t;
}

}  // namespace

void RegisterQuantOps(OpRegistry& r) {
  Add(r, {.name = "quantize_per_tensor",
          .params = {Param("input", K::kTensor), Param("scale", K::kFloat),
                     Param("zero_point", K::kInt), Param("dtype", K::kDType)},
          .traits = {.kind = OpKind::kQuantize},
          .infer = One(QuantizePerTensor),
          .summary = "q = clamp(round(x / scale) + zero_point) as i8 or u8"});
  Add(r, {.name = "quantize_per_channel",
          .params = {Param("input", K::kTensor), Param("scales", K::kTensor),
                     Param("zero_points", K::kTensor), Param("axis", K::kInt),
                     Param("dtype", K::kDType)},
          .traits = {.kind = OpKind::kQuantize},
          .infer = One(QuantizePerChannel),
          .summary = "quantize with one scale and zero point per channel of "
                     "axis"});
  Add(r, {.name = "dequantize",
          .params = {Param("input", K::kTensor),
                     Param("scale", K::kTensorOrScalar),
                     Param("zero_point", K::kTensorOrScalar),
                     Optional("axis", K::kInt),
                     Defaulted("dtype", K::kDType, DType::kF32)},
          .traits = {.kind = OpKind::kQuantize},
          .infer = One(Dequantize),
          .summary = "x = (q - zero_point) * scale, per tensor or per "
                     "channel of axis"});
  Add(r, {.name = std::string(kObserveOp),
          .params = {Param("input", K::kTensor), Optional("scale", K::kFloat),
                     Optional("zero_point", K::kInt),
                     Defaulted("dtype", K::kDType, DType::kI8)},
          .pure = false,
          .traits = {.kind = OpKind::kQuantize},
          .infer = One(Observe),
          .summary = "identity; a value whose range calibration records "
                     "(quantize-prepare), with its scale and zero point once "
                     "calibrated"});
  Add(r, {.name = std::string(kQuantizedLinearOp),
          .params = {Param("input", K::kTensor), Param("input_scale", K::kFloat),
                     Param("input_zero_point", K::kInt), Param("weight", K::kTensor),
                     Param("weight_scales", K::kTensor), Optional("bias", K::kTensor),
                     Defaulted("activation", K::kString, Argument("none")),
                     Optional("output_scale", K::kFloat),
                     Defaulted("output_zero_point", K::kInt, Argument(int64_t{0})),
                     Defaulted("output_dtype", K::kDType, DType::kF32)},
          .traits = {.kind = OpKind::kContraction, .flops = LastDimContractionFlops},
          .infer = One(QuantizedLinear),
          .summary = "a linear layer on int8 values (quantize-lower): i8/u8 input, i8 "
                     "weight with per-output scales, an optional ReLU, an f32 result or "
                     "one quantized again"});
  Add(r, {.name = std::string(kQuantizedConv2dOp),
          .params = {Param("input", K::kTensor), Param("input_scale", K::kFloat),
                     Param("input_zero_point", K::kInt), Param("weight", K::kTensor),
                     Param("weight_scales", K::kTensor), Optional("bias", K::kTensor),
                     Defaulted("stride", K::kIntList, 1), Defaulted("padding", K::kIntList, 0),
                     Defaulted("dilation", K::kIntList, 1), Defaulted("groups", K::kInt, 1),
                     Defaulted("activation", K::kString, Argument("none")),
                     Optional("output_scale", K::kFloat),
                     Defaulted("output_zero_point", K::kInt, Argument(int64_t{0})),
                     Defaulted("output_dtype", K::kDType, DType::kF32)},
          .traits = {.kind = OpKind::kContraction, .flops = QuantizedConv2dFlops},
          .infer = One(QuantizedConv2d),
          .summary = "a 2-D convolution on int8 values (quantize-lower): i8/u8 input, i8 "
                     "weight with per-output-channel scales, an optional ReLU, an f32 result "
                     "or one quantized again"});
  Add(r, {.name = std::string(kUnpackInt4Op),
          .params = {Param("packed", K::kTensor)},
          .traits = {.kind = OpKind::kOther},
          .infer = One(UnpackInt4),
          .summary = "4-bit integers stored two to a byte (u8 [..., n]) as i8 [..., 2n]: "
                     "each byte's low nibble, then its high nibble, two's complement"});
  Add(r, {.name = std::string(kDynamicQuantizedLinearOp),
          .params = {Param("input", K::kTensor), Param("weight", K::kTensor),
                     Param("weight_scales", K::kTensor), Optional("bias", K::kTensor)},
          .traits = {.kind = OpKind::kContraction, .flops = LastDimContractionFlops},
          .infer = One(DynamicQuantizedLinear),
          .summary = "a linear layer whose f32 input is quantized to int8 per row as it "
                     "runs (quantize-dynamic): i8 weight with per-output scales, f32 result"});
}

}  // namespace graft::core_ops
