#ifndef GRAFT_PASSES_RECOGNIZE_COMPOSITES_H_
#define GRAFT_PASSES_RECOGNIZE_COMPOSITES_H_

#include <memory>
#include <vector>

#include "passes/pass.h"
#include "passes/rewrite_driver.h"

namespace graft::passes {

// The inverse of decompose for the ops exporters spell out: ONNX files
// before opset 17 (LayerNormalization) and 20 (Gelu) carry layer norms and
// GELUs as a dozen primitive ops, which a backend then runs as as many
// passes over memory, and a GELU after a matrix product can no longer ride
// in the product's epilogue. This pass finds them and puts the op back:
//
//  - gelu, tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//    with x^3 as pow(x, 3) or x * x * x;
//  - gelu, exact form: 0.5 * x * (1 + erf(x / sqrt(2))) (or x * (1/sqrt 2));
//  - layer_norm: (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), or times
//    rsqrt(...), with the square as pow(., 2) or a product, the means over
//    the trailing dims with keepdim; then a product by a weight and a sum
//    with a bias of the normalized shape become its weight and bias.
//
// Products may come in any order and grouping (their literal factors are
// multiplied together and compared with the constant, within 1e-4
// relative). Every intermediate value must be used only inside the
// pattern, and types must be known and floating point; the new op must
// have the replaced value's type. Used by the compiled backends before
// they lower a module, and by `graft opt` as "recognize-composites".
class RecognizeCompositesPass : public Pass {
 public:
  absl::string_view name() const override { return "recognize-composites"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

// The pass's patterns ("recognize-gelu", "recognize-layer-norm",
// "layer-norm-affine").
std::vector<std::unique_ptr<RewritePattern>> CompositeRecognitionPatterns();

}  // namespace graft::passes

#endif  // GRAFT_PASSES_RECOGNIZE_COMPOSITES_H_
