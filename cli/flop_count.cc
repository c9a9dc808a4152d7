#include "cli/flop_count.h"

#include <optional>

#include "graph/node.h"
#include "graph/op_traits.h"

namespace graft::cli {

int64_t CountMatmulFlops(const Graph& graph) {
  int64_t flops = 0;
  for (const Node* node : graph.nodes()) {
    if (KindOf(*node) != OpKind::kContraction) continue;
    std::optional<OpCost> cost = CostOf(*node);
    if (cost.has_value()) flops += cost->flops;
  }
  return flops;
}

}  // namespace graft::cli
