// graft quantize MODEL (--calib-dir DIR | --calib-random N) -o OUT: post-
// training quantization end to end (docs/quantization.md).

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/input_binding.h"
#include "cli/load_module.h"
#include "cli/output.h"
#include "passes/quantize/lower.h"
#include "quantize/quantize_model.h"
#include "serialize/model_io.h"
#include "support/status_macros.h"
#include "viz/dot_writer.h"
#include "viz/graphviz_render.h"

namespace graft::cli {
namespace {

struct QuantizeArgs {
  std::string model;
  std::string output;
  std::string calib_dir;
  int calib_random = 0;
  uint64_t seed = 0;
  std::vector<std::string> dims;
  bool per_tensor = false;
  std::string observer = "minmax";
  std::string dtype = "int8";
  std::vector<std::string> skip;
  std::vector<std::string> overrides;
  bool report = false;
  std::string report_svg;
  std::optional<double> min_sqnr;
  bool lower = false;
  std::optional<double> smooth_quant;
  bool bias_correction = false;
};

// Calibration and evaluation samples. Random ones are held out by seed; of
// a folder's samples every fifth is held out when there are five or more
// (else the report measures on the calibration data and says so).
absl::Status Samples(const QuantizeArgs& args, const Module& module,
                     quantize::QuantizeOptions& options, std::string& note) {
  if (args.calib_dir.empty() == (args.calib_random == 0)) {
    return absl::InvalidArgumentError("give one of --calib-dir DIR and --calib-random N");
  }
  ASSIGN_OR_RETURN(SymbolBindings dims, ParseDims(args.dims));
  if (args.calib_random > 0) {
    ASSIGN_OR_RETURN(options.calibration,
                     quantize::RandomSamples(module, args.calib_random, args.seed, dims));
    ASSIGN_OR_RETURN(options.evaluation,
                     quantize::RandomSamples(module, std::max(4, args.calib_random / 4),
                                             args.seed + 1000003, dims));
    note = absl::StrCat("on ", options.evaluation.size(), " held-out random samples");
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<quantize::Sample> all, quantize::LoadSamples(args.calib_dir, module));
  if (all.size() < 5) {
    options.calibration = all;
    options.evaluation = all;
    note = absl::StrCat("on the ", all.size(), " calibration samples (too few to hold any out)");
    return absl::OkStatus();
  }
  for (size_t i = 0; i < all.size(); ++i) {
    (i % 5 == 4 ? options.evaluation : options.calibration).push_back(all[i]);
  }
  note = absl::StrCat("on ", options.evaluation.size(), " held-out samples of ", args.calib_dir);
  return absl::OkStatus();
}

// The heat map's colour of a call's output SQNR.
std::string SqnrColor(double db) {
  if (db >= 40) return "#a5d6a7";  // Green.
  if (db >= 30) return "#fff59d";  // Yellow.
  if (db >= 20) return "#ffcc80";  // Orange.
  return "#ef9a9a";                // Red.
}

// The float model, each quantized call coloured by its output SQNR and
// labelled with it, the calls kept float grey.
absl::Status DrawReport(const Module& model, const quantize::AccuracyReport& report,
                        const std::string& path) {
  DotOptions options;
  options.title = absl::StrFormat("output SQNR by call (model %.1f dB): green >= 40, yellow >= 30, "
                                  "orange >= 20, red below; grey kept float",
                                  report.model_sqnr);
  for (const quantize::NodeAccuracy& n : report.nodes) {
    const Node* node = model.graph().FindNode(n.name);
    if (node == nullptr) continue;
    options.fill_colors[node] = SqnrColor(n.output_sqnr);
    options.notes[node] = absl::StrFormat("%.1f dB (weight %.1f dB)", n.output_sqnr, n.weight_sqnr);
  }
  for (const std::string& name : report.kept_float) {
    const Node* node = model.graph().FindNode(name);
    if (node == nullptr) continue;
    options.fill_colors[node] = "#e0e0e0";
    options.notes[node] = "kept float";
  }
  std::string warning;
  RETURN_IF_ERROR(WriteModulePicture(model, path, options, &warning));
  if (!warning.empty()) std::fprintf(stderr, "graft: warning: %s\n", warning.c_str());
  return absl::OkStatus();
}

absl::Status RunQuantize(const QuantizeArgs& args) {
  RETURN_IF_ERROR(OutputModelFormatForPath(args.output).status());
  if (!args.report_svg.empty()) {
    ASSIGN_OR_RETURN(PictureFormat format, PictureFormatForPath(args.report_svg));
    if (format != PictureFormat::kDot && !HaveGraphviz()) {
      return absl::FailedPreconditionError(GraphvizMissingMessage());
    }
  }
  ASSIGN_OR_RETURN(Module module, LoadModule(args.model));
  quantize::QuantizeOptions options;
  passes::quantize::QuantConfig& config = options.config;
  config.skip = args.skip;
  config.per_channel_weights = !args.per_tensor;
  // fp8: activations and weights as f8e4m3, symmetric.
  config.activation_dtype = args.dtype == "uint8" ? DType::kU8
                            : args.dtype == "fp8" ? DType::kF8E4M3
                                                  : DType::kI8;
  config.weight_dtype = args.dtype == "fp8" ? DType::kF8E4M3 : DType::kI8;
  config.symmetric_activations = args.dtype != "uint8";
  ASSIGN_OR_RETURN(config.calibrator, passes::quantize::ParseCalibrator(args.observer));
  for (const std::string& text : args.overrides) {
    ASSIGN_OR_RETURN(passes::quantize::ActivationOverride o,
                     passes::quantize::ParseActivationOverride(text));
    config.overrides.push_back(std::move(o));
  }
  std::string note;
  RETURN_IF_ERROR(Samples(args, module, options, note));
  options.min_sqnr = args.min_sqnr;
  options.smooth_quant_alpha = args.smooth_quant;
  options.bias_correction = args.bias_correction;
  if (!args.report && args.report_svg.empty() && !args.min_sqnr.has_value()) {
    options.evaluation.clear();
  }
  if (isatty(STDERR_FILENO)) {
    options.progress = [](int done, int total) {
      std::fprintf(stderr, "\rcalibrating: %d/%d samples", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  ASSIGN_OR_RETURN(quantize::QuantizeResult result, quantize::QuantizeModel(module, options));
  std::string audit;
  if (args.lower) {
    ASSIGN_OR_RETURN(passes::quantize::LowerReport lowered,
                     passes::quantize::Lower(result.module));
    audit = lowered.ToString();
  }
  RETURN_IF_ERROR(SaveModel(result.module, args.output));
  std::string text = absl::StrCat("quantized ", result.converted.quantized.size(), " calls (",
                                  result.prepared.observers, " observers, ",
                                  options.calibration.size(), " calibration samples, observer ",
                                  args.observer, ")");
  if (!result.prepared.skipped.empty()) {
    absl::StrAppend(&text, "; skipped ", result.prepared.skipped.size());
  }
  absl::StrAppend(&text, "\n");
  if (args.smooth_quant.has_value()) {
    absl::StrAppend(&text, "smoothed ", result.smoothed.smoothed.size(), " activations (alpha ",
                    *args.smooth_quant, "): ", result.smoothed.folded,
                    " folded into the maker's weights, ", result.smoothed.inserted,
                    " by a new mul\n");
    for (const std::string& line : result.smoothed.smoothed) {
      absl::StrAppend(&text, "  ", line, "\n");
    }
  }
  if (args.bias_correction) {
    absl::StrAppend(&text, "bias correction: ", result.converted.bias_corrected.size(),
                    " calls\n");
  }
  if (result.accuracy.has_value()) {
    absl::StrAppend(&text, "accuracy ", note, ":\n", result.accuracy->ToString());
  }
  absl::StrAppend(&text, audit);
  absl::StrAppend(&text, "wrote ", args.output, "\n");
  if (!args.report_svg.empty() && result.accuracy.has_value()) {
    RETURN_IF_ERROR(DrawReport(module, *result.accuracy, args.report_svg));
    absl::StrAppend(&text, "wrote ", args.report_svg, "\n");
  }
  return WriteStdout(text);
}

}  // namespace

Command AddQuantizeCommand(CLI::App& graft) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* app = graft.add_subcommand(
      "quantize",
      "Post-training quantization: observe, calibrate, and write the int8 reference graph "
      "(quantize/dequantize around the float ops), with a per-call SQNR report");
  app->add_option("model", args->model, "Model file")->required();
  app->add_option("-o,--output", args->output, "Quantized model to write (.graft, .gpb, .json)")
      ->required();
  app->add_option("--calib-dir", args->calib_dir,
                  "Calibration data: one .npy per sample (one-input models), or one folder per "
                  "sample with NAME.npy per input");
  app->add_option("--calib-random", args->calib_random,
                  "Calibrate on N random samples (uniform in [-1, 1)), reproducible from --seed")
      ->check(CLI::PositiveNumber);
  app->add_option("--seed", args->seed, "Seed of the random samples");
  app->add_option("--dim", args->dims, "SYMBOL=SIZE: a symbolic dim's size for random samples");
  app->add_flag("--per-tensor,!--per-channel", args->per_tensor,
                "Weights: one scale per tensor, or (default) one per output channel");
  app->add_option("--observer", args->observer, "How activation ranges are chosen")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy", "mse"}))
      ->capture_default_str();
  app->add_option("--dtype", args->dtype,
                  "int8 (symmetric activations), uint8 (affine activations), or fp8 (e4m3 "
                  "activations and weights)")
      ->check(CLI::IsMember({"int8", "uint8", "fp8"}))
      ->capture_default_str();
  app->add_option("--skip", args->skip, "GLOB: calls whose names match stay float (repeatable)");
  app->add_option("--override", args->overrides,
                  "GLOB:dtype=int8|uint8,observer=NAME: how the activations made by nodes "
                  "whose names match are quantized (repeatable; the first match wins)");
  app->add_flag("--report", args->report,
                "Print each quantized call's weight and output SQNR and the model's");
  app->add_option("--report-svg", args->report_svg,
                  "Draw the model with each quantized call coloured by its output SQNR "
                  "(.svg, .png, or .dot)");
  app->add_flag("--lower", args->lower,
                "Also fuse dequantize -> linear into int8 products (quantize-lower) and print "
                "the audit: what did not fuse, the share of multiply-accumulates in int8");
  app->add_option("--smooth-quant", args->smooth_quant,
                  "SmoothQuant with ALPHA in [0, 1] (0.5 is usual): move activation outliers "
                  "into the weights before calibrating")
      ->check(CLI::Range(0.0, 1.0));
  app->add_flag("--bias-correction", args->bias_correction,
                "Subtract from each quantized call's bias the mean error its int8 weight adds");
  app->add_option("--min-sqnr", args->min_sqnr,
                  "Return the worst calls to float, one at a time, until the model's output "
                  "SQNR reaches DB");
  return Command{app, [args] { return RunQuantize(*args); }};
}

}  // namespace graft::cli
