#ifndef GRAFT_PASSES_QUANTIZE_LOWER_H_
#define GRAFT_PASSES_QUANTIZE_LOWER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes::quantize {

// What Lower fused, what it could not, and how much of the model's
// multiply-accumulate work now runs on int8 values: the lowering audit.
struct LowerReport {
  std::vector<std::string> lowered;  // Calls now quantized_linear or quantized_conv2d.
  // Each dequantize that still feeds a float call: "%dq -> %call (op): why".
  std::vector<std::string> unfused;
  int64_t int8_macs = 0, total_macs = 0;

  // The audit as text: the lowered calls, every dequantize left, the share
  // of multiply-accumulates in int8.
  std::string ToString() const;
};

// Fuses the reference graph's dequantize -> linear (and matmul by a
// constant) into graft::quantized_linear, and dequantize -> conv2d into
// graft::quantized_conv2d (graph/quant_ops.h): int8 products that backends
// run natively, the activation's quantized values (per tensor) times the
// int8 weight (per output channel), with the scales applied to the int32
// sums. A matmul's [in, out] weight is stored transposed. Where the
// product's only reader is (ReLU ->) quantize, the product writes the
// quantized values itself, so a chain of lowered layers passes int8 from
// one to the next. What does not fit (a product of two activations, a
// per-channel activation) stays as it was and is listed in the report.
absl::StatusOr<LowerReport> Lower(Module& module);

// `quantize-lower`.
class LowerPass : public Pass {
 public:
  absl::string_view name() const override { return "quantize-lower"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_LOWER_H_
