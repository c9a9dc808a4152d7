#include "backends/partitioner.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"

namespace graft {
namespace {

bool Computes(const Node& node) {
  return node.op() == OpCode::kCallFunction ||
         node.op() == OpCode::kCallModule;
}

std::string OpOf(const Node& node) {
  if (node.op() == OpCode::kCallFunction) return node.target();
  return absl::StrCat(OpCodeName(node.op()), " ", node.target());
}

}  // namespace

int PartitionPlan::backend_partitions() const {
  return static_cast<int>(
      std::count_if(partitions.begin(), partitions.end(),
                    [](const Partition& p) { return p.on_backend; }));
}

PartitionPlan PlanPartitions(
    const Module& module,
    const std::function<absl::Status(const Node&)>& can_run) {
  struct Placement {
    bool on_backend;
    int64_t stage;
  };
  absl::flat_hash_map<const Node*, Placement> placed;
  PartitionPlan plan;
  // (stage, side) -> group, ordered by stage; within a stage the two sides
  // read nothing of each other, so either may run first.
  std::map<std::pair<int64_t, bool>, Partition> groups;
  for (const Node* node : module.graph().nodes()) {
    if (!Computes(*node)) continue;
    Placement p{false, 0};
    if (node->is_call("getitem") && node->num_args() > 0 &&
        node->arg(0).is_node() && placed.contains(node->arg(0).node())) {
      p = placed.at(node->arg(0).node());
    } else {
      absl::Status s = can_run(*node);
      p.on_backend = s.ok();
      if (!s.ok()) {
        plan.breaks.push_back(
            {node->name(), OpOf(*node), std::string(s.message())});
      }
      for (const Node* input : node->inputs()) {
        auto it = placed.find(input);
        if (it == placed.end()) continue;  // Placeholders, get_attr.
        const Placement& q = it->second;
        p.stage = std::max(p.stage, q.stage + (q.on_backend != p.on_backend));
      }
    }
    placed.emplace(node, p);
    Partition& group = groups[{p.stage, !p.on_backend}];
    group.on_backend = p.on_backend;
    group.nodes.push_back(node);
  }
  for (auto& [key, group] : groups) plan.partitions.push_back(std::move(group));
  return plan;
}

}  // namespace graft
