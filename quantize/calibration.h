#ifndef GRAFT_QUANTIZE_CALIBRATION_H_
#define GRAFT_QUANTIZE_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "passes/quantize/quant_config.h"
#include "passes/quantize/range_observer.h"

namespace graft::quantize {

// One set of model inputs, in placeholder order.
using Sample = std::vector<Tensor>;

// `count` samples of random inputs (uniform in [-1, 1) for floats), as
// `graft run --random-inputs` makes them: reproducible from `seed`;
// symbolic dims sized by `dims`.
absl::StatusOr<std::vector<Sample>> RandomSamples(const Module& module, int count, uint64_t seed,
                                                  const SymbolBindings& dims = {});

// Calibration data from a folder: for a model with one input, one .npy file
// per sample (any names, taken in sorted order); for any model, one
// subfolder per sample holding NAME.npy for each input NAME. Every sample
// is checked against the model's inputs; errors name the file.
absl::StatusOr<std::vector<Sample>> LoadSamples(const std::string& dir, const Module& module);

// What calibration saw, per observer (by node name).
struct CalibrationStats {
  std::map<std::string, passes::quantize::RangeObserver> observers;
  int samples = 0;
};

// Called after each sample: (samples done, samples in all).
using Progress = std::function<void(int, int)>;

// Runs every sample through the interpreter and records, in each
// graft::observe of `prepared` (passes::quantize::Prepare), the values it
// sees. One pass: every calibrator is computed from these stats.
absl::StatusOr<CalibrationStats> Calibrate(const Module& prepared,
                                           absl::Span<const Sample> samples,
                                           const Progress& progress = nullptr);

// Writes into each observer of `prepared` the scale and zero point that
// `config`'s calibrator chooses from `stats`.
absl::Status ApplyCalibration(Module& prepared, const CalibrationStats& stats,
                              const passes::quantize::QuantConfig& config);

}  // namespace graft::quantize

#endif  // GRAFT_QUANTIZE_CALIBRATION_H_
