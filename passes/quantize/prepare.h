#ifndef GRAFT_PASSES_QUANTIZE_PREPARE_H_
#define GRAFT_PASSES_QUANTIZE_PREPARE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/pass.h"
#include "passes/quantize/quant_config.h"

namespace graft::passes::quantize {

// What Prepare did.
struct PrepareReport {
  std::vector<std::string> quantized;  // The calls to quantize, in graph order.
  std::vector<std::string> skipped;    // Calls of the ops that the config skips.
  int observers = 0;
};

// Puts a graft::observe (graph/quant_ops.h) on every float activation a
// quantized call reads (its input; a matmul's other operand unless it is a
// constant). One observer per value, shared by the calls that read it;
// only the quantized calls read through it. A call's result is observed
// only where another quantized call reads it: quantizing a result that
// float ops read next would add error and save nothing (a quantized call
// can write float). Constant weights get no observer: convert quantizes
// them from their values. Errors: a skip glob
// that matches no call of the ops, an observed value that is not floating
// point (naming the call and the value).
absl::StatusOr<PrepareReport> Prepare(Module& module, const QuantConfig& config);

// `quantize-prepare{ops=linear;conv2d,skip=GLOB;GLOB,dtype=i8|u8}`.
class PreparePass : public Pass {
 public:
  explicit PreparePass(QuantConfig config) : config_(std::move(config)) {}
  static absl::StatusOr<std::unique_ptr<PreparePass>> FromOptions(const PassOptions& options);
  absl::string_view name() const override { return "quantize-prepare"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  QuantConfig config_;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_PREPARE_H_
