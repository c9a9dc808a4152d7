#ifndef GRAFT_CLI_FLOP_COUNT_H_
#define GRAFT_CLI_FLOP_COUNT_H_

// Floating-point work of a graph, for throughput figures (GFLOP/s).

#include <cstdint>

#include "graph/graph.h"

namespace graft::cli {

// The multiply-adds of the graph's contractions (OpKind::kContraction:
// linear, graft::linear_activation, matmul, conv2d), two FLOPs each, as
// their ops' traits count them (graft::CostOf). Everything else (bias adds,
// activations) is cheap next to them and not counted. Needs static types
// on those nodes (run shape-prop first); nodes without them count zero.
int64_t CountMatmulFlops(const Graph& graph);

}  // namespace graft::cli

#endif  // GRAFT_CLI_FLOP_COUNT_H_
