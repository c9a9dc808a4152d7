#ifndef GRAFT_GRAPH_QUANT_OPS_H_
#define GRAFT_GRAPH_QUANT_OPS_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace graft {

// The observer of post-training quantization (passes/quantize/), a core op
// (graph/core_ops_quant.cc):
//
//   graft::observe(input: Tensor, scale: float? = None,
//                  zero_point: int? = None, dtype: dtype = i8)
//
// The identity on a floating-point value. quantize-prepare puts one on each
// value to be quantized; calibration records the ranges the value takes
// and writes the chosen scale and zero point into the node; quantize-convert
// turns each calibrated observer into quantize and dequantize. Impure, so no
// pass drops or merges one before calibration has read it.
inline constexpr absl::string_view kObserveOp = "graft::observe";

// A linear layer on quantized values, made by quantize-lower from
// dequantize -> linear: backends run it as one int8 matrix product.
//
//   graft::quantized_linear(input: Tensor, input_scale: float,
//                           input_zero_point: int, weight: Tensor,
//                           weight_scales: Tensor, bias: Tensor? = None,
//                           activation: str = "none",
//                           output_scale: float? = None,
//                           output_zero_point: int = 0,
//                           output_dtype: dtype = f32)
//
// input i8 or u8 [.., in]; weight i8 [out, in] with one scale per output
// (weight_scales f32 [out], zero points 0); bias f32 [out]:
//   y[.., o] = act(input_scale * weight_scales[o]
//              * sum_k (input[.., k] - input_zero_point) * weight[o, k] + bias[o])
// with act "none" or "relu". The result is y (f32), or with output_scale y
// quantized to output_dtype (i8 or u8): the next quantized call reads it
// as it is.
inline constexpr absl::string_view kQuantizedLinearOp = "graft::quantized_linear";

// A convolution on quantized values, made by quantize-lower from
// dequantize -> conv2d: backends run it as one int8 convolution.
//
//   graft::quantized_conv2d(input: Tensor, input_scale: float,
//                           input_zero_point: int, weight: Tensor,
//                           weight_scales: Tensor, bias: Tensor? = None,
//                           stride: int[] = 1, padding: int[] = 0,
//                           dilation: int[] = 1, groups: int = 1,
//                           activation: str = "none",
//                           output_scale: float? = None,
//                           output_zero_point: int = 0,
//                           output_dtype: dtype = f32)
//
// conv2d's shapes and window arguments; input i8 or u8 (NCHW), weight i8
// [out, in/groups, kh, kw] with one scale per output channel, bias f32
// [out]. The sums (input - input_zero_point) * weight run in int32 (padding
// counts as the zero point: a real 0), then as quantized_linear: scaled by
// input_scale * weight_scales[o], bias added, the activation, an f32
// result or one quantized to output_dtype.
inline constexpr absl::string_view kQuantizedConv2dOp = "graft::quantized_conv2d";

// A linear layer with dynamic quantization of its input, made by
// quantize-dynamic from linear (or matmul by a constant): no calibration,
// the input's scale is taken from each row as the layer runs.
//
//   graft::dynamic_quantized_linear(input: Tensor, weight: Tensor,
//                                   weight_scales: Tensor,
//                                   bias: Tensor? = None)
//
// input f32 [.., in]; weight i8 [out, in] with one scale per output
// (weight_scales f32 [out]); bias f32 [out]. Each row r of the input is
// quantized to symmetric int8 with s[r] = max_k |input[r, k]| / 127
// (rounding to nearest even; a zero row has s = 1), then
//   y[r, o] = s[r] * weight_scales[o] * sum_k q[r, k] * weight[o, k] + bias[o]
// summed in 32-bit integers, in f32 (at most 133143 input features, which
// keeps the sums from overflowing). Non-finite inputs are not carried
// through: NaN quantizes to 0 and infinities to +-127, so a row holding
// one gives finite results where the float layer would not.
inline constexpr absl::string_view kDynamicQuantizedLinearOp =
    "graft::dynamic_quantized_linear";

// The most s8 x s8 terms (each at most 127 * 127 in magnitude) an int32
// sum holds: the input features a dynamic int8 product may have.
inline constexpr int64_t kMaxInt8SumTerms = ((int64_t{1} << 31) - 1) / (127 * 127);

}  // namespace graft

#endif  // GRAFT_GRAPH_QUANT_OPS_H_
