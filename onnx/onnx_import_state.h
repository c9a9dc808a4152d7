#ifndef GRAFT_ONNX_ONNX_IMPORT_STATE_H_
#define GRAFT_ONNX_ONNX_IMPORT_STATE_H_

// What the ONNX importer knows while it walks a model's nodes: the module
// being built and, for every ONNX value name, either the graft node that
// computes it or its contents when they are known at import time
// (initializers, Constant nodes, folded shape arithmetic). Known values
// become graft nodes only when an op needs them as a tensor: an initializer
// that only feeds a Reshape's shape never reaches the module.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/module.h"
#include "graph/node.h"
#include "graph/tensor.h"
#include "onnx/onnx_external_data.h"
#include "onnx/onnx_folding.h"
#include "onnx/onnx_import.h"

namespace graft::onnx_import {

// One ONNX value.
struct OnnxValue {
  // The graft node computing it; made on demand for known values.
  Node* node = nullptr;
  // Its contents, when known.
  std::optional<Tensor> constant;
  // Its contents up to symbolic dims, when known only so (never set
  // together with `constant`).
  std::optional<FoldValue> symbolic;
  std::optional<TensorType> type;
  // Set for model initializers: the get_attr reads a tensor of this name.
  std::string initializer;
  // Identity and friends: the value this one is, or null.
  OnnxValue* alias = nullptr;
};

// Where the nodes being created come from, for their meta.
struct OnnxNodeOrigin {
  std::string name;     // The ONNX node's name, or "#<index>" if it has none.
  std::string op_type;  // With the domain in front when not the default one.
  int index = -1;       // Position in the graph's node list.
};

// The state of one import.
class ImportState {
 public:
  ImportState(std::string source, std::string base_dir,
              const OnnxImportOptions& options);

  Module& module() { return module_; }
  const std::string& source() const { return source_; }
  const OnnxImportOptions& options() const { return options_; }
  const Folder& folder() const { return folder_; }
  ExternalDataReader& external() { return external_; }
  int64_t opset() const { return opset_; }
  void set_opset(int64_t opset) { opset_ = opset; }

  // The value named `name` (aliases followed), or null.
  OnnxValue* Find(absl::string_view name);
  // A new value; an error if `name` is defined already (ONNX graphs are
  // single assignment).
  absl::StatusOr<OnnxValue*> Define(absl::string_view name);

  // Names that some node or graph output reads.
  void MarkConsumed(absl::string_view name) {
    consumed_.insert(std::string(name));
  }
  bool IsConsumed(absl::string_view name) const {
    return consumed_.contains(name);
  }

  // The contents of `value` when known and at most the folding limit in
  // size (symbolic ones included).
  std::optional<FoldValue> Folded(const OnnxValue& value) const;

  // A node carrying `value` (named `name`): its own node, or for known
  // contents a get_attr of a module tensor (a `full` for big uniform
  // values). An error for values known only up to symbolic dims, which
  // graft cannot compute at run time.
  absl::StatusOr<Node*> Materialize(absl::string_view name, OnnxValue& value);

  // The ONNX node whose conversion is under way; Annotate records it in the
  // meta of the nodes created for it.
  void set_origin(OnnxNodeOrigin origin) { origin_ = std::move(origin); }
  const OnnxNodeOrigin& origin() const { return origin_; }
  void Annotate(Node* node) const;

 private:
  Module module_;
  std::string source_;
  OnnxImportOptions options_;
  Folder folder_;
  ExternalDataReader external_;
  int64_t opset_ = 0;
  absl::node_hash_map<std::string, OnnxValue> values_;
  absl::flat_hash_set<std::string> consumed_;
  OnnxNodeOrigin origin_;
};

// The first element of `t` as a literal: a double for floating-point
// dtypes, a bool for bool, an int otherwise.
Argument ScalarArgument(const Tensor& t);

// The meta entry keys the importer sets on every node it creates.
inline constexpr char kOnnxNodeKey[] = "onnx.node";
inline constexpr char kOnnxOpKey[] = "onnx.op_type";
inline constexpr char kOnnxValueKey[] = "onnx.value";

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_IMPORT_STATE_H_
