#ifndef GRAFT_ONNX_ONNX_OPS_UTIL_H_
#define GRAFT_ONNX_ONNX_OPS_UTIL_H_

// Helpers shared by the op converters (onnx/onnx_ops_*.cc).

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/node.h"
#include "graph/shape.h"
#include "onnx/onnx_node_context.h"
#include "support/status_macros.h"

namespace graft::onnx_import {

// `node` converted to `dtype`, or `node` itself when it has that dtype.
absl::StatusOr<Node*> CastIfNeeded(NodeContext& ctx, Node* node, DType dtype);

// A reshape of `node` to `target`, where at most one dim may be symbolic
// (it becomes graft's -1); `node` itself when the shape already matches.
absl::StatusOr<Node*> ReshapeTo(NodeContext& ctx, Node* node,
                                const Shape& target);

// The static sizes of `type`'s dims, or an error naming `what` and the
// symbolic dim.
absl::StatusOr<std::vector<int64_t>> StaticDimsOf(const TensorType& type,
                                                  absl::string_view what);

// The integer-list attribute `name`, which must have `size` entries;
// `size` copies of `fill` when it is absent.
absl::StatusOr<std::vector<int64_t>> IntsAttr(NodeContext& ctx,
                                              absl::string_view name,
                                              size_t size, int64_t fill);

// Negative indices count from the end in ONNX; graft's kernels refuse
// them. `idx` (computed at run time) with n added to its negative
// entries, as where(idx < 0, idx + n, idx); n must be static.
absl::StatusOr<Node*> NonNegativeIndices(NodeContext& ctx, Node* idx, Dim n);
// Known indices made non-negative (an error for one out of range), as a
// constant i64 node.
absl::StatusOr<Node*> KnownIndices(NodeContext& ctx, const Tensor& indices,
                                   Dim n);

// a * b, or an error naming `what` when the product leaves int64 (sizes
// from a malformed model).
absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b, absl::string_view what);

// Tables the importer builds in memory from a model's sizes (OneHot's
// classes, ScatterND's rows) stay under this many entries.
inline constexpr int64_t kMaxImportTable = int64_t{1} << 26;

// A constant i64 node of shape `dims` holding `values`.
absl::StatusOr<Node*> I64Constant(NodeContext& ctx, std::vector<int64_t> dims,
                                  const std::vector<int64_t>& values,
                                  absl::string_view suffix);

// "[1,2,3]".
std::string IntsToString(const std::vector<int64_t>& v);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_OPS_UTIL_H_
