#ifndef GRAFT_BACKENDS_STRIDED_VIEW_H_
#define GRAFT_BACKENDS_STRIDED_VIEW_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/dtype.h"
#include "graph/node.h"
#include "graph/op_registry.h"

namespace graft {

// The index arithmetic every code generator shares: how a step's result
// element reads its operands' elements. Strides and offsets count
// elements.

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims);
// Element strides of a dense tensor in NCHW order, for its layout: row
// major, or channels-last (NHWC) for a 4-D one.
std::vector<int64_t> LayoutStrides(const std::vector<int64_t>& dims,
                                   bool channels_last);
// The strides that broadcast a tensor of `dims` (NumPy rules, aligned on
// the right) over the index space `out`.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out);
// A value of `dims` read over the index space `out` (right-aligned, as
// BroadcastStrides), laid out channels-last (NHWC) when `channels_last`
// and 4-D: its own layout's strides, zero where it broadcasts.
std::vector<int64_t> LayoutBroadcastStrides(const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& out, bool channels_last);

// A node's static dims (its type must be known and constant).
std::vector<int64_t> DimsOf(const Node& node);
// dim < 0 counts from the end.
int64_t NormalizeDim(int64_t dim, int64_t rank);
// dims[from] * ... * dims[to - 1].
int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to);

// Where element (i0, i1, ...) of a view op's result is in its dense,
// row-major input: offset + sum(i_k * strides[k]).
struct StridedSource {
  int64_t offset = 0;
  std::vector<int64_t> strides;
};
// For permute, transpose, expand, slice and getitem (of split) nodes.
absl::StatusOr<StridedSource> ViewSource(const Node& node);
// The same over an input that is itself strided: element (j0, j1, ...) of
// the view op's input at input.offset + sum(j_k * input.strides[k]).
absl::StatusOr<StridedSource> ViewSourceOver(const Node& node, const StridedSource& input);
// The strides of `new_dims` over the elements that `old_dims` reaches
// with `old_strides`, in the same row-major order (a reshape of a strided
// view without a copy), or nothing when no strides can (PyTorch's rule for
// Tensor.view).
std::optional<std::vector<int64_t>> ReshapeStrides(const std::vector<int64_t>& old_dims,
                                                   const std::vector<int64_t>& old_strides,
                                                   const std::vector<int64_t>& new_dims);

// How a reduction (sum, mean, amax, amin) splits its input's dims: the kept
// ones (the result's elements) and the reduced ones, each with the input's
// element strides. None or an empty dim list reduces every dim, as in
// PyTorch; a rank-0 input accepts dim 0 or -1 and reduces nothing.
struct ReductionSplit {
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
};
ReductionSplit SplitReduction(const OpCall& call, const std::vector<int64_t>& in_dims);

// The dtype a pointwise call computes in: its result's, except that a
// comparison computes in its operands' common type and a saturating cast
// to a narrower float in its input's.
DType PointwiseComputeType(const Node& node, const OpCall& call);

}  // namespace graft

#endif  // GRAFT_BACKENDS_STRIDED_VIEW_H_
