#ifndef GRAFT_PASSES_FUSE_ATTENTION_H_
#define GRAFT_PASSES_FUSE_ATTENTION_H_

#include <functional>

#include "absl/status/statusor.h"
#include "graph/module.h"

namespace graft::passes {

// Attention written out, as PyTorch and ONNX exports of transformers have
// it, becomes one graft::attention (graph/fused_ops.h):
//
//   matmul(softmax(where(mask, fill, matmul(q, kT) * scale), -1), v)
//
// The scale is an optional mul or div by a number; the where is optional,
// and either arm may hold the fill (a number), the other the scores (a
// mask that keeps where it is true gains a logical_not). kT is any value
// whose last two dims transposed are the keys (a transpose or permute,
// usually: the fused op reads transpose(kT, -2, -1), which the backends
// compose with it into one view). A mask that is a module tensor of the
// causal pattern (true, i.e. filled with -inf, exactly above the diagonal,
// every leading dim 1) becomes causal=true and is dropped, so that a
// kernel can skip the keys after each query instead of reading a mask.
//
// Every intermediate value must have the next as its only user, q, kT and
// v the same leading dims (no broadcasting), and all types known.
// `accept` sees each fused node, typed, before it replaces the pattern; a
// node it refuses is erased and the pattern stays. Returns how many
// patterns were fused.
absl::StatusOr<int> FuseAttention(
    Module& module, const std::function<bool(const Node& fused)>& accept);

}  // namespace graft::passes

#endif  // GRAFT_PASSES_FUSE_ATTENTION_H_
