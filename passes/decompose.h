#ifndef GRAFT_PASSES_DECOMPOSE_H_
#define GRAFT_PASSES_DECOMPOSE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass.h"
#include "passes/rewrite_driver.h"

namespace graft::passes {

// Decomposition: rewrites composite ops into primitive ones, for backends
// that only have kernels for the primitives and for fusion passes that want
// to see through them. gelu becomes 0.5*x*(1+erf(x/sqrt(2))) or, with
// approximate="tanh", 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))); silu
// becomes x*sigmoid(x); layer_norm becomes mean, sub, mul, mean, add eps,
// rsqrt, mul, and mul/add by weight and bias; linear becomes matmul with
// the transposed weight plus the bias; softmax and log_softmax become amax,
// sub, exp, sum and div (log_softmax: log and sub). Every result keeps the
// type of the op it replaces; a node whose decomposition would change its
// type (an integer input, say) is left alone, and linear is only decomposed
// when the weight's rank is known. The option `ops` (a ';'-separated list,
// e.g. `decompose{ops=gelu;linear}`) picks a subset; the default is all.
class DecomposePass : public Pass {
 public:
  // Every decomposable op.
  DecomposePass();
  // `ops` must be names from DecomposableOps().
  explicit DecomposePass(std::vector<std::string> ops) : ops_(std::move(ops)) {}

  // From the pass option `ops`; an unknown name is an error listing the
  // decomposable ops.
  static absl::StatusOr<std::unique_ptr<DecomposePass>> FromOptions(
      const PassOptions& options);

  absl::string_view name() const override { return "decompose"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  std::vector<std::string> ops_;
};

// "gelu", "layer_norm", "linear", "log_softmax", "silu", "softmax".
const std::vector<std::string>& DecomposableOps();

// The rewrite pattern decomposing `op` (one of DecomposableOps()).
std::unique_ptr<RewritePattern> DecompositionPattern(absl::string_view op);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_DECOMPOSE_H_
