#ifndef GRAFT_PASSES_QUANTIZE_SMOOTH_QUANT_H_
#define GRAFT_PASSES_QUANTIZE_SMOOTH_QUANT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "passes/quantize/quant_config.h"

namespace graft::passes::quantize {

// What SmoothQuant did.
struct SmoothQuantReport {
  // One line per smoothed activation: "value -> call, call (how)".
  std::vector<std::string> smoothed;
  int folded = 0;    // Scales folded into the weight and bias of the maker.
  int inserted = 0;  // Scales applied by a new mul.
};

// The activations SmoothQuant may smooth in `module`: the inputs (last dim:
// the channels) of the quantized calls of linear, graft::linear_activation
// and matmul by a constant weight that only that call reads. Their
// per-channel largest magnitudes, over calibration data, are what
// SmoothQuant needs.
std::vector<std::string> SmoothableActivations(const Module& module, const QuantConfig& config);

// SmoothQuant (Xiao et al., 2023): moves activation outliers into weights,
// which quantize per channel and take them well. For each smoothable
// activation X (the channels of its last dim) and the calls W1..Wk that
// read it: s_j = max|X_j|^alpha / max_k max|Wk[.., j]|^(1 - alpha), each
// weight's input row or column j times s_j, and X_j divided by s_j: in the
// weight and bias of the layer_norm or linear (through a ReLU) that makes X
// when only these calls read X and nothing else reads those tensors, else
// by a new mul by 1/s. The float model
// computes the same (up to rounding). `abs_max`: per activation (node
// name), the largest |x| of each channel over calibration data; an
// activation without it is left alone. alpha in [0, 1]; 0.5 is the paper's
// default.
absl::StatusOr<SmoothQuantReport> SmoothQuant(
    Module& module, const QuantConfig& config,
    const std::map<std::string, std::vector<double>>& abs_max, double alpha);

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_SMOOTH_QUANT_H_
