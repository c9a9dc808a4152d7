#ifndef GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_
#define GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_

#include "absl/status/status.h"
#include "graph/module.h"

namespace graft {

// The scales and zero points that quantize_per_channel and dequantize take
// as module tensors, checked as the interpreter checks them when it runs:
// every scale positive and finite, every zero point a value of the
// quantized dtype (0 for f8e4m3), and the weight scales of the int8
// products positive and finite. Type inference checks the ones given as
// numbers; the compiled backends' kernels assume these hold, so a model
// that breaks them fails to compile, naming the node and the channel,
// rather than running on with infinities.
absl::Status CheckQuantizeConstants(const Module& module);

}  // namespace graft

#endif  // GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_
