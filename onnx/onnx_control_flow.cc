#include "onnx/onnx_control_flow.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace graft::onnx_import {
namespace {

using Names = absl::flat_hash_map<std::string, std::string>;

std::string Renamed(const Names& names, const std::string& name) {
  auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

// Reads of the renamed names inside `g` (a subgraph of a branch's node,
// which may read the branch's values), at any depth.
void RenameReads(onnx::GraphProto& g, const Names& names) {
  for (onnx::NodeProto& n : *g.mutable_node()) {
    for (std::string& in : *n.mutable_input()) in = Renamed(names, in);
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) RenameReads(*a.mutable_g(), names);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) RenameReads(sub, names);
    }
  }
  for (onnx::ValueInfoProto& out : *g.mutable_output()) out.set_name(Renamed(names, out.name()));
}

}  // namespace

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
  // The branch's own values, renamed after the If: sibling subgraphs may
  // use the same local names (ONNX forbids only shadowing outer ones).
  const std::string prefix = absl::StrCat(node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                                                           : node.name(),
                                          "::", branch_name, "::");
  Names names;
  for (const onnx::TensorProto& init : branch->initializer()) names[init.name()] = prefix + init.name();
  for (const onnx::NodeProto& n : branch->node()) {
    for (const std::string& o : n.output()) {
      if (!o.empty()) names[o] = prefix + o;
    }
  }
  std::vector<onnx::NodeProto> nodes;
  for (const onnx::TensorProto& init : branch->initializer()) {
    onnx::NodeProto& c = nodes.emplace_back();
    c.set_op_type("Constant");
    c.set_name(absl::StrCat(node.name(), "/", init.name()));
    c.add_output(Renamed(names, init.name()));
    onnx::AttributeProto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const onnx::NodeProto& n : branch->node()) {
    onnx::NodeProto& copy = nodes.emplace_back(n);
    for (std::string& in : *copy.mutable_input()) in = Renamed(names, in);
    for (std::string& o : *copy.mutable_output()) o = Renamed(names, o);
    for (onnx::AttributeProto& a : *copy.mutable_attribute()) {
      if (a.has_g()) RenameReads(*a.mutable_g(), names);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) RenameReads(sub, names);
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    onnx::NodeProto& out = nodes.emplace_back();
    out.set_op_type("Identity");
    out.set_name(absl::StrCat(node.name(), "/", branch_name, "_output", i));
    out.add_input(Renamed(names, branch->output(i).name()));
    out.add_output(node.output(i));
  }
  return nodes;
}

}  // namespace graft::onnx_import
