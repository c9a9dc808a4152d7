#include "cli/output_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/dtype.h"
#include "quantize/accuracy.h"

namespace graft::cli {

absl::StatusOr<std::string> CompareOutputs(absl::string_view reference_name,
                                           const std::vector<std::string>& names,
                                           const std::vector<Tensor>& outputs,
                                           const std::vector<Tensor>& reference,
                                           double tolerance, bool by_norm, bool quantized) {
  if (outputs.size() != reference.size()) {
    return absl::InternalError(absl::StrCat(
        "--check ", reference_name, ": ", outputs.size(), " outputs against ",
        reference.size()));
  }
  std::string text = absl::StrCat("check against ", reference_name, ":\n");
  bool failed = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& a = outputs[i];
    const Tensor& b = reference[i];
    if (a.dtype() != b.dtype() || a.dims() != b.dims()) {
      return absl::InternalError(absl::StrCat(
          "--check ", reference_name, ": output ", names[i], " is ",
          a.TypeString(), " here and ", b.TypeString(), " there"));
    }
    double max_error = 0, max_ref = 0, error_norm = 0, ref_norm = 0;
    bool nan_mismatch = false;
    for (int64_t k = 0; k < a.NumElements(); ++k) {
      const double x = a.GetAsDouble(k), y = b.GetAsDouble(k);
      if (std::isnan(x) || std::isnan(y)) {
        nan_mismatch |= std::isnan(x) != std::isnan(y);
        continue;
      }
      if (std::isinf(x) || std::isinf(y)) {
        if (x != y) max_error = error_norm = std::numeric_limits<double>::infinity();
        continue;
      }
      max_error = std::max(max_error, std::abs(x - y));
      max_ref = std::max(max_ref, std::abs(y));
      error_norm += (x - y) * (x - y);
      ref_norm += y * y;
    }
    const double relative = max_error / std::max(max_ref, 1e-30);
    // An output of (nearly) zeros: its error's norm against 1e-3, as the
    // tests take it (tolerance x 1e-3 absolute).
    const double norm_relative = std::sqrt(error_norm) / std::max(std::sqrt(ref_norm), 1e-3);
    const bool judge_norm = by_norm && IsFloatingPoint(a.dtype());
    // One element far off, which the norm of a large output would hide.
    const bool far_off = max_error > 10 * tolerance * std::max(max_ref, 1e-3);
    // A quantized graph's values may land one step apart where two
    // backends' float inputs to a rounding differ in the last bit: judged
    // by SQNR (DESIGN section 5), not by the largest difference.
    // Integer outputs (quantized values themselves) must agree exactly.
    const bool by_sqnr = quantized && IsFloatingPoint(a.dtype());
    const double sqnr = by_sqnr ? quantize::Sqnr(b, a) : 0;
    const bool bad_float = judge_norm ? norm_relative > tolerance || far_off : relative > tolerance;
    const bool bad = nan_mismatch || (by_sqnr                     ? sqnr < kQuantizedCheckSqnr
                                      : IsFloatingPoint(a.dtype()) ? bad_float
                                                                   : max_error != 0);
    failed |= bad;
    absl::StrAppend(&text, "  ", names[i], ": max abs error ", max_error,
                    ", max |ref| ", max_ref, " (relative ", relative, ")",
                    judge_norm ? absl::StrCat(", norm-relative ", norm_relative) : "",
                    by_sqnr ? absl::StrFormat(", SQNR %.1f dB", sqnr) : "",
                    nan_mismatch ? ", NaN in one only" : "",
                    bad ? "  MISMATCH" : "", "\n");
  }
  if (failed) {
    return absl::InternalError(absl::StrCat(
        text, "outputs differ from ", reference_name, " beyond tolerance"));
  }
  return text;
}

}  // namespace graft::cli
