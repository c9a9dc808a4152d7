#ifndef GRAFT_BACKENDS_FOLD_DEQUANTIZED_WEIGHTS_H_
#define GRAFT_BACKENDS_FOLD_DEQUANTIZED_WEIGHTS_H_

#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft {

// Replaces each f32 dequantize of a module tensor (integer or f8e4m3; its
// scale and zero point module tensors or numbers, per tensor or per
// channel) that only
// matrix products and convolutions read, as their weight, by a module
// tensor holding its values: the weights of a quantized model's reference
// graph (graft quantize without --lower, or a QDQ ONNX export). A product
// whose weight is a module tensor is prepacked once; one whose weight is
// computed each run is not, and oneDNN's convolutions over such weights
// run many times slower. The values are the interpreter's, bit for bit:
// (q - zero point) * scale in double, rounded to f32. Returns whether it
// changed anything. `module` must be typed (shape propagation).
absl::StatusOr<bool> FoldDequantizedWeights(Module& module);

}  // namespace graft

#endif  // GRAFT_BACKENDS_FOLD_DEQUANTIZED_WEIGHTS_H_
