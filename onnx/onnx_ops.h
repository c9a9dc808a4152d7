#ifndef GRAFT_ONNX_ONNX_OPS_H_
#define GRAFT_ONNX_ONNX_OPS_H_

// The table of ONNX operators graft imports (default domain, opsets 7-24)
// and how each becomes core ops. An entry may first try to evaluate the
// node at import time (shape arithmetic on known values) and otherwise
// converts it to graft nodes. The converters live in onnx_ops_*.cc, one
// file per family; docs/onnx.md lists them.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_node_context.h"

namespace graft::onnx_import {

// Evaluates the node when it can: true when its outputs are set, false to
// convert it instead. kResourceExhausted (a result over the folding limit)
// and kUnimplemented (a dtype the folder does not evaluate) also mean
// "convert instead".
using FoldFn = absl::StatusOr<bool> (*)(NodeContext& ctx);
// Creates graft nodes for the node and sets its outputs.
using ConvertFn = absl::Status (*)(NodeContext& ctx);

// How one ONNX operator is imported.
struct OpConverter {
  std::string op_type;
  // The first opset this entry handles. The table raises it to the opset
  // that introduced the operator (Where 9, LayerNormalization 17, Gelu
  // 20: OnnxOperatorIntroducedIn); converters read ctx.opset() where an
  // operator's older versions differ (Squeeze's axes attribute before 13).
  int64_t since_opset = 1;
  FoldFn fold = nullptr;        // Optional.
  ConvertFn convert = nullptr;  // Null: the node must fold (Shape).
  // Attributes that do not change an inference result (Dropout's seed,
  // BatchNormalization's momentum). Any other attribute the converter
  // does not read makes the import fail rather than be ignored.
  std::vector<std::string> ignored_attributes = {};
};

// The opset of the default domain that introduced `op_type`, for operators
// newer than opset 7 (the oldest graft imports); 1 for the others.
int64_t OnnxOperatorIntroducedIn(absl::string_view op_type);

// The converter for `op_type`, or null.
const OpConverter* FindOpConverter(absl::string_view op_type);

// Every supported op type, sorted.
std::vector<std::string> SupportedOnnxOps();

// The families, each adding its converters to the table.
void AddElementwiseConverters(std::vector<OpConverter>& table);
void AddNnConverters(std::vector<OpConverter>& table);
void AddShapeConverters(std::vector<OpConverter>& table);
void AddReduceConverters(std::vector<OpConverter>& table);
void AddConvTransposeConverters(std::vector<OpConverter>& table);
void AddResizeConverters(std::vector<OpConverter>& table);
void AddRearrangeConverters(std::vector<OpConverter>& table);
void AddRecurrentConverters(std::vector<OpConverter>& table);
void AddQuantizeConverters(std::vector<OpConverter>& table);
void AddGridSampleConverters(std::vector<OpConverter>& table);
// ONNX Runtime's com.microsoft.MatMulNBits, keyed by its qualified type.
void AddMatMulNBitsConverters(std::vector<OpConverter>& table);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_OPS_H_
