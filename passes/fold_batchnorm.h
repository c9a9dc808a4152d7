#ifndef GRAFT_PASSES_FOLD_BATCHNORM_H_
#define GRAFT_PASSES_FOLD_BATCHNORM_H_

#include "passes/pass.h"

namespace graft::passes {

// Batch-norm folding: an inference batch_norm whose input is a conv2d (or a
// linear with a 2-D result, whose features are then batch_norm's channels)
// used by nothing else is merged into that op, so the network runs one op
// instead of two. With s = weight / sqrt(running_var + eps), output channel
// c of the weight is scaled by s[c] and the bias becomes
// (bias - running_mean) * s + bn_bias. The weight, the op's bias and every
// batch_norm parameter must be get_attr tensors of the module (a missing
// weight/bias of either op counts as 1/0); the folded weight and bias are
// computed in double and stored as new module tensors with the original
// weight's dtype. The old tensors stay in the module for `dce` to drop.
class FoldBatchNormPass : public Pass {
 public:
  absl::string_view name() const override { return "fold-batchnorm"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FOLD_BATCHNORM_H_
