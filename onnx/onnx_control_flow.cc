#include "onnx/onnx_control_flow.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

using Names = absl::flat_hash_map<std::string, std::string>;

std::string Renamed(const Names& names, const std::string& name) {
  auto it = names.find(name);
  return it == names.end() ? name : it->second;
}

// Reads of the renamed names inside `g` (a subgraph of a branch's node,
// which may read the branch's values), at any depth. The names `g`
// declares itself (its inputs, initializers and node outputs: a nested
// Loop's counter may reuse the outer body's name) are its own there.
void RenameReads(onnx::GraphProto& g, const Names& outer) {
  Names names = outer;
  for (const onnx::ValueInfoProto& in : g.input()) names.erase(in.name());
  for (const onnx::TensorProto& init : g.initializer()) names.erase(init.name());
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& o : n.output()) names.erase(o);
  }
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

absl::StatusOr<InlinedGraph> InlineSubgraph(const onnx::GraphProto& graph, const std::string& prefix,
                                            const std::string& label, const std::vector<std::string>& inputs,
                                            const std::string& initializers_made_as) {
  if (graph.input_size() != static_cast<int>(inputs.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the subgraph has ", graph.input_size(), " inputs, where ", inputs.size(), " are bound"));
  }
  if (graph.sparse_initializer_size() > 0) {
    return absl::UnimplementedError("sparse initializers in a subgraph are not supported");
  }
  Names names;
  for (int i = 0; i < graph.input_size(); ++i) names[graph.input(i).name()] = inputs[i];
  const bool make_initializers = initializers_made_as.empty();
  for (const onnx::TensorProto& init : graph.initializer()) {
    names[init.name()] = (make_initializers ? prefix : initializers_made_as) + init.name();
  }
  for (const onnx::NodeProto& n : graph.node()) {
    for (const std::string& o : n.output()) {
      if (!o.empty()) names[o] = prefix + o;
    }
  }
  InlinedGraph inlined;
  for (const onnx::TensorProto& init : graph.initializer()) {
    if (!make_initializers) break;
    onnx::NodeProto& c = inlined.nodes.emplace_back();
    c.set_op_type("Constant");
    c.set_name(absl::StrCat(label, "/", init.name()));
    c.add_output(Renamed(names, init.name()));
    onnx::AttributeProto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const onnx::NodeProto& n : graph.node()) {
    onnx::NodeProto& copy = inlined.nodes.emplace_back(n);
    for (std::string& in : *copy.mutable_input()) in = Renamed(names, in);
    for (std::string& o : *copy.mutable_output()) o = Renamed(names, o);
    for (onnx::AttributeProto& a : *copy.mutable_attribute()) {
      if (a.has_g()) RenameReads(*a.mutable_g(), names);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) RenameReads(sub, names);
    }
  }
  for (const onnx::ValueInfoProto& out : graph.output()) inlined.outputs.push_back(Renamed(names, out.name()));
  return inlined;
}

onnx::NodeProto ScalarInt64Constant(const std::string& name, int64_t value) {
  onnx::NodeProto c;
  c.set_op_type("Constant");
  c.set_name(name);
  c.add_output(name);
  onnx::AttributeProto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_int64_data(value);
  return c;
}

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
  ASSIGN_OR_RETURN(InlinedGraph inlined, InlineSubgraph(*branch, prefix, node.name(), {}, ""));
  std::vector<onnx::NodeProto> nodes = std::move(inlined.nodes);
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty()) continue;
    onnx::NodeProto& out = nodes.emplace_back();
    out.set_op_type("Identity");
    out.set_name(absl::StrCat(node.name(), "/", branch_name, "_output", i));
    out.add_input(inlined.outputs[i]);
    out.add_output(node.output(i));
  }
  return nodes;
}

}  // namespace graft::onnx_import
