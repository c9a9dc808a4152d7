#include "onnx/onnx_import_state.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "onnx/onnx_names.h"

namespace graft::onnx_import {
namespace {

// Uniform constants of more elements than this become a `full` node
// rather than a module tensor.
constexpr int64_t kFullThreshold = 16;

bool IsUniform(const Tensor& t) {
  const size_t size = DTypeSize(t.dtype());
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  for (int64_t i = 1; i < t.NumElements(); ++i) {
    if (std::memcmp(bytes, bytes + i * size, size) != 0) return false;
  }
  return true;
}

}  // namespace

Argument ScalarArgument(const Tensor& t) {
  if (IsFloatingPoint(t.dtype())) return Argument(t.GetAsDouble(0));
  if (t.dtype() == DType::kBool) return Argument(t.GetAsDouble(0) != 0);
  if (t.dtype() == DType::kI64) return Argument(t.data<int64_t>()[0]);
  return Argument(static_cast<int64_t>(t.GetAsDouble(0)));
}

ImportState::ImportState(std::string source, std::string base_dir,
                         const OnnxImportOptions& options)
    : source_(std::move(source)),
      options_(options),
      folder_(options.max_folded_elements),
      external_(std::move(base_dir)) {}

OnnxValue* ImportState::Find(absl::string_view name) {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  OnnxValue* v = &it->second;
  while (v->alias != nullptr) v = v->alias;
  return v;
}

absl::StatusOr<OnnxValue*> ImportState::Define(absl::string_view name) {
  auto [it, inserted] = values_.try_emplace(std::string(name));
  if (!inserted) {
    return absl::InvalidArgumentError(
        absl::StrCat("value '", name,
                     "' is defined more than once (ONNX graphs assign "
                     "each name once)"));
  }
  return &it->second;
}

std::optional<FoldValue> ImportState::Folded(const OnnxValue& value) const {
  if (value.symbolic.has_value()) return value.symbolic;
  if (value.constant.has_value() &&
      value.constant->NumElements() <= options_.max_folded_elements) {
    return FoldValue::FromTensor(*value.constant);
  }
  return std::nullopt;
}

void ImportState::Annotate(Node* node) const {
  node->meta().location = SourceLocation{source_, origin_.index + 1, 0};
  node->meta().entries[kOnnxNodeKey] = origin_.name;
  node->meta().entries[kOnnxOpKey] = origin_.op_type;
}

absl::StatusOr<Node*> ImportState::Materialize(absl::string_view name,
                                               OnnxValue& value) {
  if (value.node != nullptr) return value.node;
  if (value.symbolic.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value '", name, "' is computed from the symbolic dim ",
        value.symbolic->SymbolNames(),
        " and graft has no op that reads a shape at run time; give the "
        "inputs static shapes (OnnxImportOptions::input_shapes or "
        "dim_values)"));
  }
  if (!value.constant.has_value()) {
    return absl::InternalError(
        absl::StrCat("value '", name, "' has neither a node nor contents"));
  }
  const Tensor& t = *value.constant;
  Graph& graph = module_.graph();
  if (value.initializer.empty() && t.NumElements() > kFullThreshold &&
      IsUniform(t)) {
    std::vector<int64_t> dims = t.dims();
    Node* full =
        graph.CallFunction("full", {Argument::IntList(dims), ScalarArgument(t)},
                           {{"dtype", Argument(t.dtype())}});
    Annotate(full);
    full->set_type(t.type());
    full->meta().entries[kOnnxValueKey] = std::string(name);
    value.node = full;
    return full;
  }
  const std::string& base =
      value.initializer.empty() ? std::string(name) : value.initializer;
  std::string tensor_name =
      module_.UniqueTensorName(SanitizeName(base, "constant"));
  module_.SetTensor(tensor_name, t);
  Node* get = graph.GetAttr(tensor_name, t.type());
  get->meta().location = SourceLocation{source_, 0, 0};
  get->meta().entries[kOnnxValueKey] = std::string(name);
  value.node = get;
  return get;
}

}  // namespace graft::onnx_import
