#ifndef GRAFT_ONNX_ONNX_EXPANSION_H_
#define GRAFT_ONNX_ONNX_EXPANSION_H_

// The ONNX nodes one node stands for. Operators outside ONNX's default
// domain (ONNX Runtime's quantized and fused com.microsoft operators) are
// imported as the default-domain nodes that define them, which the importer
// converts like the model's own (onnx_importer.cc): each converter keeps its
// checks, and what they become is what the plain ONNX form becomes, so the
// passes see one form.
//
// New values are named after the node's first output ("y::what"), which is
// unique in the model.

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor_type.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The type of a value converted so far, when known: ranks and static sizes
// decide the permutations and splits of some expansions.
using ValueTypeLookup = std::function<std::optional<TensorType>(const std::string& name)>;

// The static size of dim `dim` (negative from the end) of value `name`,
// and its rank; errors name it as `what`.
absl::StatusOr<int64_t> StaticDimOf(const ValueTypeLookup& types, const std::string& name, int64_t dim,
                                    const std::string& what);
absl::StatusOr<int64_t> RankOf(const ValueTypeLookup& types, const std::string& name, const std::string& what);

class NodeExpansion {
 public:
  explicit NodeExpansion(const onnx::NodeProto& node) : node_(node) {}

  // Input i's name, "" when absent.
  std::string In(int i) const { return i < node_.input_size() ? node_.input(i) : ""; }
  bool Has(int i) const { return !In(i).empty(); }
  // Output i's name, "" when absent (an output nobody reads).
  std::string Out(int i) const { return i < node_.output_size() ? node_.output(i) : ""; }

  // A new value's name, after the node's output.
  std::string Value(const std::string& what) const;

  onnx::NodeProto& Add(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::string& output);
  // Add with a new value as the output: its name.
  std::string AddValue(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::string& what);

  // Constants' value names.
  std::string Constant(float v, const std::string& what);
  std::string ConstantInts(const std::vector<int64_t>& v, const std::string& what);

  std::string Cast(const std::string& value, int32_t to, const std::string& what);

  // The length of dim `dim` of x, as a 0-D i64 value.
  std::string DimLength(const std::string& x, int64_t dim, const std::string& what);
  // 0, 1, ..., n - 1 (i64) for a 0-D i64 n.
  std::string Arange(const std::string& n, const std::string& what);
  // Slice of x along `axis` from `from` to `to` by `step`.
  std::string SliceOf(const std::string& x, int64_t axis, int64_t from, int64_t to, const std::string& what,
                      int64_t step = 1);
  // Unsqueeze or Squeeze of x at `axes`, in the form of `opset` (the axes an
  // attribute before 13, an input from then on).
  std::string Unsqueeze(const std::string& x, const std::vector<int64_t>& axes, int64_t opset,
                        const std::string& what);
  std::string Squeeze(const std::string& x, const std::vector<int64_t>& axes, int64_t opset,
                      const std::string& what);
  // Transpose of x by `perm`.
  std::string Permute(const std::string& x, const std::vector<int64_t>& perm, const std::string& what);
  // [B, S, heads * size] -> [B, heads, S, size] (the default `perm`), or
  // another order of [B, S, heads, size] ({0, 2, 3, 1}: keys transposed).
  std::string SplitHeads(const std::string& x, int64_t heads, const std::string& what,
                         const std::vector<int64_t>& perm = {0, 2, 1, 3});

  // The node's attributes but `except`, copied to `to`.
  void CopyAttributes(onnx::NodeProto& to, const std::set<std::string>& except = {}) const;
  const onnx::AttributeProto* Attribute(const std::string& name) const;
  // The attribute `name` if the node has it with `type`. One of another
  // type is null here and an error in status(), as are the getters' below.
  const onnx::AttributeProto* Typed(const std::string& name, onnx::AttributeProto::AttributeType type) const;
  // An INT, FLOAT or STRING attribute's value, or `fallback` where the node
  // has none.
  int64_t IntAttribute(const std::string& name, int64_t fallback) const;
  float FloatAttribute(const std::string& name, float fallback) const;
  std::string StringAttribute(const std::string& name, const std::string& fallback = "") const;
  // The first attribute of the wrong type read, or OK: the expansion's
  // entry point returns it after the expander ran.
  const absl::Status& status() const { return status_; }
  // An error naming any attribute of the node outside `known`: one the
  // expansion would otherwise drop without meaning to.
  absl::Status RefuseOtherAttributes(const std::set<std::string>& known) const;
  // An error unless the node has `count` inputs (optional ones may be
  // named "") and output 0.
  absl::Status RequireInputs(int count) const;

  static void SetInt(onnx::NodeProto& n, const std::string& name, int64_t v);
  static void SetInts(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
  static void SetFloat(onnx::NodeProto& n, const std::string& name, float v);
  static void SetString(onnx::NodeProto& n, const std::string& name, const std::string& v);

  const onnx::NodeProto& node() const { return node_; }
  std::vector<onnx::NodeProto> Take() { return std::move(nodes_); }

 private:
  const onnx::NodeProto& node_;
  std::vector<onnx::NodeProto> nodes_;
  mutable absl::Status status_;
};

// Tables of expansions are keyed by "domain/op_type" ("" for ONNX's own
// domain, however the node spells it).
std::string ExpansionKey(const onnx::NodeProto& node);
// The key's op type as errors and lists show it: "com.microsoft.QGemm",
// "QLinearConv".
std::string OpTypeOfExpansionKey(const std::string& key);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_EXPANSION_H_
