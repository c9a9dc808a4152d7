#include "quantize/quantize_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/quantize/convert.h"
#include "passes/shape_prop.h"
#include "support/status_macros.h"

namespace graft::quantize {
namespace {

// A glob that matches exactly `name` (fnmatch's special characters
// bracketed).
std::string ExactGlob(const std::string& name) {
  std::string glob;
  for (char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
      absl::StrAppend(&glob, "[", std::string(1, c), "]");
    } else {
      glob.push_back(c);
    }
  }
  return glob;
}

absl::StatusOr<Module> Converted(const Module& calibrated,
                                 const passes::quantize::QuantConfig& config,
                                 passes::quantize::ConvertReport& report) {
  Module module = calibrated.Clone();
  ASSIGN_OR_RETURN(report, passes::quantize::Convert(module, config));
  return module;
}

}  // namespace

absl::StatusOr<QuantizeResult> QuantizeModel(const Module& model, const QuantizeOptions& options) {
  if (options.calibration.empty()) {
    return absl::InvalidArgumentError("quantization needs calibration samples");
  }
  if (options.min_sqnr.has_value() && options.evaluation.empty()) {
    return absl::InvalidArgumentError("--min-sqnr needs samples to measure the SQNR on");
  }
  Module original = model.Clone();
  RETURN_IF_ERROR(passes::PropagateShapes(original).status());
  Module prepared = original.Clone();
  QuantizeResult result;
  ASSIGN_OR_RETURN(result.prepared, passes::quantize::Prepare(prepared, options.config));
  ASSIGN_OR_RETURN(CalibrationStats stats,
                   Calibrate(prepared, options.calibration, options.progress));
  RETURN_IF_ERROR(ApplyCalibration(prepared, stats, options.config));
  passes::quantize::QuantConfig config = options.config;
  ASSIGN_OR_RETURN(result.module, Converted(prepared, config, result.converted));
  if (options.evaluation.empty()) return result;
  ASSIGN_OR_RETURN(AccuracyReport report,
                   MeasureAccuracy(original, result.module, options.evaluation, config));
  std::vector<std::string> kept, reasons;
  while (options.min_sqnr.has_value() && report.model_sqnr < *options.min_sqnr &&
         !report.nodes.empty()) {
    // The call that adds the most error by itself goes back to float.
    const NodeAccuracy worst = *std::min_element(
        report.nodes.begin(), report.nodes.end(),
        [](const NodeAccuracy& a, const NodeAccuracy& b) { return a.output_sqnr < b.output_sqnr; });
    kept.push_back(worst.name);
    reasons.push_back(absl::StrFormat(
        "output SQNR %.1f dB, the lowest, while the model's %.1f dB was below %.1f dB",
        worst.output_sqnr, report.model_sqnr, *options.min_sqnr));
    config.skip.push_back(ExactGlob(worst.name));
    ASSIGN_OR_RETURN(result.module, Converted(prepared, config, result.converted));
    ASSIGN_OR_RETURN(report, MeasureAccuracy(original, result.module, options.evaluation, config));
  }
  report.kept_float = kept;
  report.kept_float_reasons = reasons;
  result.accuracy = std::move(report);
  return result;
}

}  // namespace graft::quantize
