#include "onnx/onnx_ops.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "onnx/onnx_contrib_ops.h"
#include "onnx/onnx_function_ops.h"
#include "onnx/onnx_qoperator.h"

namespace graft::onnx_import {
namespace {

// From the ONNX operator changelog. LayerNormalization (17) is not here:
// ONNX Runtime registers its own in the default domain at every opset, and
// its optimizer writes it into models of older opsets.
const absl::flat_hash_map<std::string, int64_t>& IntroducedIn() {
  static const auto* opsets = new absl::flat_hash_map<std::string, int64_t>{
      {"Expand", 8},           {"Where", 9},
      {"Erf", 9},              {"Sign", 9},
      {"Sinh", 9},             {"Cosh", 9},
      {"Asinh", 9},            {"Acosh", 9},
      {"Atanh", 9},
      {"IsNaN", 9},            {"ConstantOfShape", 9},
      {"OneHot", 9},           {"Scatter", 9},
      {"IsInf", 10},           {"Mod", 10},
      {"Resize", 10},          {"QuantizeLinear", 10},
      {"DequantizeLinear", 10}, {"Round", 11},
      {"Range", 11},           {"CumSum", 11},
      {"GatherElements", 11},  {"GatherND", 11},
      {"ScatterElements", 11}, {"ScatterND", 11},
      {"Einsum", 12},          {"Celu", 12},
      {"LessOrEqual", 12},     {"GreaterOrEqual", 12},
      {"HardSwish", 14},       {"Trilu", 14},
      {"CastLike", 15},
      {"Mish", 18},            {"GroupNormalization", 18},
      {"Gelu", 20},            {"GridSample", 16},
  };
  return *opsets;
}

// Built once, on first use; read-only afterwards.
const absl::flat_hash_map<std::string, OpConverter>& Table() {
  static const auto* table = [] {
    std::vector<OpConverter> all;
    AddElementwiseConverters(all);
    AddNnConverters(all);
    AddShapeConverters(all);
    AddReduceConverters(all);
    AddConvTransposeConverters(all);
    AddResizeConverters(all);
    AddRearrangeConverters(all);
    AddRecurrentConverters(all);
    AddQuantizeConverters(all);
    AddGridSampleConverters(all);
    AddMatMulNBitsConverters(all);
    auto* map = new absl::flat_hash_map<std::string, OpConverter>();
    for (OpConverter& c : all) {
      c.since_opset = std::max(c.since_opset, OnnxOperatorIntroducedIn(c.op_type));
      std::string name = c.op_type;
      map->emplace(std::move(name), std::move(c));
    }
    return map;
  }();
  return *table;
}

}  // namespace

int64_t OnnxOperatorIntroducedIn(absl::string_view op_type) {
  auto it = IntroducedIn().find(op_type);
  return it == IntroducedIn().end() ? 1 : it->second;
}

const OpConverter* FindOpConverter(absl::string_view op_type) {
  auto it = Table().find(op_type);
  return it == Table().end() ? nullptr : &it->second;
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> out = QOperatorTypes();
  for (std::string& type : ContribOpTypes()) out.push_back(std::move(type));
  for (std::string& type : FunctionOpTypes()) out.push_back(std::move(type));
  for (const auto& [name, c] : Table()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graft::onnx_import
