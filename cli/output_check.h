#ifndef GRAFT_CLI_OUTPUT_CHECK_H_
#define GRAFT_CLI_OUTPUT_CHECK_H_

// `graft run --check BACKEND`: a run's outputs against another backend's.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/tensor.h"

namespace graft::cli {

// Quantized graphs' outputs agree when their SQNR against the reference
// reaches this (a step's difference here and there; a wrong kernel gives
// far less).
constexpr double kQuantizedCheckSqnr = 40;

// The largest difference between two runs' outputs, per output, beside the
// largest magnitude of the reference: "y: max abs error 3.1e-07, max |ref|
// 4.2 (relative 7.4e-08)". Fails when the outputs' number, dtypes or shapes
// differ, or an error is beyond `tolerance` relative to the largest
// magnitude; or, `by_norm` (bf16, f16 and tf32 runs, whose error is
// relative to a whole output rather than to its largest element, as the
// tests judge them), when ||output - reference|| is beyond `tolerance`
// times ||reference|| (at least 1e-3), or one element is off by more than
// 10 x `tolerance` of the largest magnitude (at least 1e-3). A quantized
// run's float outputs (`quantized`) are judged by their SQNR against the
// reference, its integer outputs must agree exactly.
absl::StatusOr<std::string> CompareOutputs(absl::string_view reference_name,
                                           const std::vector<std::string>& names,
                                           const std::vector<Tensor>& outputs,
                                           const std::vector<Tensor>& reference,
                                           double tolerance, bool by_norm, bool quantized);

}  // namespace graft::cli

#endif  // GRAFT_CLI_OUTPUT_CHECK_H_
