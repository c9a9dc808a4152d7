#ifndef GRAFT_ONNX_ONNX_CONTRIB_OPS_H_
#define GRAFT_ONNX_ONNX_CONTRIB_OPS_H_

// ONNX Runtime's fused operators (domain com.microsoft, and
// SimplifiedLayerNormalization, which it registers in the default
// domain), as its graph optimizer and its transformer optimizer
// (onnxruntime.transformers.optimizer) write them into saved models: Gelu,
// FastGelu, BiasGelu, QuickGelu, FusedMatMul, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization, BiasAdd,
// BiasSoftmax, FusedConv, FusedGemm, Attention, MultiHeadAttention,
// EmbedLayerNormalization and RotaryEmbedding. Each is imported as the
// default-domain nodes that define it (onnx_expansion.h): the form the
// model had before ONNX Runtime fused it, which graft's own passes fuse
// again for its backends. (MatMulNBits, whose packed weights stay packed,
// is a converter of its own: onnx_ops_matmul_nbits.cc.)

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/onnx_expansion.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {


// Whether `node` is one of them. (ONNX Runtime also registers
// LayerNormalization in the default domain at every opset, which its
// optimizer writes into models of opsets below 17, where ONNX has none:
// graft imports that one at every opset too, onnx_ops.cc.)
bool IsContribOp(const onnx::NodeProto& node);

// Their op types, those of other domains as "com.microsoft.Attention".
std::vector<std::string> ContribOpTypes();

// The nodes `node` stands for, in order.
absl::StatusOr<std::vector<onnx::NodeProto>> ExpandContribOp(const onnx::NodeProto& node,
                                                             int64_t model_opset,
                                                             const ValueTypeLookup& types);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_CONTRIB_OPS_H_
