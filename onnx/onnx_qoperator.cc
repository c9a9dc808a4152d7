#include "onnx/onnx_qoperator.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_expansion.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

constexpr char kMicrosoft[] = "com.microsoft";

// The nodes one QOperator node expands into: the general helpers, and the
// quantized values' own.
class Expansion : public NodeExpansion {
 public:
  using NodeExpansion::NodeExpansion;

  // DequantizeLinear of input x by inputs scale and zero point (per `axis`
  // where the scale is 1-D): the float value's name.
  std::string Dequantize(int x, int scale, int zero_point, const std::string& what, int64_t axis = 1) {
    const std::string out = Value(what);
    std::vector<std::string> inputs = {In(x), In(scale)};
    if (Has(zero_point)) inputs.push_back(In(zero_point));
    SetInt(Add("DequantizeLinear", inputs, out), "axis", axis);
    return out;
  }

  // An int32 bias in units of factor * scale_a * scale_b, zero point 0.
  std::string DequantizeBias(int bias, int scale_a, int scale_b, float factor = 1) {
    std::string scale = Value("bias_scale");
    Add("Mul", {In(scale_a), In(scale_b)}, scale);
    if (factor != 1) {
      Add("Mul", {scale, Constant(factor, "bias_factor")}, Value("bias_scaled"));
      scale = Value("bias_scaled");
    }
    const std::string out = Value("bias");
    SetInt(Add("DequantizeLinear", {In(bias), scale}, out), "axis", -1);
    return out;
  }

  // The float result quantized into the node's output.
  void Quantize(const std::string& value, int scale, int zero_point) {
    std::vector<std::string> inputs = {value, In(scale)};
    if (Has(zero_point)) inputs.push_back(In(zero_point));
    Add("QuantizeLinear", inputs, Out(0));
  }

  // Integer input i as floats less its zero point (input zero_point, known
  // or not: DynamicQuantizeLinear makes it at run time). `per_row`: a 1-D
  // zero point is one per row of a matrix (MatMulInteger's A), so it is
  // made a column; otherwise it broadcasts along the last dim (B's, one per
  // column) or is a scalar.
  std::string LessZeroPoint(int i, int zero_point, const std::string& what, bool per_row = false) {
    const std::string f = Cast(In(i), onnx::TensorProto::FLOAT, what);
    if (!Has(zero_point)) return f;
    std::string z = Cast(In(zero_point), onnx::TensorProto::FLOAT, what + "_zero_point");
    if (per_row) {
      const std::string shape = ConstantInts({-1, 1}, what + "_column_shape");
      const std::string column = Value(what + "_zero_point_column");
      Add("Reshape", {z, shape}, column);
      z = column;
    }
    const std::string out = Value(what + "_centered");
    Add("Sub", {f, z}, out);
    return out;
  }

  // Integer weights as floats less their zero points (known, per `axis`
  // where 1-D): a DequantizeLinear by scales of 1, as many as zero points
  // (zero point * 0 + 1, evaluated at import).
  std::string WeightLessZeroPoint(int i, int zero_point, int64_t axis, const std::string& what) {
    if (!Has(zero_point)) return Cast(In(i), onnx::TensorProto::FLOAT, what);
    const std::string zeros = Value(what + "_zeros"), units = Value(what + "_units");
    Add("Mul", {Cast(In(zero_point), onnx::TensorProto::FLOAT, what + "_zero_point"),
                Constant(0, what + "_zero")},
        zeros);
    Add("Add", {zeros, Constant(1, what + "_one")}, units);
    const std::string out = Value(what);
    SetInt(Add("DequantizeLinear", {In(i), units, In(zero_point)}, out), "axis", axis);
    return out;
  }

  // Integer sums made in f32 as int32 into the node's output. They are
  // whole numbers either way: exact below 2^24, and every f32 above 2^23
  // is whole.
  void IntegerResult(const std::string& sums) {
    SetInt(Add("Cast", {sums}, Out(0)), "to", onnx::TensorProto::INT32);
  }
};

// com.microsoft's pooling and convolution may run on NHWC values.
absl::Status RefuseChannelsLast(const Expansion& e) {
  if (e.IntAttribute("channels_last", 0) != 0) {
    return absl::UnimplementedError("channels_last=1 is not supported");
  }
  return absl::OkStatus();
}

absl::Status RequireInputs(const Expansion& e, int count) { return e.RequireInputs(count); }

// x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B (int32, optional). w per output channel (axis 0).
absl::Status QLinearConv(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 8));
  RETURN_IF_ERROR(RefuseChannelsLast(e));
  std::vector<std::string> inputs = {e.Dequantize(0, 1, 2, "x"), e.Dequantize(3, 4, 5, "w", 0)};
  if (e.Has(8)) inputs.push_back(e.DequantizeBias(8, 1, 4));
  const std::string y = e.Value("conv");
  e.CopyAttributes(e.Add("Conv", inputs, y), {"channels_last"});
  e.Quantize(y, 6, 7);
  return absl::OkStatus();
}

// a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point. a per row (axis -2), b per column (axis -1).
absl::Status QLinearMatMul(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 8));
  const std::string y = e.Value("product");
  e.Add("MatMul", {e.Dequantize(0, 1, 2, "a", -2), e.Dequantize(3, 4, 5, "b", -1)}, y);
  e.Quantize(y, 6, 7);
  return absl::OkStatus();
}

// A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32 in units of
// alpha * a_scale * b_scale, optional), y_scale and y_zero_point
// (optional: without them the result is float). B per column.
absl::Status QGemm(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 5));
  const int64_t b_axis = e.IntAttribute("transB", 0) != 0 ? 0 : 1;
  std::vector<std::string> inputs = {e.Dequantize(0, 1, 2, "a"), e.Dequantize(3, 4, 5, "b", b_axis)};
  if (e.Has(6)) inputs.push_back(e.DequantizeBias(6, 1, 4, e.FloatAttribute("alpha", 1.0f)));
  const bool quantized = e.Has(7);
  const std::string y = quantized ? e.Value("gemm") : e.node().output(0);
  e.CopyAttributes(e.Add("Gemm", inputs, y));
  if (quantized) e.Quantize(y, 7, 8);
  return absl::OkStatus();
}

// A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point: QLinearAdd and QLinearMul.
absl::Status QLinearBinary(Expansion& e, const std::string& op) {
  RETURN_IF_ERROR(RequireInputs(e, 7));
  const std::string y = e.Value(op);
  e.Add(op, {e.Dequantize(0, 1, 2, "a"), e.Dequantize(3, 4, 5, "b")}, y);
  e.Quantize(y, 6, 7);
  return absl::OkStatus();
}

// X, X_scale, X_zero_point, Y_scale, Y_zero_point: the unary ones and the
// pools, their float op taking the node's other attributes.
absl::Status QLinearUnary(Expansion& e, const std::string& op) {
  RETURN_IF_ERROR(RequireInputs(e, 4));
  RETURN_IF_ERROR(RefuseChannelsLast(e));
  const std::string y = e.Value(op);
  e.CopyAttributes(e.Add(op, {e.Dequantize(0, 1, 2, "x")}, y), {"channels_last"});
  e.Quantize(y, 3, 4);
  return absl::OkStatus();
}

// QLinearUnary's inputs; its `opset` says which Softmax it quantizes (from
// 13 on over one axis, before over the flattened tail), which must be the
// one of the model's opset, as the float Softmax is read.
absl::Status QLinearSoftmax(Expansion& e, int64_t model_opset) {
  const onnx::AttributeProto* opset = e.Typed("opset", onnx::AttributeProto::INT);
  if (opset == nullptr) return absl::InvalidArgumentError("needs its opset attribute");
  if ((opset->i() >= 13) != (model_opset >= 13)) {
    return absl::UnimplementedError(absl::StrCat("the Softmax of opset ", opset->i(), " in a model of opset ",
                                                 model_opset, " is not supported"));
  }
  RETURN_IF_ERROR(RequireInputs(e, 4));
  const std::string y = e.Value("softmax");
  e.CopyAttributes(e.Add("Softmax", {e.Dequantize(0, 1, 2, "x")}, y), {"opset"});
  e.Quantize(y, 3, 4);
  return absl::OkStatus();
}

// Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
absl::Status QLinearConcat(Expansion& e) {
  const int n = e.node().input_size();
  if (n < 5 || (n - 2) % 3 != 0 || e.node().output_size() < 1 || e.node().output(0).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes Y_scale, Y_zero_point and triples of X, X_scale, X_zero_point, not ", n,
                     " inputs"));
  }
  std::vector<std::string> parts;
  for (int i = 2; i < n; i += 3) parts.push_back(e.Dequantize(i, i + 1, i + 2, absl::StrCat("x", i / 3)));
  const std::string y = e.Value("concat");
  e.CopyAttributes(e.Add("Concat", parts, y));
  e.Quantize(y, 0, 1);
  return absl::OkStatus();
}

// --- Dynamic quantization (ONNX Runtime's quantize_dynamic) ------------------

// x -> uint8 y, its scale and zero point, per ONNX's definition:
// scale = (max(0, max x) - min(0, min x)) / 255 (1 / 255 for a range of 0),
// zero point = round(clip(-min(0, min x) / scale, 0, 255)), y = saturate(
// round(x / scale) + zero point), rounding halves to even.
absl::Status DynamicQuantizeLinear(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 1));
  const onnx::NodeProto& n = e.node();
  const std::string zero = e.Constant(0, "zero"), one = e.Constant(1, "one");
  const std::string top = e.Constant(255, "levels");
  auto op = [&](const char* type, std::vector<std::string> inputs, const std::string& what) {
    const std::string out = e.Value(what);
    e.Add(type, inputs, out);
    return out;
  };
  auto reduce = [&](const char* type, const std::string& what) {
    const std::string out = e.Value(what);
    Expansion::SetInt(e.Add(type, {e.In(0)}, out), "keepdims", 0);
    return out;
  };
  const std::string hi = op("Max", {reduce("ReduceMax", "largest"), zero}, "high");
  const std::string lo = op("Min", {reduce("ReduceMin", "smallest"), zero}, "low");
  const std::string range = op("Sub", {hi, lo}, "range");
  const std::string span = op("Where", {op("Equal", {range, zero}, "empty"), one, range}, "span");
  const std::string scale = n.output_size() > 1 && !n.output(1).empty() ? n.output(1) : e.Value("scale");
  e.Add("Div", {span, top}, scale);
  const std::string offset = op("Sub", {zero, op("Div", {lo, scale}, "low_steps")}, "offset");
  const std::string zero_point = op("Round", {op("Clip", {offset, zero, top}, "offset_clipped")}, "zero_point");
  if (n.output_size() > 2 && !n.output(2).empty()) {
    Expansion::SetInt(e.Add("Cast", {zero_point}, n.output(2)), "to", onnx::TensorProto::UINT8);
  }
  const std::string steps = op("Round", {op("Div", {e.In(0), scale}, "steps")}, "rounded_steps");
  const std::string shifted = op("Clip", {op("Add", {steps, zero_point}, "shifted"), zero, top}, "saturated");
  Expansion::SetInt(e.Add("Cast", {shifted}, n.output(0)), "to", onnx::TensorProto::UINT8);
  return absl::OkStatus();
}

// A, B, a_zero_point, b_zero_point -> int32 (A - a_zp) @ (B - b_zp); a
// 1-D a_zp is per row, a 1-D b_zp per column.
absl::Status MatMulInteger(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 2));
  const std::string sums = e.Value("sums");
  e.Add("MatMul", {e.LessZeroPoint(0, 2, "a", /*per_row=*/true), e.LessZeroPoint(1, 3, "b")}, sums);
  e.IntegerResult(sums);
  return absl::OkStatus();
}

// x, w, x_zero_point, w_zero_point -> int32 convolution of the centered
// values; w's zero points known (per output channel where 1-D).
absl::Status ConvInteger(Expansion& e) {
  RETURN_IF_ERROR(RequireInputs(e, 2));
  const std::string sums = e.Value("sums");
  e.CopyAttributes(e.Add("Conv", {e.LessZeroPoint(0, 2, "x"), e.WeightLessZeroPoint(1, 3, 0, "w")}, sums));
  e.IntegerResult(sums);
  return absl::OkStatus();
}

using ExpandFn = std::function<absl::Status(Expansion&, int64_t model_opset)>;

// The expanders that do not depend on the model's opset.
ExpandFn Any(std::function<absl::Status(Expansion&)> f) {
  return [f = std::move(f)](Expansion& e, int64_t) { return f(e); };
}

// Keyed by "domain/op_type" ("" for ONNX's own).
const std::map<std::string, ExpandFn>& Expanders() {
  static const auto* table = new std::map<std::string, ExpandFn>{
      {"/QLinearConv", Any(QLinearConv)},
      {"/QLinearMatMul", Any(QLinearMatMul)},
      {"com.microsoft/QLinearConv", Any(QLinearConv)},
      {"com.microsoft/QGemm", Any(QGemm)},
      {"com.microsoft/QLinearAdd", Any([](Expansion& e) { return QLinearBinary(e, "Add"); })},
      {"com.microsoft/QLinearMul", Any([](Expansion& e) { return QLinearBinary(e, "Mul"); })},
      {"com.microsoft/QLinearConcat", Any(QLinearConcat)},
      {"com.microsoft/QLinearAveragePool", Any([](Expansion& e) { return QLinearUnary(e, "AveragePool"); })},
      {"com.microsoft/QLinearGlobalAveragePool",
       Any([](Expansion& e) { return QLinearUnary(e, "GlobalAveragePool"); })},
      {"com.microsoft/QLinearLeakyRelu", Any([](Expansion& e) { return QLinearUnary(e, "LeakyRelu"); })},
      {"com.microsoft/QLinearSigmoid", Any([](Expansion& e) { return QLinearUnary(e, "Sigmoid"); })},
      {"com.microsoft/QLinearSoftmax", QLinearSoftmax},
      {"/DynamicQuantizeLinear", Any(DynamicQuantizeLinear)},
      {"/MatMulInteger", Any(MatMulInteger)},
      {"/ConvInteger", Any(ConvInteger)},
  };
  return *table;
}

}  // namespace

bool IsQOperator(const onnx::NodeProto& node) { return Expanders().contains(ExpansionKey(node)); }

std::vector<std::string> QOperatorTypes() {
  std::vector<std::string> out;
  for (const auto& [key, fn] : Expanders()) out.push_back(OpTypeOfExpansionKey(key));
  return out;
}

absl::StatusOr<std::vector<onnx::NodeProto>> ExpandQOperator(const onnx::NodeProto& node,
                                                             int64_t model_opset) {
  auto it = Expanders().find(ExpansionKey(node));
  if (it == Expanders().end()) {
    return absl::InternalError(absl::StrCat(node.op_type(), " is not a QOperator graft expands"));
  }
  // Their parts, DequantizeLinear and QuantizeLinear, came with opset 10,
  // DynamicQuantizeLinear with 11.
  if (model_opset < (node.op_type() == "DynamicQuantizeLinear" ? 11 : 10)) {
    return absl::InvalidArgumentError(absl::StrCat(node.op_type(), " needs opset ",
                                                   node.op_type() == "DynamicQuantizeLinear" ? 11 : 10,
                                                   " or later, but the model imports opset ", model_opset));
  }
  Expansion e(node);
  RETURN_IF_ERROR(it->second(e, model_opset));
  RETURN_IF_ERROR(e.status());
  return e.Take();
}

}  // namespace graft::onnx_import
