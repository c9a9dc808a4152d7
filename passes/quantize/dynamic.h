#ifndef GRAFT_PASSES_QUANTIZE_DYNAMIC_H_
#define GRAFT_PASSES_QUANTIZE_DYNAMIC_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"

namespace graft::passes::quantize {

struct DynamicReport {
  std::vector<std::string> quantized;  // Calls now graft::dynamic_quantized_linear.
};

// Dynamic quantization (PyTorch's quantize_dynamic, ONNX Runtime's
// quantize_dynamic): each linear and matmul by a constant 2-D f32 weight,
// on an f32 input, becomes graft::dynamic_quantized_linear (graph/quant_ops.h)
// with the weight stored as int8, one scale per output channel; the
// input's scale is taken per row as the model runs, so no calibration is
// needed. Calls whose names match a glob of `skip` stay float; a glob that
// matches no such call is an error.
absl::StatusOr<DynamicReport> QuantizeDynamic(Module& module,
                                              const std::vector<std::string>& skip);

// `quantize-dynamic{skip=GLOB;GLOB}`.
class DynamicPass : public Pass {
 public:
  explicit DynamicPass(std::vector<std::string> skip) : skip_(std::move(skip)) {}
  static absl::StatusOr<std::unique_ptr<DynamicPass>> FromOptions(const PassOptions& options);
  absl::string_view name() const override { return "quantize-dynamic"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  std::vector<std::string> skip_;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_DYNAMIC_H_
