#ifndef GRAFT_GRAPH_QUANT_OPS_H_
#define GRAFT_GRAPH_QUANT_OPS_H_

#include "absl/strings/string_view.h"

namespace graft {

// The observer of post-training quantization (passes/quantize/), a core op
// (graph/core_ops_quant.cc):
//
//   graft::observe(input: Tensor, scale: float? = None,
//                  zero_point: int? = None, dtype: dtype = i8)
//
// The identity on a floating-point value. quantize-prepare puts one on each
// value to be quantized; calibration records the ranges the value takes
// and writes the chosen scale and zero point into the node; quantize-convert
// turns each calibrated observer into quantize and dequantize. Impure, so no
// pass drops or merges one before calibration has read it.
inline constexpr absl::string_view kObserveOp = "graft::observe";

}  // namespace graft

#endif  // GRAFT_GRAPH_QUANT_OPS_H_
