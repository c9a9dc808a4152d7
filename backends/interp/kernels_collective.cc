// The collectives of a sharded module (graph/collective_ops.h), through the
// rank's communicator.

#include "absl/strings/str_cat.h"
#include "backends/interp/kernel.h"
#include "graph/collective_ops.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

// The communicator of a world of the call's world_size; null for a world of
// one rank, where a collective is the identity.
absl::StatusOr<Communicator*> CommunicatorFor(const KernelContext& ctx) {
  const int64_t world = ctx.call().Int("world_size");
  Communicator* communicator = ctx.communicator();
  if (communicator == nullptr) {
    if (world == 1) return nullptr;
    return KernelError(ctx.node().target(), " of a ", world,
                       "-rank world needs every rank running: run the sharded module with "
                       "`graft run --gpus ",
                       world, "` or RunSharded (passes/shard.h)");
  }
  if (communicator->world_size() != world) {
    return KernelError(ctx.node().target(), " expects a world of ", world,
                       " ranks, but this rank's world has ", communicator->world_size());
  }
  return communicator;
}

absl::StatusOr<Value> AllReduce(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor input, ctx.Input("input"));
  ASSIGN_OR_RETURN(Communicator * communicator, CommunicatorFor(ctx));
  if (communicator == nullptr) return Value(input);
  ASSIGN_OR_RETURN(Tensor sum, communicator->AllReduceSum(input));
  return Value(std::move(sum));
}

absl::StatusOr<Value> AllGather(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor input, ctx.Input("input"));
  ASSIGN_OR_RETURN(Communicator * communicator, CommunicatorFor(ctx));
  if (communicator == nullptr) return Value(input);
  int64_t dim = ctx.call().Int("dim");
  if (dim < 0) dim += input.rank();
  ASSIGN_OR_RETURN(Tensor gathered, communicator->AllGather(input, dim));
  return Value(std::move(gathered));
}

}  // namespace

void RegisterCollectiveKernels(KernelTable& t) {
  t.Add(std::string(kAllReduceOp), AllReduce);
  t.Add(std::string(kAllGatherOp), AllGather);
}

}  // namespace graft::interp
