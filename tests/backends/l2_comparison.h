#ifndef GRAFT_TESTS_BACKENDS_L2_COMPARISON_H_
#define GRAFT_TESTS_BACKENDS_L2_COMPARISON_H_

#include <cmath>
#include <cstdint>

#include "graph/tensor.h"

namespace graft {

// ||got - want|| and ||want|| over the elements where `want` is finite;
// the others must be the same (NaN for NaN), counted as mismatches. For
// precisions whose error is relative to a whole output, not to each
// element (half-precision models, tf32 products that cancel).
struct L2Comparison {
  double diff = 0, norm = 0;
  int64_t nonfinite_mismatches = 0;
};
inline L2Comparison CompareL2(const Tensor& got, const Tensor& want) {
  L2Comparison c;
  for (int64_t k = 0; k < want.NumElements(); ++k) {
    const double w = want.GetAsDouble(k), g = got.GetAsDouble(k);
    if (!std::isfinite(w)) {
      c.nonfinite_mismatches += std::isnan(w) ? !std::isnan(g) : g != w;
      continue;
    }
    c.diff += (g - w) * (g - w);
    c.norm += w * w;
  }
  c.diff = std::sqrt(c.diff);
  c.norm = std::sqrt(c.norm);
  return c;
}

}  // namespace graft

#endif  // GRAFT_TESTS_BACKENDS_L2_COMPARISON_H_
