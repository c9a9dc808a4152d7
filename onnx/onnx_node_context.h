#ifndef GRAFT_ONNX_ONNX_NODE_CONTEXT_H_
#define GRAFT_ONNX_ONNX_NODE_CONTEXT_H_

// What an op converter (onnx/onnx_ops.h) sees of the import: the ONNX
// node, its inputs as graft nodes or known contents, its attributes, and a
// way to create graft nodes and bind the node's outputs. Errors returned
// from here need not name the node: the importer adds file, node name and
// op type in front.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/argument.h"
#include "graph/node.h"
#include "graph/tensor.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_folding.h"
#include "onnx/onnx_import_state.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The conversion of one ONNX node.
class NodeContext {
 public:
  NodeContext(ImportState& state, const onnx::NodeProto& node)
      : state_(state), node_(node), attrs_(node) {}

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return state_.opset(); }
  NodeAttributes& attrs() { return attrs_; }
  const Folder& folder() const { return state_.folder(); }
  // For tensors stored outside the model (a Constant's value may be).
  ExternalDataReader& external() { return state_.external(); }

  // --- Inputs -------------------------------------------------------------
  int num_inputs() const { return node_.input_size(); }
  // Input i is given (optional inputs may be absent or named "").
  bool HasInput(int i) const;
  // Input i as a graft node (known contents are materialized). `what`
  // names the input in the error for a missing one ("B", "the scale").
  absl::StatusOr<Node*> Input(int i, absl::string_view what = "");
  absl::StatusOr<TensorType> InputType(int i);
  // The contents of input i when fully known, else null.
  const Tensor* Constant(int i);
  // The contents of input i when known (possibly up to symbolic dims) and
  // small enough to evaluate at import time.
  std::optional<FoldValue> Folded(int i);
  // Inputs 0..n-1 when the node has exactly n inputs, each given and
  // Folded(); nullopt otherwise.
  std::optional<std::vector<FoldValue>> FoldedInputs(int n);
  // Input i as a list of integers known at import time (a 0-D or 1-D
  // integer tensor). `what` names it in errors: "the shape input".
  absl::StatusOr<std::vector<int64_t>> ConstantInts(int i,
                                                    absl::string_view what);
  // As ConstantInts; nullopt when the input is absent.
  absl::StatusOr<std::optional<std::vector<int64_t>>> OptionalConstantInts(
      int i, absl::string_view what);
  // A list of integers that the operator's versions before opset
  // `input_since` take as the attribute `name` and later ones as input i
  // (Squeeze's axes: an attribute up to opset 12, an input from 13), read
  // from whichever the model's opset has; nullopt when absent. Input i in
  // a model of an older opset is an error, as is the attribute in a newer.
  absl::StatusOr<std::optional<std::vector<int64_t>>> OptionalIntsOperand(
      int i, absl::string_view name, int64_t input_since);
  // A one-element input known at import time, as a literal argument,
  // when that does not change the result's rank (its rank is at most
  // `other_rank`); otherwise the input's node. Graft's scalar literals
  // keep the other operand's dtype, as ONNX's equal dtypes require.
  absl::StatusOr<Argument> NodeOrScalar(int i, int64_t other_rank);
  // A one-element known input as a literal; nullopt if not known.
  std::optional<Argument> ScalarLiteral(int i);

  // --- Outputs ------------------------------------------------------------
  int num_outputs() const { return node_.output_size(); }
  // Output i exists and something reads it.
  bool OutputUsed(int i) const;
  // An error when output i is read: "output 'mask' is not supported".
  absl::Status RequireUnused(int i, absl::string_view what);
  absl::Status SetOutput(int i, Node* node);
  // A value known at import time (possibly up to symbolic dims).
  absl::Status SetOutputValue(int i, FoldValue value);
  absl::Status SetOutputConstant(int i, Tensor value);
  // Output i is input j (Identity, Dropout at inference).
  absl::Status AliasOutput(int i, int j);

  // --- Creating nodes -----------------------------------------------------
  // A call_function node of the core op `op`, typed by the op's rule (an
  // error from the rule, such as mismatched shapes, is returned).
  absl::StatusOr<Node*> Call(absl::string_view op, std::vector<Argument> args,
                             Kwargs kwargs = {});
  // A node holding `value` (a module tensor read by get_attr, named after
  // the node's first output and `suffix`).
  absl::StatusOr<Node*> ConstantNode(Tensor value, absl::string_view suffix);
  // Its single result type, or an error when it is unknown.
  absl::StatusOr<TensorType> TypeOf(const Node* node) const;

  // Errors for converters.
  static absl::Status Unsupported(absl::string_view what);
  static absl::Status Invalid(absl::string_view what);

 private:
  absl::StatusOr<OnnxValue*> Value(int i, absl::string_view what);
  absl::StatusOr<OnnxValue*> DefineOutput(int i);

  ImportState& state_;
  const onnx::NodeProto& node_;
  NodeAttributes attrs_;
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_NODE_CONTEXT_H_
