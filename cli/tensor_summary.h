#ifndef GRAFT_CLI_TENSOR_SUMMARY_H_
#define GRAFT_CLI_TENSOR_SUMMARY_H_

// Short, human-readable views of a tensor for command output: a few values
// and simple statistics, never the whole data.

#include <cstdint>
#include <string>

#include "graph/dtype.h"
#include "graph/tensor.h"

namespace graft::cli {

// Statistics over the elements that are not NaN, as doubles.
struct TensorStats {
  int64_t count = 0;      // Elements that are not NaN.
  int64_t nan_count = 0;  // NaN elements (floating-point dtypes only).
  double min = 0;
  double max = 0;
  double mean = 0;  // For bool: the fraction that is true.
};

TensorStats ComputeStats(const Tensor& tensor);

// One element as text: integers exactly ("-3"), bools as "true"/"false",
// floating point with 6 significant digits ("0.333333", "1e+20", "nan").
std::string FormatValue(DType dtype, double value);

// The elements in flat order, "[1, 2, 3]"; with more than `max_values`,
// the first max_values - 1, "...", and the last: "[1, 2, ..., 9]". A rank-0
// tensor is its value without brackets.
std::string FormatValues(const Tensor& tensor, int64_t max_values = 8);

// "min -1, max 2.5, mean 0.25" (plus ", 3 NaN" when there are NaNs);
// "empty" for a tensor without elements and "all NaN" when nothing else is
// left.
std::string FormatStats(const Tensor& tensor);

}  // namespace graft::cli

#endif  // GRAFT_CLI_TENSOR_SUMMARY_H_
