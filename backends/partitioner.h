#ifndef GRAFT_BACKENDS_PARTITIONER_H_
#define GRAFT_BACKENDS_PARTITIONER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft {

// A node a backend cannot run, which the interpreter runs instead.
struct GraphBreak {
  std::string node;    // "%gelu_2"
  std::string op;      // "gelu", or "call_module block"
  std::string reason;  // Why the backend refused it.
};

// One group of nodes that runs on one side, in graph order.
struct Partition {
  bool on_backend = false;  // Else the interpreter runs it.
  std::vector<const Node*> nodes;
};

// How a module splits between a backend and the interpreter.
struct PartitionPlan {
  std::vector<Partition> partitions;  // In an order that runs correctly.
  std::vector<GraphBreak> breaks;     // In graph order.

  int backend_partitions() const;
};

// Splits the computing nodes of `module` (call_function, call_module) by
// whether `can_run` accepts them, into as few groups as it can without a
// cycle between groups: each node gets a stage, the largest over the nodes
// it reads of their stage, plus one where that node is on the other side.
// Nodes of one side and one stage form one group; as every edge between
// groups goes to a higher stage, running groups by stage is a valid order,
// and along any path the groups change only where the side changes. The
// groups are the largest such (nodes need not be consecutive in the graph,
// and a group may join parts that do not touch each other). getitem nodes
// join the group of the tuple they read, so only tensors cross between
// groups. Placeholders, get_attr and the output node belong to no group.
PartitionPlan PlanPartitions(
    const Module& module,
    const std::function<absl::Status(const Node&)>& can_run);

}  // namespace graft

#endif  // GRAFT_BACKENDS_PARTITIONER_H_
