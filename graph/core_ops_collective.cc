// The collective ops of a sharded module (passes/shard.h): what one rank
// exchanges with the others. Each rank runs its own copy of the graph; the
// ops are core ops, so every program reads sharded graphs, and the
// backends run them through a Communicator (backends/communicator.h).

#include <string>

#include "absl/strings/str_cat.h"
#include "graph/collective_ops.h"
#include "graph/core_ops_internal.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::StatusOr<int64_t> WorldSize(const InferContext& ctx) {
  int64_t world = ctx.call().Int("world_size");
  if (world < 1) {
    return ctx.Error(absl::StrCat("world_size must be at least 1, got ", world));
  }
  return world;
}

absl::StatusOr<TensorType> AllReduce(const InferContext& ctx) {
  absl::StatusOr<int64_t> world = WorldSize(ctx);
  if (!world.ok()) return world.status();
  const std::string& reduce = ctx.call().String("reduce");
  if (reduce != "sum") {
    return ctx.Error(absl::StrCat("reduce must be \"sum\", got \"", reduce, "\""));
  }
  return ctx.Type("input");
}

absl::StatusOr<TensorType> AllGather(const InferContext& ctx) {
  absl::StatusOr<int64_t> world = WorldSize(ctx);
  if (!world.ok()) return world.status();
  TensorType t = ctx.Type("input");
  int64_t dim = ctx.call().Int("dim");
  if (dim < -t.rank() || dim >= t.rank()) {
    return ctx.Error(absl::StrCat("dim ", dim, " is out of range for ", t.ToString()));
  }
  if (dim < 0) dim += t.rank();
  std::optional<Dim> gathered = rules::MulDims(t.shape[dim], Dim(*world));
  if (!gathered.has_value()) {
    return ctx.Error(absl::StrCat("dim ", dim, " of ", t.ToString(),
                                  " must be a constant to gather"));
  }
  t.shape[dim] = *gathered;
  return t;
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& r) {
  // Impure: a collective synchronizes with the other ranks, so every rank
  // must run each one, whatever its own graph makes of the result, and no
  // pass may fold, merge or drop one on a single rank.
  Add(r, {.name = std::string(kAllReduceOp),
          .params = {Param("input", K::kTensor), Param("world_size", K::kInt),
                     Defaulted("reduce", K::kString, Argument("sum"))},
          .pure = false,
          .infer = One(AllReduce),
          .summary = "the sum of input over every rank, on every rank"});
  Add(r, {.name = std::string(kAllGatherOp),
          .params = {Param("input", K::kTensor), Param("dim", K::kInt),
                     Param("world_size", K::kInt)},
          .pure = false,
          .infer = One(AllGather),
          .summary = "every rank's input concatenated along dim, in rank "
                     "order, on every rank"});
}

}  // namespace graft::core_ops
