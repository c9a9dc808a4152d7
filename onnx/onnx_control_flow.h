#ifndef GRAFT_ONNX_ONNX_CONTROL_FLOW_H_
#define GRAFT_ONNX_ONNX_CONTROL_FLOW_H_

// ONNX's If where its condition is known at import (shape arithmetic that
// folds, a flag an exporter wrote as a constant): the branch it takes,
// inlined; and Loop where its trip count and condition are known: every
// iteration's body, inlined one after another (onnx_importer.cc). graft's
// graphs have no control flow, so an If or Loop that decides at run time
// is refused by name.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "onnx/onnx_pb.h"

namespace graft::onnx_import {

// The nodes of the branch `condition` (one element, any type: nonzero is
// true) picks: its initializers as Constant nodes, its nodes, and an
// Identity from each branch output to the If's.
absl::StatusOr<std::vector<onnx::NodeProto>> ExpandIf(const onnx::NodeProto& node, const Tensor& condition);

// A subgraph's nodes to be converted in the graph around it.
struct InlinedGraph {
  std::vector<onnx::NodeProto> nodes;
  // The names the subgraph's outputs have there.
  std::vector<std::string> outputs;
};

// `graph` inlined: its initializers as Constant nodes, its nodes with the
// values it makes renamed `prefix + name` (sibling subgraphs, and the
// iterations of a Loop, use the same names), its formal inputs read as
// `inputs` (one name each) and anything else it reads from the graph
// around it. `label` names the Constant nodes. Where
// `initializers_made_as` is given, the initializers are not made: they are
// read as that prefix + their name (a Loop makes them once for every
// iteration).
absl::StatusOr<InlinedGraph> InlineSubgraph(const onnx::GraphProto& graph, const std::string& prefix,
                                            const std::string& label, const std::vector<std::string>& inputs,
                                            const std::string& initializers_made_as);

// A Constant node whose output `name` is the 0-D i64 `value`.
onnx::NodeProto ScalarInt64Constant(const std::string& name, int64_t value);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_CONTROL_FLOW_H_
