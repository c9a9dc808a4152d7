#ifndef GRAFT_ONNX_ONNX_FUNCTION_OPS_H_
#define GRAFT_ONNX_ONNX_FUNCTION_OPS_H_

// The operators of opsets 23 and 24 that ONNX defines as functions of older
// ones, imported as those ops (onnx_expansion.h): Attention (what PyTorch
// exports scaled_dot_product_attention as from opset 23), RMSNormalization,
// RotaryEmbedding and Swish. Attention follows the specification's current
// function body: bottom-right causal masks after past keys, grouped-query
// heads repeated in place (query head i reads key head i / (q_heads /
// kv_heads)), softcap before the mask, and rows whose every key is masked
// giving zeros.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_contrib_ops.h"
#include "onnx/onnx_expansion.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// Whether `node` is one of them.
bool IsFunctionOp(const onnx::NodeProto& node);

std::vector<std::string> FunctionOpTypes();

// Where a rotary embedding's operands are: ONNX's order (X, cos, sin,
// positions) or ONNX Runtime's (input, positions, cos, sin).
struct RotaryOperands {
  int x = 0, cos = 1, sin = 2;
  int positions = -1;              // -1: none, the caches are [B, S, dim / 2].
  bool offset_positions = false;   // ONNX Runtime's: a [1] offset is offset + 0..S-1.
  bool head_size_from_cache = false;  // ONNX Runtime's: 3-D X without num_heads.
};
// The rotation, shared by both operators (onnx_contrib_ops.cc's).
absl::Status ExpandRotaryEmbedding(NodeExpansion& e, const ValueTypeLookup& types, const RotaryOperands& o);

absl::StatusOr<std::vector<onnx::NodeProto>> ExpandFunctionOp(const onnx::NodeProto& node, int64_t model_opset,
                                                              const ValueTypeLookup& types);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_FUNCTION_OPS_H_
