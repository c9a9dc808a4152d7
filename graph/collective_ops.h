#ifndef GRAFT_GRAPH_COLLECTIVE_OPS_H_
#define GRAFT_GRAPH_COLLECTIVE_OPS_H_

#include "absl/strings/string_view.h"

namespace graft {

// The collectives of a sharded module (passes/shard.h), core ops like any
// other (graph/core_ops_collective.cc registers them):
//
//   graft::all_reduce(input: Tensor, world_size: int, reduce: str = "sum")
//     the elementwise sum of `input` over the ranks, on every rank;
//   graft::all_gather(input: Tensor, dim: int, world_size: int)
//     every rank's `input` concatenated along `dim` in rank order.
//
// Both are impure (every rank must run them) and run through a
// Communicator (backends/communicator.h).
inline constexpr absl::string_view kAllReduceOp = "graft::all_reduce";
inline constexpr absl::string_view kAllGatherOp = "graft::all_gather";

// Whether `target` names one of them.
inline bool IsCollectiveOp(absl::string_view target) {
  return target == kAllReduceOp || target == kAllGatherOp;
}

}  // namespace graft

#endif  // GRAFT_GRAPH_COLLECTIVE_OPS_H_
