#include "onnx/onnx_control_flow.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graft::onnx_import {

absl::StatusOr<std::vector<onnx::NodeProto>> ExpandIf(const onnx::NodeProto& node, const Tensor& condition) {
  if (condition.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the condition has ", condition.NumElements(), " elements, not one"));
  }
  const std::string branch_name = condition.GetAsDouble(0) != 0 ? "then_branch" : "else_branch";
  const onnx::GraphProto* branch = nullptr;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == branch_name && a.has_g()) branch = &a.g();
  }
  if (branch == nullptr) return absl::InvalidArgumentError(absl::StrCat("has no ", branch_name));
  if (branch->output_size() != node.output_size()) {
    return absl::InvalidArgumentError(absl::StrCat("its ", branch_name, " has ", branch->output_size(),
                                                   " outputs, but the If has ", node.output_size()));
  }
  if (branch->input_size() > 0 || branch->sparse_initializer_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("its ", branch_name, " has inputs or sparse initializers, which an If's branch cannot"));
  }
  std::vector<onnx::NodeProto> nodes;
  for (const onnx::TensorProto& init : branch->initializer()) {
    onnx::NodeProto& c = nodes.emplace_back();
    c.set_op_type("Constant");
    c.set_name(absl::StrCat(node.name(), "/", init.name()));
    c.add_output(init.name());
    onnx::AttributeProto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const onnx::NodeProto& n : branch->node()) nodes.push_back(n);
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    onnx::NodeProto& out = nodes.emplace_back();
    out.set_op_type("Identity");
    out.set_name(absl::StrCat(node.name(), "/", branch_name, "_output", i));
    out.add_input(branch->output(i).name());
    out.add_output(node.output(i));
  }
  return nodes;
}

}  // namespace graft::onnx_import
