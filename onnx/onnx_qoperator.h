#ifndef GRAFT_ONNX_ONNX_QOPERATOR_H_
#define GRAFT_ONNX_ONNX_QOPERATOR_H_

// Quantized operators of the QOperator format: ONNX's QLinearConv and
// QLinearMatMul, and ONNX Runtime's com.microsoft ones its quantization
// tools write with them (QGemm, QLinearAdd, QLinearMul, QLinearConcat,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearLeakyRelu,
// QLinearSigmoid, QLinearSoftmax). Each is imported as the nodes that define it:
// DequantizeLinear of each quantized input, the float operator, and
// QuantizeLinear of its result. That is the QDQ form graft imports as its
// reference quantized graph, which quantize-lower fuses into int8 ops, so a
// model in either format imports alike.
//
// Also the integer operators of dynamic quantization (ONNX Runtime's
// quantize_dynamic): DynamicQuantizeLinear as the arithmetic that defines
// it, MatMulInteger and ConvInteger as the float product of the values
// less their zero points, rounded to int32 (sums exact below 2^24, beyond
// that within f32's rounding of them).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// Whether `node` is one of them (by its domain and op type).
bool IsQOperator(const onnx::NodeProto& node);

// Their op types, those of other domains as "com.microsoft.QGemm".
std::vector<std::string> QOperatorTypes();

// The nodes `node` stands for, in order; the last writes its output. Their
// intermediate values are named after that output ("y::x", "y::product").
// `model_opset`: the default domain's, which the float operators follow.
absl::StatusOr<std::vector<onnx::NodeProto>> ExpandQOperator(const onnx::NodeProto& node,
                                                             int64_t model_opset);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_QOPERATOR_H_
