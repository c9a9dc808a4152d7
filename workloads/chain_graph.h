#ifndef GRAFT_WORKLOADS_CHAIN_GRAPH_H_
#define GRAFT_WORKLOADS_CHAIN_GRAPH_H_

#include <cstdint>

#include "graph/module.h"

namespace graft {

// The reference graph-surgery workload: one input x : f32[16] and
// `repetitions` times x = relu(x * 2.0 + 1.0), i.e. 3 * repetitions compute
// nodes plus the placeholder and the output. Types are filled in.
// `reserve_names`: size the name table up front (Graph::ReserveNodes), as a
// generator that knows its size should; false shows the cost of growing it.
Module BuildChainGraph(int64_t repetitions, bool reserve_names = true);

}  // namespace graft

#endif  // GRAFT_WORKLOADS_CHAIN_GRAPH_H_
