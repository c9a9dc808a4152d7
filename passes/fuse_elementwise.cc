#include "passes/fuse_elementwise.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/op_traits.h"
#include "passes/node_util.h"
#include "passes/outline.h"
#include "support/status_macros.h"

namespace graft::passes {

absl::StatusOr<bool> FuseElementwisePass::Run(Module& module,
                                              PassContext& ctx) {
  Graph& graph = module.graph();
  // Walking backwards, a consumer has its group before its producers are
  // seen: a pointwise producer whose only user is a pointwise consumer takes
  // the consumer's group, any other pointwise node starts a group.
  absl::flat_hash_map<const Node*, int64_t> group_of;
  int64_t num_groups = 0;
  for (Node* n : graph.reversed_nodes()) {
    if (KindOf(*n) != OpKind::kPointwise) continue;
    auto [it, inserted] = group_of.try_emplace(n, num_groups);
    if (inserted) ++num_groups;
    const int64_t group = it->second;
    for (Node* in : n->unique_inputs()) {
      if (KindOf(*in) == OpKind::kPointwise && AllUsesBy(in, n)) group_of[in] = group;
    }
  }
  // Members in graph order.
  std::vector<std::vector<Node*>> groups(num_groups);
  for (Node* n : graph.nodes()) {
    auto it = group_of.find(n);
    if (it != group_of.end()) groups[it->second].push_back(n);
  }
  bool changed = false;
  int64_t next_name = 0;
  // Groups were numbered from the end; outline them in graph order.
  for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
    if (g->size() < 2) continue;
    std::string name;
    do {
      name = absl::StrCat("fused_", next_name++);
    } while (module.FindSubmodule(name) != nullptr);
    RETURN_IF_ERROR(OutlineNodes(module, *g, name, &ctx).status());
    changed = true;
  }
  return changed;
}

}  // namespace graft::passes
