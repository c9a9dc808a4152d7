#ifndef GRAFT_ONNX_ONNX_ATTRIBUTES_H_
#define GRAFT_ONNX_ONNX_ATTRIBUTES_H_

// Typed access to an ONNX node's attributes. Each read checks the
// attribute's type and remembers the name, so that after converting a node
// the importer can refuse attributes no converter looked at (an attribute
// graft ignored would silently change the meaning).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The attributes of one ONNX node.
class NodeAttributes {
 public:
  explicit NodeAttributes(const onnx::NodeProto& node) : node_(node) {}

  // Null if absent. Marks the attribute as read.
  const onnx::AttributeProto* Find(absl::string_view name);
  bool Has(absl::string_view name) const;

  // Each returns the default (or nullopt) when the attribute is absent and
  // an error naming the attribute when it has another type or refers to a
  // function's attribute (ref_attr_name), which graft does not resolve.
  absl::StatusOr<int64_t> Int(absl::string_view name, int64_t default_value);
  absl::StatusOr<std::optional<int64_t>> OptionalInt(absl::string_view name);
  absl::StatusOr<float> Float(absl::string_view name, float default_value);
  absl::StatusOr<std::optional<float>> OptionalFloat(absl::string_view name);
  absl::StatusOr<std::optional<std::vector<std::string>>> Strings(
      absl::string_view name);
  absl::StatusOr<std::string> String(absl::string_view name,
                                     absl::string_view default_value);
  absl::StatusOr<std::optional<std::vector<int64_t>>> Ints(
      absl::string_view name);
  absl::StatusOr<std::optional<std::vector<float>>> Floats(
      absl::string_view name);
  // A TENSOR attribute.
  absl::StatusOr<const onnx::TensorProto*> Tensor(absl::string_view name);

  // Marks names as read without reading them: attributes that do not
  // change inference results (Dropout's seed, BatchNormalization's
  // momentum).
  void Ignore(absl::string_view name) { read_.insert(std::string(name)); }

  // The names of attributes present but never read, for the error the
  // importer gives.
  std::vector<std::string> Unread() const;

 private:
  // The attribute `name` if present with `type`; an error if present with
  // another type.
  absl::StatusOr<const onnx::AttributeProto*> Typed(
      absl::string_view name, onnx::AttributeProto::AttributeType type);

  const onnx::NodeProto& node_;
  absl::flat_hash_set<std::string> read_;
};

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_ATTRIBUTES_H_
