#ifndef GRAFT_QUANTIZE_ACCURACY_H_
#define GRAFT_QUANTIZE_ACCURACY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/module.h"
#include "passes/quantize/quant_config.h"
#include "quantize/calibration.h"

namespace graft::quantize {

// Signal-to-quantization-noise ratio in dB, as PyTorch's numeric suite
// computes it: 20 * log10(||reference|| / ||reference - test||); +inf when
// they are equal.
double Sqnr(const Tensor& reference, const Tensor& test);

// The accuracy of one quantized call.
struct NodeAccuracy {
  std::string name, op;
  // Its weight against the weight dequantized (+inf without a weight).
  double weight_sqnr = 0;
  // Its (quantized) result when it reads the float model's values, against
  // the float model's result: the error this call adds by itself.
  double output_sqnr = 0;
};

// The accuracy of a quantized module against its float original.
struct AccuracyReport {
  std::vector<NodeAccuracy> nodes;  // Graph order.
  double model_sqnr = 0;           // Over every output and sample.
  // Calls returned to float, and why (QuantizeModel's --min-sqnr).
  std::vector<std::string> kept_float;
  std::vector<std::string> kept_float_reasons;

  // A table: one line per call, then the model's SQNR and what stayed float.
  std::string ToString() const;
};

// Compares `quantized` (passes::quantize::Convert of `original`) with
// `original` on `samples`: the model's outputs, and per quantized call its
// own error (each call reads the float model's values, so errors do not
// add up along the graph).
absl::StatusOr<AccuracyReport> MeasureAccuracy(const Module& original, const Module& quantized,
                                               absl::Span<const Sample> samples,
                                               const passes::quantize::QuantConfig& config);

}  // namespace graft::quantize

#endif  // GRAFT_QUANTIZE_ACCURACY_H_
