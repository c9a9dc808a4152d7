#ifndef GRAFT_GRAPH_FLOAT_LIMITS_H_
#define GRAFT_GRAPH_FLOAT_LIMITS_H_

#include "graph/dtype.h"

namespace graft {

// The largest finite value of a floating-point dtype (f16 65504, bf16
// (2 - 2^-7) * 2^127, about 3.39e38); 0 for other dtypes. A saturating
// cast (cast's `saturate`) clamps to it.
double LargestFinite(DType dtype);

}  // namespace graft

#endif  // GRAFT_GRAPH_FLOAT_LIMITS_H_
