// Quantization kernels. Quantized values are plain i8/u8 tensors;
// scale and zero point come as arguments.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "backends/interp/elementwise.h"
#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "graph/int4_ops.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

struct QRange {
  int64_t min, max;
};

absl::StatusOr<QRange> QuantRange(DType dtype) {
  switch (dtype) {
    case DType::kI8:
      return QRange{-128, 127};
    case DType::kU8:
      return QRange{0, 255};
    case DType::kF8E4M3:
      return QRange{0, 0};  // The zero point: f8e4m3 is symmetric.
    default:
      return KernelError("quantized dtype must be i8, u8 or f8e4m3, got ",
                         DTypeName(dtype));
  }
}

absl::Status CheckScale(double scale, int64_t zero_point, QRange range) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    return KernelError("scale must be positive and finite, got ", scale);
  }
  if (zero_point < range.min || zero_point > range.max) {
    return KernelError("zero_point ", zero_point, " is outside [", range.min,
                       ", ", range.max, "]");
  }
  return absl::OkStatus();
}

// q = clamp(round_half_even(x / scale) + zero_point); NaN maps to the zero
// point.
int64_t Quantize(double x, double scale, int64_t zero_point, QRange range) {
  if (std::isnan(x)) return zero_point;
  double q = std::nearbyint(x / scale) + static_cast<double>(zero_point);
  q = std::clamp(q, static_cast<double>(range.min),
                 static_cast<double>(range.max));
  return static_cast<int64_t>(q);
}

// The value stored for x in `dtype`: an integer step as above, or for
// f8e4m3 x / scale clamped to +-448 (storing rounds it to the nearest
// f8e4m3 value, ties to even; NaN stays NaN).
double QuantizeTo(DType dtype, double x, double scale, int64_t zero_point, QRange range) {
  if (!IsFloat8(dtype)) return static_cast<double>(Quantize(x, scale, zero_point, range));
  if (std::isnan(x)) return x;
  return std::clamp(x / scale, -448.0, 448.0);
}

// Number of elements before, along and after `axis`.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit SplitAt(const Tensor& x, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= x.dims()[d];
  s.len = x.rank() == 0 ? 1 : x.dims()[axis];
  for (int64_t d = axis + 1; d < x.rank(); ++d) s.inner *= x.dims()[d];
  return s;
}

absl::StatusOr<Value> QuantizePerTensor(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (!IsFloatingPoint(x.dtype())) {
    return KernelError("input must be floating point, got ", x.TypeString());
  }
  const DType dtype = ctx.call().GetDType("dtype");
  ASSIGN_OR_RETURN(QRange range, QuantRange(dtype));
  const double scale = ctx.call().Float("scale");
  const int64_t zero_point = ctx.call().Int("zero_point");
  RETURN_IF_ERROR(CheckScale(scale, zero_point, range));
  Tensor out(dtype, x.dims());
  const int64_t n = x.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    out.SetFromDouble(i, QuantizeTo(dtype, x.GetAsDouble(i), scale, zero_point, range));
  }
  return Value(out);
}

// Per-channel parameters: one scale and zero point per slice along axis.
absl::StatusOr<std::vector<double>> ChannelParams(const Tensor& t,
                                                  absl::string_view name,
                                                  int64_t channels) {
  if (t.rank() > 1 || t.NumElements() != channels) {
    return KernelError(name, " must be 1-D with one entry per channel (",
                       channels, "), got ", t.TypeString());
  }
  return t.ToDoubles();
}

absl::StatusOr<Value> QuantizePerChannel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (!IsFloatingPoint(x.dtype())) {
    return KernelError("input must be floating point, got ", x.TypeString());
  }
  const DType dtype = ctx.call().GetDType("dtype");
  ASSIGN_OR_RETURN(QRange range, QuantRange(dtype));
  ASSIGN_OR_RETURN(int64_t axis,
                   NormalizeDim(ctx.call().Int("axis"), x.rank()));
  const AxisSplit split = SplitAt(x, axis);
  ASSIGN_OR_RETURN(Tensor scales_t, ctx.Input("scales"));
  ASSIGN_OR_RETURN(Tensor zps_t, ctx.Input("zero_points"));
  ASSIGN_OR_RETURN(std::vector<double> scales,
                   ChannelParams(scales_t, "scales", split.len));
  ASSIGN_OR_RETURN(std::vector<double> zps,
                   ChannelParams(zps_t, "zero_points", split.len));
  for (int64_t c = 0; c < split.len; ++c) {
    absl::Status s = CheckScale(scales[c], static_cast<int64_t>(zps[c]), range);
    if (!s.ok()) return KernelError("channel ", c, ": ", s.message());
  }
  Tensor out(dtype, x.dims());
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t c = 0; c < split.len; ++c) {
      for (int64_t i = 0; i < split.inner; ++i) {
        const int64_t at = (o * split.len + c) * split.inner + i;
        out.SetFromDouble(at, QuantizeTo(dtype, x.GetAsDouble(at), scales[c],
                                         static_cast<int64_t>(zps[c]), range));
      }
    }
  }
  return Value(out);
}

absl::StatusOr<Value> Dequantize(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (!IsInteger(x.dtype()) && !IsFloat8(x.dtype())) {
    return KernelError("input must be a quantized (integer or f8e4m3) tensor, got ",
                       x.TypeString());
  }
  const DType dtype = ctx.call().GetDType("dtype");
  if (!IsFloatingPoint(dtype)) {
    return KernelError("dtype must be a float dtype, got ", DTypeName(dtype));
  }
  ASSIGN_OR_RETURN(Operand scale, ctx.InputOrScalar("scale"));
  ASSIGN_OR_RETURN(Operand zp, ctx.InputOrScalar("zero_point"));
  int64_t channels = 1;
  AxisSplit split{1, 1, x.NumElements()};
  if (!ctx.call().IsNone("axis")) {
    ASSIGN_OR_RETURN(int64_t axis,
                     NormalizeDim(ctx.call().Int("axis"), x.rank()));
    split = SplitAt(x, axis);
    channels = split.len;
  }
  // Per-tensor parameters are single values; per-channel ones have one
  // entry per channel (a single zero point applies to every channel).
  const bool per_channel = !ctx.call().IsNone("axis");
  auto params =
      [&](const Operand& op,
          absl::string_view name) -> absl::StatusOr<std::vector<double>> {
    const int64_t n = op.tensor.NumElements();
    if (n == 1) return std::vector<double>(channels, op.tensor.GetAsDouble(0));
    if (!per_channel) {
      return KernelError(name, " has ", n,
                         " values; per-channel dequantize needs axis");
    }
    return ChannelParams(op.tensor, name, channels);
  };
  ASSIGN_OR_RETURN(std::vector<double> scales, params(scale, "scale"));
  ASSIGN_OR_RETURN(std::vector<double> zps, params(zp, "zero_point"));
  Tensor out(dtype, x.dims());
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t c = 0; c < split.len; ++c) {
      for (int64_t i = 0; i < split.inner; ++i) {
        const int64_t at = (o * split.len + c) * split.inner + i;
        out.SetFromDouble(at, (x.GetAsDouble(at) - zps[c]) * scales[c]);
      }
    }
  }
  return Value(out);
}

// How an int8 product (quantized_linear, quantized_conv2d) turns the int32
// sum of output channel o into its result: times input_scale *
// weight_scales[o], plus bias[o], the activation, then f32 or quantized
// again.
class Int8Epilogue {
 public:
  static absl::StatusOr<Int8Epilogue> Of(const KernelContext& ctx, const Tensor& scales,
                                         const std::optional<Tensor>& bias) {
    Int8Epilogue e;
    e.input_scale_ = ctx.call().Float("input_scale");
    e.scales_ = scales.data<float>();
    e.bias_ = bias.has_value() ? bias->data<float>() : nullptr;
    e.relu_ = ctx.call().String("activation") == "relu";
    e.dtype_ = ctx.call().GetDType("output_dtype");
    if (e.dtype_ != DType::kF32) {
      ASSIGN_OR_RETURN(QRange range, QuantRange(e.dtype_));
      e.range_ = range;
      e.out_scale_ = ctx.call().Float("output_scale");
      e.out_zero_point_ = ctx.call().Int("output_zero_point");
    }
    return e;
  }

  DType dtype() const { return dtype_; }

  void Write(Tensor& y, int64_t at, int64_t o, int32_t sum) const {
    double v = input_scale_ * scales_[o] * sum;
    if (bias_ != nullptr) v += bias_[o];
    if (relu_) v = std::max(v, 0.0);
    if (range_.has_value()) {
      y.SetFromDouble(at, static_cast<double>(Quantize(static_cast<float>(v), out_scale_,
                                                       out_zero_point_, *range_)));
    } else {
      y.data<float>()[at] = static_cast<float>(v);
    }
  }

 private:
  double input_scale_ = 1;
  const float* scales_ = nullptr;
  const float* bias_ = nullptr;
  bool relu_ = false;
  DType dtype_ = DType::kF32;
  std::optional<QRange> range_;
  double out_scale_ = 1;
  int64_t out_zero_point_ = 0;
};

// An i8 or u8 value as an int.
int32_t IntAt(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kU8 ? int32_t{t.data<uint8_t>()[i]} : int32_t{t.data<int8_t>()[i]};
}

// Integer products summed in 32 bits (as int8 hardware does; |sum| stays
// below 2^31 for any in < 2^16), then scaled.
absl::StatusOr<Value> QuantizedLinear(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(Tensor scales, ctx.Input("weight_scales"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  if ((x.dtype() != DType::kI8 && x.dtype() != DType::kU8) || w.dtype() != DType::kI8 ||
      w.rank() != 2 || x.rank() < 1 || x.dims().back() != w.dim(1) ||
      scales.dtype() != DType::kF32 || scales.NumElements() != w.dim(0)) {
    return KernelError("quantized_linear: input ", x.TypeString(), ", weight ", w.TypeString(),
                       " and weight_scales ", scales.TypeString(), " do not fit");
  }
  const int64_t in = w.dim(1), out = w.dim(0);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) rows *= x.dim(d);
  const int32_t zero_point = static_cast<int32_t>(ctx.call().Int("input_zero_point"));
  std::vector<int64_t> dims = x.dims();
  dims.back() = out;
  ASSIGN_OR_RETURN(Int8Epilogue epilogue, Int8Epilogue::Of(ctx, scales, bias));
  Tensor y(epilogue.dtype(), dims);
  const int8_t* wd = w.data<int8_t>();
  std::vector<int32_t> row(in);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < in; ++k) row[k] = IntAt(x, r * in + k) - zero_point;
    for (int64_t o = 0; o < out; ++o) {
      int32_t sum = 0;
      for (int64_t k = 0; k < in; ++k) sum += row[k] * wd[o * in + k];
      epilogue.Write(y, r * out + o, o, sum);
    }
  }
  return Value(y);
}

// Direct loops over the window; padding reads as the zero point (a real 0).
absl::StatusOr<Value> QuantizedConv2d(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x_in, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(Tensor scales, ctx.Input("weight_scales"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  bool batched = true;
  ASSIGN_OR_RETURN(Tensor x, As4D(x_in, batched));
  ASSIGN_OR_RETURN(auto stride, Pair(ctx, "stride", 1));
  ASSIGN_OR_RETURN(auto padding, Pair(ctx, "padding", 0));
  ASSIGN_OR_RETURN(auto dilation, Pair(ctx, "dilation", 1));
  const int64_t groups = ctx.call().Int("groups");
  if ((x.dtype() != DType::kI8 && x.dtype() != DType::kU8) || w.dtype() != DType::kI8 ||
      w.rank() != 4 || groups < 1 || x.dim(1) % groups != 0 || w.dim(0) % groups != 0 ||
      w.dim(1) != x.dim(1) / groups || scales.dtype() != DType::kF32 ||
      scales.NumElements() != w.dim(0) ||
      (bias.has_value() && (bias->dtype() != DType::kF32 || bias->NumElements() != w.dim(0)))) {
    return KernelError("quantized_conv2d: input ", x_in.TypeString(), ", weight ",
                       w.TypeString(), ", weight_scales ", scales.TypeString(),
                       " and groups=", groups, " do not fit");
  }
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t oc = w.dim(0), cg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const auto [sh, sw] = stride;
  const auto [ph, pw] = padding;
  const auto [dh, dw] = dilation;
  const int64_t eff_h = h + 2 * ph - dh * (kh - 1) - 1;
  const int64_t eff_w = wd + 2 * pw - dw * (kw - 1) - 1;
  if (kh < 1 || kw < 1 || eff_h < 0 || eff_w < 0) {
    return KernelError("quantized_conv2d: kernel ", kh, "x", kw, " is larger than the padded input");
  }
  const int64_t oh = eff_h / sh + 1, ow = eff_w / sw + 1, ocg = oc / groups;
  const int32_t zero_point = static_cast<int32_t>(ctx.call().Int("input_zero_point"));
  ASSIGN_OR_RETURN(Int8Epilogue epilogue, Int8Epilogue::Of(ctx, scales, bias));
  Tensor y(epilogue.dtype(), {n, oc, oh, ow});
  const int8_t* wdata = w.data<int8_t>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < oc; ++o) {
      const int64_t first = (o / ocg) * cg;  // The group's first input channel.
      for (int64_t yy = 0; yy < oh; ++yy) {
        for (int64_t xx = 0; xx < ow; ++xx) {
          int32_t sum = 0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t ki = 0; ki < kh; ++ki) {
              const int64_t iy = yy * sh - ph + ki * dh;
              if (iy < 0 || iy >= h) continue;
              for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t ix = xx * sw - pw + kj * dw;
                if (ix < 0 || ix >= wd) continue;
                const int32_t v = IntAt(x, ((b * c + first + ci) * h + iy) * wd + ix) - zero_point;
                sum += v * wdata[((o * cg + ci) * kh + ki) * kw + kj];
              }
            }
          }
          epilogue.Write(y, ((b * oc + o) * oh + yy) * ow + xx, o, sum);
        }
      }
    }
  }
  return Value(From4D(y, batched));
}

// Each row quantized to symmetric int8 by its own largest magnitude, the
// products summed in 32 bits, then scaled by the row's and the output's
// scales.
absl::StatusOr<Value> DynamicQuantizedLinear(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(Tensor scales, ctx.Input("weight_scales"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  if (x.dtype() != DType::kF32 || w.dtype() != DType::kI8 || w.rank() != 2 || x.rank() < 1 ||
      x.dims().back() != w.dim(1) || scales.dtype() != DType::kF32 ||
      scales.NumElements() != w.dim(0) ||
      (bias.has_value() && (bias->dtype() != DType::kF32 || bias->NumElements() != w.dim(0)))) {
    return KernelError("dynamic_quantized_linear: input ", x.TypeString(), ", weight ",
                       w.TypeString(), " and weight_scales ", scales.TypeString(),
                       " do not fit");
  }
  const int64_t in = w.dim(1), out = w.dim(0);
  if (in > kMaxInt8SumTerms) {
    return KernelError("dynamic_quantized_linear: ", in,
                       " input features could overflow the int32 sums (at most ",
                       kMaxInt8SumTerms, ")");
  }
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) rows *= x.dim(d);
  std::vector<int64_t> dims = x.dims();
  dims.back() = out;
  Tensor y(DType::kF32, dims);
  const float* xd = x.data<float>();
  const int8_t* wd = w.data<int8_t>();
  const float* sd = scales.data<float>();
  const float* bd = bias.has_value() ? bias->data<float>() : nullptr;
  std::vector<int32_t> q(in);
  for (int64_t r = 0; r < rows; ++r) {
    float largest = 0;
    for (int64_t k = 0; k < in; ++k) {
      if (std::isfinite(xd[r * in + k])) largest = std::max(largest, std::fabs(xd[r * in + k]));
    }
    const float row_scale = largest > 0 ? largest / 127.0f : 1.0f;
    for (int64_t k = 0; k < in; ++k) {
      const float v = std::nearbyint(xd[r * in + k] / row_scale);
      q[k] = std::isnan(v) ? 0 : static_cast<int32_t>(std::clamp(v, -127.0f, 127.0f));
    }
    for (int64_t o = 0; o < out; ++o) {
      int32_t sum = 0;
      for (int64_t k = 0; k < in; ++k) sum += q[k] * wd[o * in + k];
      float v = row_scale * sd[o] * static_cast<float>(sum);
      if (bd != nullptr) v += bd[o];
      y.data<float>()[r * out + o] = v;
    }
  }
  return Value(y);
}

absl::StatusOr<Value> UnpackInt4(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor packed, ctx.Input("packed"));
  if (packed.dtype() != DType::kU8 || packed.rank() < 1) {
    return KernelError("unpack_int4: packed ", packed.TypeString(), " must be u8 with a dim");
  }
  std::vector<int64_t> dims = packed.dims();
  dims.back() *= 2;
  Tensor out(DType::kI8, dims);
  UnpackInt4Bytes(packed.data<uint8_t>(), packed.NumElements(), out.data<int8_t>());
  return Value(out);
}

}  // namespace

void RegisterQuantKernels(KernelTable& t) {
  // The identity: calibration reads the value from outside (the
  // interpreter's hooks).
  t.Add(std::string(kObserveOp), [](const KernelContext& ctx) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
    return Value(x);
  });
  t.Add("quantize_per_tensor", QuantizePerTensor);
  t.Add(std::string(kQuantizedLinearOp), QuantizedLinear);
  t.Add(std::string(kQuantizedConv2dOp), QuantizedConv2d);
  t.Add(std::string(kDynamicQuantizedLinearOp), DynamicQuantizedLinear);
  t.Add(std::string(kUnpackInt4Op), UnpackInt4);
  t.Add("quantize_per_channel", QuantizePerChannel);
  t.Add("dequantize", Dequantize);
}

}  // namespace graft::interp
