#ifndef GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_
#define GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_

#include "absl/status/status.h"
#include "graph/module.h"

namespace graft {

// The scales and zero points quantize_per_channel takes as module tensors,
// checked as the interpreter checks them when it runs the op: every scale
// positive and finite, every zero point a value of the quantized dtype (0
// for f8e4m3). Type inference checks the ones given as numbers; the
// compiled backends' kernels would divide by any scale, so a model that
// breaks these fails to compile, naming the node and the channel, rather
// than running on with infinities. (dequantize and the int8 products take
// any scale, there as in the interpreter.)
absl::Status CheckQuantizeConstants(const Module& module);

}  // namespace graft

#endif  // GRAFT_BACKENDS_QUANTIZE_CONSTANTS_H_
