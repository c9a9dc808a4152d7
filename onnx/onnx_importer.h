#ifndef GRAFT_ONNX_ONNX_IMPORTER_H_
#define GRAFT_ONNX_ONNX_IMPORTER_H_

// The walk that turns an onnx::ModelProto into a graft Module: checks the
// opset, reads initializers and inputs, converts the nodes in order through
// the op table (onnx/onnx_ops.h), binds the outputs, and verifies the
// result. The public entry points are in onnx_import.h and
// onnx_import_model.h.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "onnx/onnx_contrib_ops.h"
#include "onnx/onnx_functions.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_import_state.h"
#include "onnx/onnx_sequences.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The opsets of the default domain graft imports.
inline constexpr int64_t kMinOpset = 7;
// Opsets 21 and 22 changed the supported operators' types only (int4,
// float8 and bfloat16 added; GroupNormalization's per-channel scale, which
// its converter takes at any opset). 23 added Attention, RMSNormalization
// and RotaryEmbedding (onnx_function_ops.h), QuantizeLinear's `precision`
// and DequantizeLinear's `output_dtype`, and float4 types; 24 Swish,
// TensorScatter (not supported), Attention's nonpad_kv_seqlen (refused),
// Cast's `round_mode` (for float8e8m0 only) and more types.
inline constexpr int64_t kMaxOpset = 24;

// Imports one model. Single use.
class OnnxImporter {
 public:
  // `source` names the model in errors (its path); `base_dir` is where
  // external data lives.
  OnnxImporter(const onnx::ModelProto& model, std::string source,
               std::string base_dir, const OnnxImportOptions& options);

  absl::StatusOr<Module> Import();

 private:
  absl::Status CheckOpset();
  absl::Status AddInitializers();
  absl::Status AddInputs();
  absl::StatusOr<TensorType> InputType(const onnx::ValueInfoProto& input);
  absl::Status ConvertNodes();
  // Where a node being converted came from.
  struct Expanded {
    // The model's node it was expanded from (a local function's call, an
    // If, a QOperator or fused operator), which errors and provenance name
    // instead; null for the model's own nodes.
    const onnx::NodeProto* origin = nullptr;
    // Made by graft (a fused operator's parts) rather than written in the
    // model (a function's body, an If's branch).
    bool generated = false;
    int depth = 0;  // How many expansions deep.
  };
  absl::Status ConvertAny(const onnx::NodeProto& node, int index, const Expanded& from);
  absl::Status ConvertNode(const onnx::NodeProto& node, int index, const Expanded& from);
  std::string CallId(const onnx::NodeProto& call, const onnx::FunctionProto& f);
  void MarkConsumed(const onnx::NodeProto& node);
  void MarkConsumed(const onnx::GraphProto& graph);
  absl::StatusOr<std::vector<onnx::NodeProto>> ExpandKnownIf(const onnx::NodeProto& node);
  absl::Status ConvertKnownLoop(const onnx::NodeProto& node, int index, const Expanded& from);
  absl::StatusOr<Tensor> KnownLoopValue(const std::string& name, const std::string& what);
  std::string UniqueExpansionId(const std::string& base);
  absl::Status ConvertExpansion(const onnx::NodeProto& node, int index, const Expanded& from,
                                const std::vector<onnx::NodeProto>& nodes, bool generated);
  absl::Status CheckOutputsMade(const onnx::NodeProto& node);
  // The types of the values converted so far, for expansions.
  ValueTypeLookup Types();
  absl::Status AddOutputs();

  // "<source>: <message>", keeping the code.
  absl::Status Error(const absl::Status& status) const;

  const onnx::ModelProto& model_;
  LocalFunctions functions_;  // Sizes memoized as calls are met.
  Sequences sequences_;        // The sequences made so far, by name.
  // The names given to inlined calls' own values (onnx_functions.h).
  absl::flat_hash_map<std::string, int> call_ids_;  // Calls so far per prefix.
  int64_t expanded_nodes_ = 0;  // Made by expansions so far,
  int64_t expanded_bytes_ = 0;  // and their size.
  ImportState state_;
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_IMPORTER_H_
