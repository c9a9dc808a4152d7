#ifndef GRAFT_PASSES_QUANTIZE_QUANT_CONFIG_H_
#define GRAFT_PASSES_QUANTIZE_QUANT_CONFIG_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/node.h"
#include "passes/pass.h"
#include "passes/quantize/range_observer.h"

namespace graft::passes::quantize {

// How one activation is quantized, where it differs from the config's
// defaults: the values made by nodes whose names match `glob`.
struct ActivationOverride {
  std::string glob;                      // fnmatch, on the value's node name.
  std::optional<DType> dtype;            // kI8 (symmetric) or kU8 (affine).
  std::optional<Calibrator> calibrator;  // How its range is chosen.
};

// Reads "GLOB:KEY=VALUE,KEY=VALUE" with keys dtype (int8, uint8) and
// observer (minmax, percentile, entropy, mse); errors name the text.
absl::StatusOr<ActivationOverride> ParseActivationOverride(absl::string_view text);

// What post-training quantization quantizes, and how (docs/quantization.md).
struct QuantConfig {
  // The ops whose calls are quantized: their float activation inputs and
  // their result get observers, their constant weights are quantized.
  std::vector<std::string> ops = {"linear", "matmul", "conv2d", "graft::linear_activation"};
  // Node-name globs (fnmatch: `*`, `?`, `[...]`) of calls left in float.
  // A glob that matches no call of the ops is an error: a typo would
  // otherwise quantize what the user meant to keep.
  std::vector<std::string> skip;
  // Calls the predicate rejects stay float too (for programs; not from the
  // command line).
  std::function<bool(const Node&)> predicate;
  // Weights: one scale per output channel (else one per tensor), always
  // symmetric: i8, or f8e4m3 (scale = largest magnitude / 448).
  bool per_channel_weights = true;
  DType weight_dtype = DType::kI8;
  // Activations: i8 (symmetric, the default: what VNNI and cuBLASLt's int8
  // kernels take, with no 7-bit reduce_range), u8 (affine) or f8e4m3
  // (symmetric, scale = clipping range / 448).
  DType activation_dtype = DType::kI8;
  bool symmetric_activations = true;
  // With i8 activations: a value calibration never saw negative (a ReLU's
  // result) becomes u8 with zero point 0 instead, all 256 levels for its
  // range and still no offset to subtract (oneDNN multiplies u8 by s8).
  // Off for cuBLASLt, whose int8 kernels take s8 only.
  bool unsigned_when_nonnegative = true;
  Calibrator calibrator = Calibrator::kMinMax;
  // Per-activation settings; the first override whose glob matches a value
  // applies to it. An override that matches no observed value is an error
  // (ApplyCalibration), as a skip glob that matches nothing is.
  std::vector<ActivationOverride> overrides;

  // The override for the value made by node `name`, or null.
  const ActivationOverride* OverrideFor(const std::string& name) const;
  // Checks the settings (dtypes, op names).
  absl::Status Validate() const;
  // Whether `node` is a call the config quantizes (op listed, not skipped,
  // predicate true).
  bool Quantizes(const Node& node) const;
};

// Reads the pipeline options `ops=OP;OP...` and `skip=GLOB;GLOB...`.
void ReadOpsAndSkip(const PassOptions& options, QuantConfig& config);

// Whether `name` matches the fnmatch glob `pattern`.
bool GlobMatches(const std::string& pattern, const std::string& name);

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_QUANT_CONFIG_H_
