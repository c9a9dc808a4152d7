#ifndef GRAFT_PASSES_QUANTIZE_RANGE_OBSERVER_H_
#define GRAFT_PASSES_QUANTIZE_RANGE_OBSERVER_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/dtype.h"
#include "graph/tensor.h"

namespace graft::passes::quantize {

// How a value's clipping range is chosen from what calibration saw.
enum class Calibrator : unsigned char {
  kMinMax,      // Everything seen: no clipping.
  kPercentile,  // The 99.99th percentile of |x|.
  kEntropy,     // The threshold whose quantized histogram is closest to the
                // seen one in KL divergence (TensorRT's calibrator).
  kMse,         // The threshold with the least expected squared error,
                // rounding and clipping together.
};
absl::string_view CalibratorName(Calibrator calibrator);
// "minmax", "percentile", "entropy", "mse".
absl::StatusOr<Calibrator> ParseCalibrator(absl::string_view name);

// A quantized value's parameters: q = clamp(round(x / scale) + zero_point).
struct QuantParams {
  double scale = 1;
  int64_t zero_point = 0;
  DType dtype = DType::kI8;
};

// i8 [-128, 127] or u8 [0, 255].
struct QuantRange {
  int64_t min, max;
};
absl::StatusOr<QuantRange> QuantRangeOf(DType dtype);

// f8e4m3's largest finite value.
inline constexpr double kFloat8E4M3Max = 448;

// The parameters for clipping range [lo, hi] (widened to hold 0):
// symmetric (zero point 0 for i8, 128 for u8) or affine; f8e4m3 is always
// symmetric, the larger end of the range at 448.
QuantParams ParamsForRange(double lo, double hi, DType dtype, bool symmetric);

// What calibration records of one value: its min, max and one histogram of
// 2048 bins over [-r, r]. When a value falls outside, r doubles and bins
// merge pairwise, which is exact for the merged counts, so memory stays
// bounded however much data passes, and one pass serves every calibrator.
class RangeObserver {
 public:
  static constexpr int kBins = 2048;

  // Records every element of a floating-point tensor (NaNs and infinities
  // are skipped; zeros count in min, max and count() but not in the
  // histogram).
  void Add(const Tensor& tensor);

  int64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  // Half the width of the histogram's span.
  double span() const { return span_; }
  const std::vector<double>& bins() const { return bins_; }

  // The clipping range `calibrator` chooses, [lo, hi]; symmetric ranges
  // have lo = -hi.
  std::pair<double, double> Range(Calibrator calibrator, DType dtype, bool symmetric) const;
  QuantParams Params(Calibrator calibrator, DType dtype, bool symmetric) const;

 private:
  void Widen(double magnitude);
  // Counts of |x| in kBins / 2 bins over [0, span].
  std::vector<double> AbsoluteBins() const;
  double Percentile(double fraction) const;  // Of |x|.
  // `levels` uniform levels, or the f8e4m3 values (`float8`).
  double EntropyThreshold(int levels, bool float8) const;
  double MseThreshold(int levels, bool float8) const;

  int64_t count_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  double span_ = 0;
  std::vector<double> bins_ = std::vector<double>(kBins, 0.0);
};

}  // namespace graft::passes::quantize

#endif  // GRAFT_PASSES_QUANTIZE_RANGE_OBSERVER_H_
