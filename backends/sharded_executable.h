#ifndef GRAFT_BACKENDS_SHARDED_EXECUTABLE_H_
#define GRAFT_BACKENDS_SHARDED_EXECUTABLE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/fallback_executable.h"
#include "graph/module.h"
#include "passes/shard.h"

namespace graft {

// What CompileSharded did: how the module was split, and how rank 0's
// module compiled (the graph breaks of every rank are the same).
struct ShardedCompileReport {
  passes::ShardReport shard;
  CompileReport rank0;
};

// Tensor parallelism over `world_size` ranks: shards `module` for each rank
// (passes::ShardModule), compiles each rank's module on `backend` with the
// interpreter as fallback (a GPU backend puts rank r on device r), links
// the ranks by the backend's communicators (Backend::CreateWorld: NCCL on
// GPUs, an in-process world on the host) and returns one executable. Its
// Run gives every rank the same inputs, runs all ranks at once (rank 0 on
// the calling thread, each other rank on a thread of its own) and returns
// the module's outputs: those every rank holds as rank 0 has them, and,
// split by batch, those each rank holds its rows of (no all_gather:
// ShardOptions::rows_in_place) joined on the host (then copied to rank 0's
// device with CompileOptions::keep_outputs_on_device). Each rank reads
// only its rows of the inputs split by batch, a view of the caller's.
// A failing rank fails the run (and aborts the world unless it failed only
// once its work had ended: run_failure.h).
// Runs are serialized: every rank must make its collectives in the same
// order. `options.device_index` is ignored. `strategy` says what is split
// (passes::ShardStrategy: the weights, or the batch).
class ShardedExecutable : public Executable {
 public:
  // Every rank's whole inputs: `inputs[r]` for rank r, of which it reads
  // its rows where the batch is split. One on another device than the
  // rank's is copied to it (through the host) before any rank starts;
  // given where each rank's device is, none is copied (benchmarks).
  // Returns every rank's outputs as it holds them: its rows only of those
  // split by batch (outputs[r][i]), and which those are is
  // row_split_outputs(). As from any executable, an output that is an
  // input may be the input itself (here: a view of the rank's rows).
  virtual absl::StatusOr<std::vector<std::vector<Tensor>>> RunEachRank(
      const std::vector<std::vector<Tensor>>& inputs) = 0;
  // The outputs (by index) that each rank returns only its rows of.
  virtual const std::vector<int>& row_split_outputs() const = 0;
};

absl::StatusOr<std::unique_ptr<ShardedExecutable>> CompileSharded(
    Backend& backend, const Module& module, int world_size, const CompileOptions& options,
    ShardedCompileReport* report = nullptr,
    passes::ShardStrategy strategy = passes::ShardStrategy::kTensor);

}  // namespace graft

#endif  // GRAFT_BACKENDS_SHARDED_EXECUTABLE_H_
