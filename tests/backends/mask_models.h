#ifndef GRAFT_TESTS_BACKENDS_MASK_MODELS_H_
#define GRAFT_TESTS_BACKENDS_MASK_MODELS_H_

// Attention masks as Hugging Face's models make them, for the tests of a
// float model cast to bf16 or f16 (passes/cast_float.h) on the
// interpreter and on the CUDA backend: (1 - mask) times
// torch.finfo(f32).min, from the caller's integer mask; an additive f32
// mask passed in; and a masked_fill (where) with that value. Batch 1
// masks every key, so each of its rows averages the values in the f32
// model (and would be NaN if f32's lowest became -inf).

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/module.h"
#include "graph/parser.h"
#include "graph/tensor.h"

namespace graft::backend_test {

inline absl::StatusOr<Module> AttentionMasksOfF32sLowest() {
  return ParseModule(R"(
tensor w : f32[8,8] = random(seed=3)
graph():
    %x : f32[2,4,8] = placeholder[target=x]
    %mask : i64[2,4] = placeholder[target=mask]
    %additive : f32[2,1,4] = placeholder[target=additive]
    %w = get_attr[target=w]
    %q = call_function[target=linear](args = (%x, %w), kwargs = {})
    %kt = call_function[target=transpose](args = (%x, 1, 2), kwargs = {})
    %scores = call_function[target=matmul](args = (%q, %kt), kwargs = {})
    %m = call_function[target=cast](args = (%mask, f32), kwargs = {})
    %keep = call_function[target=sub](args = (1.0, %m), kwargs = {})
    %fill = call_function[target=mul](args = (%keep, -3.4028234663852886e+38), kwargs = {})
    %rows = call_function[target=unsqueeze](args = (%fill, 1), kwargs = {})
    %masked = call_function[target=add](args = (%scores, %rows), kwargs = {})
    %both = call_function[target=add](args = (%scores, %additive), kwargs = {})
    %p = call_function[target=softmax](args = (%masked, -1), kwargs = {})
    %p2 = call_function[target=softmax](args = (%both, -1), kwargs = {})
    %pad = call_function[target=eq](args = (%rows, -3.4028234663852886e+38), kwargs = {})
    %filled = call_function[target=where](args = (%pad, -3.4028234663852886e+38, %scores), kwargs = {})
    %p3 = call_function[target=softmax](args = (%filled, -1), kwargs = {})
    %y = call_function[target=matmul](args = (%p, %x), kwargs = {})
    %y2 = call_function[target=matmul](args = (%p2, %x), kwargs = {})
    %y3 = call_function[target=matmul](args = (%p3, %x), kwargs = {})
    return (y, y2, y3)
)");
}

// Sets the masks of `inputs` (random data for x, mask and additive, in
// that order): batch 0 keeps three of its four keys, batch 1 none.
inline void MaskEveryKeyOfBatchOne(std::vector<Tensor>& inputs) {
  const float lowest = std::numeric_limits<float>::lowest();
  for (int64_t key = 0; key < 4; ++key) {
    inputs[1].data<int64_t>()[key] = key < 3;
    inputs[1].data<int64_t>()[4 + key] = 0;
    inputs[2].data<float>()[key] = key == 0 ? lowest : 0.0f;
    inputs[2].data<float>()[4 + key] = lowest;
  }
}

}  // namespace graft::backend_test

#endif  // GRAFT_TESTS_BACKENDS_MASK_MODELS_H_
