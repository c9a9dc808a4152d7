#include "quantize/quantize_model.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "passes/quantize/convert.h"
#include "quantize/channel_stats.h"
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
                                 const passes::quantize::InputMeans* means,
                                 passes::quantize::ConvertReport& report) {
  Module module = calibrated.Clone();
  ASSIGN_OR_RETURN(report, passes::quantize::Convert(module, config, means));
  return module;
}

// `original` smoothed: the largest magnitude of each channel of the
// activations SmoothQuant may smooth, over the calibration samples, then
// the weights and activations rescaled.
absl::StatusOr<Module> Smoothed(const Module& original, const QuantizeOptions& options,
                                passes::quantize::SmoothQuantReport& report) {
  std::vector<ChannelAxis> values;
  for (std::string& name : passes::quantize::SmoothableActivations(original, options.config)) {
    values.push_back({std::move(name), -1});
  }
  ASSIGN_OR_RETURN(auto stats, CollectChannelStats(original, options.calibration, values));
  std::map<std::string, std::vector<double>> abs_max;
  for (auto& [name, s] : stats) abs_max[name] = std::move(s.abs_max);
  Module smoothed = original.Clone();
  ASSIGN_OR_RETURN(report, passes::quantize::SmoothQuant(smoothed, options.config, abs_max,
                                                         *options.smooth_quant_alpha));
  return smoothed;
}

// Per quantized call of `prepared`, the mean of each input channel of the
// float activation it reads (through its observer) over the calibration
// samples.
absl::StatusOr<passes::quantize::InputMeans> InputChannelMeans(
    const Module& prepared, const Module& base, const QuantizeOptions& options) {
  std::vector<ChannelAxis> values;
  std::map<std::string, std::string> input_of;  // call -> activation
  std::map<std::string, int> axis_of;            // activation -> channel axis
  std::set<std::string> conflicting;
  for (const Node* n : prepared.graph().nodes()) {
    if (!options.config.Quantizes(*n)) continue;
    absl::StatusOr<OpCall> call = OpCall::Bind(*n);
    const Node* observer = call.ok() ? call->TensorNode("input") : nullptr;
    if (observer == nullptr || !observer->is_call(kObserveOp)) continue;
    ASSIGN_OR_RETURN(OpCall observe, OpCall::Bind(*observer));
    const Node* activation = observe.TensorNode("input");
    if (activation == nullptr || base.graph().FindNode(activation->name()) == nullptr) continue;
    // Channels: dim -3 of a conv2d's [N,]C,H,W input, the last of a
    // linear's. A value read both ways is left alone (one axis per value).
    const int axis = n->is_call("conv2d") ? -3 : -1;
    auto [it, fresh] = axis_of.emplace(activation->name(), axis);
    if (!fresh && it->second != axis) {
      conflicting.insert(activation->name());
      continue;
    }
    input_of[n->name()] = activation->name();
    if (fresh) values.push_back({activation->name(), axis});
  }
  ASSIGN_OR_RETURN(auto stats, CollectChannelStats(base, options.calibration, values));
  passes::quantize::InputMeans means;
  for (const auto& [call, activation] : input_of) {
    if (!conflicting.contains(activation)) means[call] = stats[activation].Mean();
  }
  return means;
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
  QuantizeResult result;
  Module base = original.Clone();
  if (options.smooth_quant_alpha.has_value()) {
    ASSIGN_OR_RETURN(base, Smoothed(original, options, result.smoothed));
  }
  Module prepared = base.Clone();
  ASSIGN_OR_RETURN(result.prepared, passes::quantize::Prepare(prepared, options.config));
  ASSIGN_OR_RETURN(CalibrationStats stats,
                   Calibrate(prepared, options.calibration, options.progress));
  RETURN_IF_ERROR(ApplyCalibration(prepared, stats, options.config));
  passes::quantize::QuantConfig config = options.config;
  passes::quantize::InputMeans means;
  if (options.bias_correction) {
    ASSIGN_OR_RETURN(means, InputChannelMeans(prepared, base, options));
  }
  const passes::quantize::InputMeans* correction = options.bias_correction ? &means : nullptr;
  ASSIGN_OR_RETURN(result.module, Converted(prepared, config, correction, result.converted));
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
    ASSIGN_OR_RETURN(result.module, Converted(prepared, config, correction, result.converted));
    ASSIGN_OR_RETURN(report, MeasureAccuracy(original, result.module, options.evaluation, config));
  }
  report.kept_float = kept;
  report.kept_float_reasons = reasons;
  result.accuracy = std::move(report);
  return result;
}

}  // namespace graft::quantize
