#ifndef GRAFT_PASSES_SHARD_H_
#define GRAFT_PASSES_SHARD_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes {

// Which rank of how many to build (ShardModule).
// How to split the work.
enum class ShardStrategy : unsigned char {
  // Megatron-style tensor parallelism: the linear layers' weights are split
  // (each rank holds 1/world_size of them), with collectives between.
  kTensor,
  // The batch: each rank runs the whole model on 1/world_size of the
  // inputs' first dim (inference data parallelism: every weight on every
  // rank, one all_gather of each output, nothing else exchanged).
  kBatch,
};

struct ShardOptions {
  int world_size = 2;
  int rank = 0;
  ShardStrategy strategy = ShardStrategy::kTensor;
  // ShardStrategy::kBatch: the rank's module takes only its rows of each
  // input split along the batch (no slice inside), and returns only its
  // rows of each output still split along the batch there (no all_gather):
  // the caller cuts the inputs and joins the outputs (CompileSharded does,
  // without a copy on the GPUs). False: every rank takes and returns the
  // whole values.
  bool rows_in_place = false;
};

// "tensor" or "batch"; ParseShardStrategy fails on anything else.
absl::string_view ShardStrategyName(ShardStrategy strategy);
absl::StatusOr<ShardStrategy> ParseShardStrategy(absl::string_view name);

// What ShardModule split, for `graft run --explain` and tests.
struct ShardReport {
  // Linear layers split by output features (each rank computes its share
  // of the columns) and by input features (each rank a partial sum).
  std::vector<std::string> column_parallel, row_parallel;
  ShardStrategy strategy = ShardStrategy::kTensor;
  // ShardStrategy::kBatch: the inputs split along their first dim.
  std::vector<std::string> batch_split_inputs;
  // ShardOptions::rows_in_place: the placeholders (by index) that take the
  // rank's rows, and the outputs (by index in the output's values) that
  // are the rank's rows; the rest are whole.
  std::vector<int> rank_row_inputs, rank_row_outputs;
  int all_reduces = 0, all_gathers = 0;

  // "2 column-parallel, 2 row-parallel layers; 2 all_reduce, 0 all_gather";
  // by batch: "1 input split along the batch; 0 all_reduce, 0 all_gather;
  // 1 output joined from the ranks' rows".
  std::string Summary() const;
};

// Tensor parallelism, Megatron style: the module one rank of a world of
// `world_size` runs, with its share of the weights and the collectives
// (graph/collective_ops.h) that make every rank's output the unsharded
// module's output.
//
// A linear layer (linear, matmul by a constant, graft::linear_activation)
// whose input every rank holds, and whose result reaches another such layer,
// is split by output features: each rank keeps 1/world_size of the weight's
// rows. What follows works on the split value as long as each op can (a
// pointwise op, a reshape that keeps the split dim outermost, permute,
// split and slice of whole blocks, softmax or layer_norm over other dims, a
// matmul of two values split along the same batch dim: attention's heads),
// up to the next linear layer, which is split by input features and
// followed by one graft::all_reduce; its bias is added after the sum. A
// fused q/k/v projection whose result is split three ways is split per
// block, so each rank keeps the same heads of q, k and v. Where an op
// cannot work on a split value, graft::all_gather rebuilds the whole value
// first, so any module shards correctly; the report says how often.
//
// Types are propagated first; the split dims must be constant and divide
// by world_size (layers whose do not stay whole). Submodules (fused groups)
// are not split: their inputs are gathered.
//
// With ShardStrategy::kBatch the weights stay whole: each input whose
// first dim is the batch (the first input's first dim, constant and
// divisible by world_size) is cut to the rank's rows, and the same
// propagation carries the split through the model to the outputs, which
// are gathered (or, with ShardOptions::rows_in_place, left to the caller
// to join where they are still split by rows). Ops that mix rows (a reduction over the batch) gather
// first, so this too is correct for any model.
absl::StatusOr<Module> ShardModule(const Module& module, const ShardOptions& options,
                                   ShardReport* report = nullptr);

// ShardModule as a pipeline pass: `shard{world=2,rank=0}` replaces the
// module by what rank `rank` runs.
class ShardPass : public Pass {
 public:
  explicit ShardPass(ShardOptions options) : options_(options) {}
  static absl::StatusOr<std::unique_ptr<ShardPass>> FromOptions(const PassOptions& options);

  absl::string_view name() const override { return "shard"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  ShardOptions options_;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_SHARD_H_
