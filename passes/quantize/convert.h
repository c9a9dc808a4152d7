#ifndef GRAFT_PASSES_QUANTIZE_CONVERT_H_
#define GRAFT_PASSES_QUANTIZE_CONVERT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "passes/pass.h"
#include "passes/quantize/quant_config.h"

namespace graft::passes::quantize {

// A weight quantized to symmetric int8: per channel of `axis`, or per
// tensor (axis -1, one scale).
struct QuantizedWeight {
  Tensor values;  // i8 or f8e4m3, the weight's dims.
  std::vector<double> scales;
  int64_t axis = -1;
};
// Symmetric, per channel of `axis` (-1: per tensor): i8 with scale =
// largest magnitude / 127, or f8e4m3 with largest magnitude / 448.
QuantizedWeight QuantizeWeight(const Tensor& weight, int64_t axis, DType dtype = DType::kI8);
// Back to f32, as the reference graph's dequantize computes it.
Tensor DequantizeWeight(const QuantizedWeight& weight);
// The channel axis of the weight a quantized call reads: its output
// features (linear, conv2d: 0; matmul's [.., in, out] other: the last).
// -1 when `call` reads no constant weight.
int64_t WeightAxis(const Node& call);
// The constant weight node of a quantized call (linear/conv2d "weight",
// matmul "other"), or null.
const Node* WeightNode(const Node& call);

// What Convert did.
struct ConvertReport {
  std::vector<std::string> quantized;  // Calls that read quantized values.
  int quantize_ops = 0;                // quantize/dequantize pairs made.
  // Calls whose bias took the bias correction (given a bias if they had none).
  std::vector<std::string> bias_corrected;
};

// Bias correction (Nagel et al., 2019, from the weights' error): per
// quantized call (by name), the mean of each input channel of the float
// activation it reads, over calibration data (the last dim for linear, dim
// 1 for conv2d). A quantized weight Wq = W + E shifts the call's result by
// E . mean on average; Convert subtracts that from the call's bias (a call
// without one gets one; a matmul, the constant an add after it adds). f32
// layers only. For conv2d the mean is taken as every window's, which the
// windows at a zero-padded border are not.
using InputMeans = std::map<std::string, std::vector<double>>;

// The reference graph of a calibrated module (Prepare, then calibration,
// which wrote scale and zero point into every graft::observe): each
// observed activation a quantized call reads becomes
// quantize_per_tensor -> dequantize; each quantized call's result too;
// each constant weight is stored as int8 with its scales and dequantized
// where it is read. Every backend runs the result. Calls the config does
// not quantize (skip globs, added after calibration to keep a call float)
// read the float values. An observer without a scale is an error. With
// `bias_correction`, the calls it names get their bias corrected.
absl::StatusOr<ConvertReport> Convert(Module& module, const QuantConfig& config,
                                      const InputMeans* bias_correction = nullptr);

// `quantize-convert{ops=OP;OP,skip=GLOB;GLOB,per-tensor=false}`: the same
// ops as the prepare step (calls of other ops read float values).
class ConvertPass : public Pass {
 public:
  explicit ConvertPass(QuantConfig config) : config_(std::move(config)) {}
  static absl::StatusOr<std::unique_ptr<ConvertPass>> FromOptions(const PassOptions& options);
  absl::string_view name() const override { return "quantize-convert"; }
  absl::StatusOr<bool> Run(Module& module, PassContext& ctx) override;

 private:
  QuantConfig config_;
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_CONVERT_H_
