#ifndef GRAFT_QUANTIZE_QUANTIZE_MODEL_H_
#define GRAFT_QUANTIZE_QUANTIZE_MODEL_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/quantize/convert.h"
#include "passes/quantize/prepare.h"
#include "passes/quantize/quant_config.h"
#include "passes/quantize/smooth_quant.h"
#include "quantize/accuracy.h"
#include "quantize/calibration.h"

namespace graft::quantize {

struct QuantizeOptions {
  passes::quantize::QuantConfig config;
  std::vector<Sample> calibration;
  // Inputs the accuracy is measured on (held out: not the calibration
  // data). Empty: no report, and no fallback.
  std::vector<Sample> evaluation;
  // Return the calls with the worst output SQNR to float, one at a time,
  // until the model's output SQNR reaches this many dB (needs evaluation
  // samples).
  std::optional<double> min_sqnr;
  Progress progress;  // Of calibration.
  // SmoothQuant with this alpha before calibrating
  // (passes/quantize/smooth_quant.h): one more float pass over the
  // calibration samples, for the activations' channel maxima.
  std::optional<double> smooth_quant_alpha;
  // Bias correction at convert (passes/quantize/convert.h): one more float
  // pass, for the quantized calls' input channel means.
  bool bias_correction = false;
};

struct QuantizeResult {
  Module module;  // The reference graph (quantize/dequantize around float ops).
  passes::quantize::SmoothQuantReport smoothed;
  passes::quantize::PrepareReport prepared;
  passes::quantize::ConvertReport converted;  // The final conversion's.
  std::optional<AccuracyReport> accuracy;
};

// Post-training quantization end to end: SmoothQuant if asked, prepare,
// calibrate (one pass over the calibration samples), convert (with bias
// correction if asked), and with evaluation samples the accuracy report
// (against the model as given) and the fallback to float for --min-sqnr.
absl::StatusOr<QuantizeResult> QuantizeModel(const Module& model, const QuantizeOptions& options);

}  // namespace graft::quantize

#endif  // GRAFT_QUANTIZE_QUANTIZE_MODEL_H_
