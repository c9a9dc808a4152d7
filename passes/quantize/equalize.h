#ifndef GRAFT_PASSES_QUANTIZE_EQUALIZE_H_
#define GRAFT_PASSES_QUANTIZE_EQUALIZE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes::quantize {

// Cross-layer equalization (Nagel et al., "Data-Free Quantization"): for two
// linear layers with a ReLU (or nothing) between them, hidden unit i's row
// of the first weight (and its bias) is divided by s_i and the second
// weight's column i multiplied by it, with s_i = sqrt(r1_i / r2_i) for the
// rows' and columns' largest magnitudes r1, r2. ReLU(x / s) = ReLU(x) / s
// for s > 0, so the model computes the same; the channels' ranges become
// equal, which is what per-tensor weight quantization needs. Only pairs
// whose middle value nothing else reads, with f32 constant weights (and
// bias) read by nothing else, are changed. Returns the equalized pairs
// ("fc1 -> fc2").
absl::StatusOr<std::vector<std::string>> EqualizeLayers(Module& module);

// `equalize-layers`.
class EqualizePass : public Pass {
 public:
  absl::string_view name() const override { return "equalize-layers"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_EQUALIZE_H_
