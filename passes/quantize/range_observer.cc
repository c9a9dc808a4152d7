#include "passes/quantize/range_observer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/tensor.h"

namespace graft::passes::quantize {
namespace {

// The smallest scale used: a value that was always zero still quantizes.
constexpr double kMinScale = 1e-12;

// The distance between f8e4m3 values around |v| (in units of the scale):
// 2^(e - 3) in binade e, the subnormal step 2^-9 below 2^-6.
double Float8Step(double v) {
  int e = 0;
  std::frexp(v, &e);  // v = f * 2^e, f in [0.5, 1): binade e - 1.
  return std::ldexp(1.0, std::max(e - 1, -6) - 3);
}

}  // namespace

absl::string_view CalibratorName(Calibrator calibrator) {
  switch (calibrator) {
    case Calibrator::kMinMax: return "minmax";
    case Calibrator::kPercentile: return "percentile";
    case Calibrator::kEntropy: return "entropy";
    case Calibrator::kMse: return "mse";
  }
  return "minmax";
}

absl::StatusOr<Calibrator> ParseCalibrator(absl::string_view name) {
  for (Calibrator c : {Calibrator::kMinMax, Calibrator::kPercentile, Calibrator::kEntropy,
                       Calibrator::kMse}) {
    if (CalibratorName(c) == name) return c;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "an observer is minmax, percentile, entropy or mse, got '", name, "'"));
}

absl::StatusOr<QuantRange> QuantRangeOf(DType dtype) {
  if (dtype == DType::kI8) return QuantRange{-128, 127};
  if (dtype == DType::kU8) return QuantRange{0, 255};
  return absl::InvalidArgumentError(
      absl::StrCat("quantized values are i8 or u8, not ", DTypeName(dtype)));
}

QuantParams ParamsForRange(double lo, double hi, DType dtype, bool symmetric) {
  const QuantRange range = dtype == DType::kU8 ? QuantRange{0, 255} : QuantRange{-128, 127};
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  QuantParams p;
  p.dtype = dtype;
  if (IsFloat8(dtype)) {
    // Symmetric always: the range's larger end at e4m3's largest value.
    p.scale = std::max(std::max(-lo, hi) / kFloat8E4M3Max, kMinScale);
    return p;
  }
  if (symmetric) {
    // 127 steps each side of zero, as PyTorch's symmetric observers.
    p.scale = std::max(std::max(-lo, hi) / 127.0, kMinScale);
    p.zero_point = dtype == DType::kU8 ? 128 : 0;
    return p;
  }
  p.scale = std::max((hi - lo) / static_cast<double>(range.max - range.min), kMinScale);
  p.zero_point = std::clamp<int64_t>(std::llround(range.min - lo / p.scale), range.min, range.max);
  return p;
}

void RangeObserver::Add(const Tensor& tensor) {
  const int64_t n = tensor.NumElements();
  if (n == 0) return;
  std::vector<double> values;
  if (tensor.dtype() == DType::kF32) {
    const float* data = tensor.data<float>();
    values.assign(data, data + n);
  } else {
    values = tensor.ToDoubles();
  }
  // Infinities and NaNs say nothing of a range (an overflow upstream):
  // they are skipped, and values beyond kLargest are taken as kLargest so
  // that the span stays finite.
  constexpr double kLargest = 1e300;
  double magnitude = 0;
  for (double& x : values) {
    if (!std::isfinite(x)) continue;
    x = std::clamp(x, -kLargest, kLargest);
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
    magnitude = std::max(magnitude, std::fabs(x));
  }
  Widen(std::max(magnitude, kMinScale));
  const double per_bin = kBins / (2 * span_);
  for (double x : values) {
    if (!std::isfinite(x)) continue;
    ++count_;
    // Zeros (half of what a ReLU gives) quantize exactly whatever the
    // range: they stay out of the histogram, where they would swamp the
    // bins the calibrators weigh.
    if (x == 0) continue;
    const double at = (std::clamp(x, -span_, span_) + span_) * per_bin;
    bins_[std::min<int64_t>(static_cast<int64_t>(at), kBins - 1)] += 1;
  }
}

// Doubling the span maps old bin i onto new bin kBins / 4 + i / 2.
void RangeObserver::Widen(double magnitude) {
  if (span_ == 0) {
    span_ = magnitude;
    return;
  }
  while (span_ < magnitude && span_ < 1e300) {
    std::vector<double> merged(kBins, 0.0);
    for (int i = 0; i < kBins; ++i) merged[kBins / 4 + i / 2] += bins_[i];
    bins_ = std::move(merged);
    span_ *= 2;
  }
}

std::vector<double> RangeObserver::AbsoluteBins() const {
  const int half = kBins / 2;
  std::vector<double> out(half);
  for (int j = 0; j < half; ++j) out[j] = bins_[half + j] + bins_[half - 1 - j];
  return out;
}

double RangeObserver::Percentile(double fraction) const {
  const std::vector<double> abs = AbsoluteBins();
  double total = 0;
  for (double c : abs) total += c;
  const double width = span_ / abs.size();
  double seen = 0;
  for (size_t j = 0; j < abs.size(); ++j) {
    seen += abs[j];
    if (seen >= fraction * total) return (j + 1) * width;
  }
  return span_;
}

// TensorRT's entropy calibration over the histogram of |x|: for each
// candidate threshold, the seen distribution (outliers folded into the
// last bin) against its quantization to `levels` uniform levels, or for
// `float8` to the f8e4m3 values below the threshold (bins whose centers
// round to one value are one level).
double RangeObserver::EntropyThreshold(int levels, bool float8) const {
  const std::vector<double> abs = AbsoluteBins();
  const int bins = static_cast<int>(abs.size());
  const double width = span_ / bins;
  double best_kl = std::numeric_limits<double>::infinity();
  int best = bins;
  std::vector<double> suffix(bins + 1, 0.0);
  for (int j = bins - 1; j >= 0; --j) suffix[j] = suffix[j + 1] + abs[j];
  for (int i = levels; i <= bins; ++i) {
    std::vector<double> p(abs.begin(), abs.begin() + i);
    p[i - 1] += suffix[i];
    std::vector<double> q(i, 0.0);
    // Each level's bins [start, end), in order.
    std::vector<std::pair<int, int>> cells;
    if (float8) {
      const double scale = (i + 0.5) * width / kFloat8E4M3Max;  // As returned below.
      // The codes rise with the bins: a new code starts a new level.
      uint8_t previous = 0;
      for (int j = 0; j < i; ++j) {
        const uint8_t code = DoubleToFloat8E4M3((j + 0.5) * width / scale);
        if (j == 0 || code != previous) {
          cells.emplace_back(j, j + 1);
        } else {
          cells.back().second = j + 1;
        }
        previous = code;
      }
    } else {
      for (int k = 0; k < levels; ++k) {
        cells.emplace_back(static_cast<int>(static_cast<int64_t>(k) * i / levels),
                           static_cast<int>(static_cast<int64_t>(k + 1) * i / levels));
      }
    }
    for (auto [start, end] : cells) {
      double sum = 0;
      int nonzero = 0;
      for (int j = start; j < end; ++j) {
        sum += abs[j];
        nonzero += abs[j] != 0;
      }
      for (int j = start; j < end; ++j) q[j] = abs[j] != 0 ? sum / nonzero : 0;
    }
    double p_total = 0, q_total = 0;
    for (int j = 0; j < i; ++j) p_total += p[j], q_total += q[j];
    if (p_total == 0 || q_total == 0) continue;
    double kl = 0;
    for (int j = 0; j < i; ++j) {
      if (p[j] == 0) continue;
      const double pj = p[j] / p_total;
      const double qj = std::max(q[j] / q_total, 1e-12);
      kl += pj * std::log(pj / qj);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return std::min((best + 0.5) * width, span_);
}

// The expected squared error of each threshold: rounding error step^2 / 12
// inside (the step threshold / levels, or for `float8` the distance between
// the f8e4m3 values around the value, with scale threshold / 448), the
// distance to the threshold outside.
double RangeObserver::MseThreshold(int levels, bool float8) const {
  const std::vector<double> abs = AbsoluteBins();
  const int bins = static_cast<int>(abs.size());
  const double width = span_ / bins;
  double best_error = std::numeric_limits<double>::infinity();
  double best = span_;
  for (int j = 1; j <= bins; ++j) {
    const double threshold = j * width;
    const double scale = threshold / (float8 ? kFloat8E4M3Max : levels);
    double error = 0;
    for (int k = 0; k < bins; ++k) {
      if (abs[k] == 0) continue;
      const double center = (k + 0.5) * width;
      const double step = float8 ? Float8Step(center / scale) * scale : scale;
      const double e = center <= threshold ? step * step / 12 : (center - threshold) * (center - threshold);
      error += abs[k] * e;
    }
    if (error < best_error) {
      best_error = error;
      best = threshold;
    }
  }
  return best;
}

std::pair<double, double> RangeObserver::Range(Calibrator calibrator, DType dtype,
                                               bool symmetric) const {
  if (count_ == 0) return {0, 0};
  const double magnitude = std::max(std::fabs(min_), std::fabs(max_));
  // The quantization steps between 0 and the threshold: 255 for u8 over a
  // value never negative, else about 127 (s8, or u8 over both signs).
  const int steps = dtype == DType::kU8 && !symmetric && min_ >= 0 ? 255 : 127;
  double threshold = magnitude;
  switch (calibrator) {
    case Calibrator::kMinMax:
      break;
    case Calibrator::kPercentile:
      threshold = Percentile(0.9999);
      break;
    case Calibrator::kEntropy:
      threshold = EntropyThreshold(steps + 1, IsFloat8(dtype));
      break;
    case Calibrator::kMse:
      threshold = MseThreshold(steps, IsFloat8(dtype));
      break;
  }
  threshold = std::min(threshold, magnitude);
  if (symmetric) return {-threshold, threshold};
  if (calibrator == Calibrator::kMinMax) return {min_, max_};
  return {std::max(min_, -threshold), std::min(max_, threshold)};
}

QuantParams RangeObserver::Params(Calibrator calibrator, DType dtype, bool symmetric) const {
  auto [lo, hi] = Range(calibrator, dtype, symmetric);
  return ParamsForRange(lo, hi, dtype, symmetric);
}

}  // namespace graft::passes::quantize
