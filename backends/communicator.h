#ifndef GRAFT_BACKENDS_COMMUNICATOR_H_
#define GRAFT_BACKENDS_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace graft {

// One rank's link to the other ranks of a sharded run (passes/shard.h):
// what graft::all_reduce and graft::all_gather exchange through. Every rank
// calls the same collectives in the same order, each from its own thread or
// process; a call returns once every rank has made it.
//
// The host methods serve the interpreter. A GPU backend's communicator
// (NCCL's, backends/cuda/nccl_world.h) works on device memory instead, inside
// the backend's own code, and may refuse host tensors.
class Communicator {
 public:
  Communicator(int rank, int world_size);
  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // Unique in the process: compiled code binds its communicator, so compile
  // cache keys name it (CompileOptions::KeyString).
  uint64_t id() const { return id_; }

  // The elementwise sum of every rank's `tensor` (same dtype and dims on
  // every rank), bit-identical on every rank.
  virtual absl::StatusOr<Tensor> AllReduceSum(const Tensor& tensor) = 0;
  // Every rank's `tensor` concatenated along `dim` in rank order.
  virtual absl::StatusOr<Tensor> AllGather(const Tensor& tensor, int64_t dim) = 0;
  // Tells every rank that this one will make no more calls (it failed
  // outside a collective): calls waiting for it, and later ones, fail
  // instead of waiting forever. Aborting one rank aborts the world.
  virtual void Abort() = 0;
  // Makes an aborted world usable again, once no rank is in a call; fails
  // where that cannot be done (NCCL's communicators end with an abort).
  virtual absl::Status Revive() = 0;

 private:
  int rank_, world_size_;
  uint64_t id_;
};

// A world of `world_size` ranks in this process, one communicator per rank,
// for running every rank of a sharded module on the host (one thread each).
// When the ranks disagree on a call's dtype or dims, every rank gets the
// error.
std::vector<std::shared_ptr<Communicator>> InProcessWorld(int world_size);

}  // namespace graft

#endif  // GRAFT_BACKENDS_COMMUNICATOR_H_
