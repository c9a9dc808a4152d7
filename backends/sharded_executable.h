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
// rank 0's outputs, which every rank holds; a failing rank fails the run
// (and aborts the world unless it failed only once its work had ended:
// run_failure.h).
// Runs are serialized: every rank must make its collectives in the same
// order. `options.device_index` is ignored. `strategy` says what is split
// (passes::ShardStrategy: the weights, or the batch).
// What CompileSharded returns.
class ShardedExecutable : public Executable {
 public:
  // Every rank's inputs: `inputs[r]` for rank r. One on another device than
  // the rank's is copied to it (through the host) before any rank starts;
  // given where each rank's device is, none is copied (benchmarks).
  virtual absl::StatusOr<std::vector<Tensor>> RunEachRank(
      const std::vector<std::vector<Tensor>>& inputs) = 0;
};

absl::StatusOr<std::unique_ptr<ShardedExecutable>> CompileSharded(
    Backend& backend, const Module& module, int world_size, const CompileOptions& options,
    ShardedCompileReport* report = nullptr,
    passes::ShardStrategy strategy = passes::ShardStrategy::kTensor);

}  // namespace graft

#endif  // GRAFT_BACKENDS_SHARDED_EXECUTABLE_H_
