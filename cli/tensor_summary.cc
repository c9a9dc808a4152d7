#include "cli/tensor_summary.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace graft::cli {

TensorStats ComputeStats(const Tensor& tensor) {
  TensorStats stats;
  double sum = 0;
  const int64_t n = tensor.NumElements();
  for (int64_t i = 0; i < n; ++i) {
    const double v = tensor.GetAsDouble(i);
    if (std::isnan(v)) {
      ++stats.nan_count;
      continue;
    }
    if (stats.count == 0) {
      stats.min = stats.max = v;
    } else {
      stats.min = std::min(stats.min, v);
      stats.max = std::max(stats.max, v);
    }
    sum += v;
    ++stats.count;
  }
  if (stats.count > 0) stats.mean = sum / static_cast<double>(stats.count);
  return stats;
}

std::string FormatValue(DType dtype, double value) {
  if (dtype == DType::kBool) return value != 0 ? "true" : "false";
  if (IsInteger(dtype)) return absl::StrCat(static_cast<int64_t>(value));
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.6g", value);
}

std::string FormatValues(const Tensor& tensor, int64_t max_values) {
  const int64_t n = tensor.NumElements();
  const DType dtype = tensor.dtype();
  if (tensor.rank() == 0) return FormatValue(dtype, tensor.GetAsDouble(0));
  max_values = std::max<int64_t>(max_values, 2);
  std::string out = "[";
  auto append = [&](int64_t i) {
    if (out.size() > 1) out += ", ";
    out += FormatValue(dtype, tensor.GetAsDouble(i));
  };
  if (n <= max_values) {
    for (int64_t i = 0; i < n; ++i) append(i);
  } else {
    for (int64_t i = 0; i < max_values - 1; ++i) append(i);
    out += ", ...";
    append(n - 1);
  }
  out += "]";
  return out;
}

std::string FormatStats(const Tensor& tensor) {
  if (tensor.NumElements() == 0) return "empty";
  const TensorStats stats = ComputeStats(tensor);
  if (stats.count == 0) return "all NaN";
  const DType dtype = tensor.dtype();
  // The mean of integers or bools is a fraction: format it as a float.
  std::string out =
      absl::StrCat("min ", FormatValue(dtype, stats.min), ", max ",
                   FormatValue(dtype, stats.max), ", mean ",
                   FormatValue(DType::kF64, stats.mean));
  if (stats.nan_count > 0) absl::StrAppend(&out, ", ", stats.nan_count, " NaN");
  return out;
}

}  // namespace graft::cli
