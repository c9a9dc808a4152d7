#ifndef GRAFT_GRAPH_VERIFIER_H_
#define GRAFT_GRAPH_VERIFIER_H_

#include "absl/status/status.h"
#include "graph/graph.h"
#include "graph/module.h"

namespace graft {

// Checks the structural rules every graph must satisfy between passes:
// - every input is a live node of the same graph, defined before its user;
// - use-lists match the operands exactly: each node reference in a user's
//   args/kwargs has one Use{user, slot} in the input's uses(), and each Use
//   points back at such a reference;
// - node names are valid and unique;
// - call_function targets are registered ops and the arguments bind to the
//   op's schema; the recorded type agrees with the op's type rule where the
//   input types are known;
// - placeholder and get_attr nodes take no arguments; there is exactly one
//   output node, it is the last node, and it has one argument.
// Returns the first problem found, naming the node:
//   "verify: %relu_3 uses %add_7, which is defined after it".
// Runs in time linear in the number of nodes and operands.
absl::Status Verify(const Graph& graph);

// Verify(graph) plus what needs the module: get_attr targets name a tensor of
// the module (and the node's type, when known, is the tensor's type),
// call_module targets name a submodule, and every submodule verifies too
// (errors inside one say which: "verify: in submodule 'fused_0': ...").
absl::Status Verify(const Module& module);

}  // namespace graft

#endif  // GRAFT_GRAPH_VERIFIER_H_
