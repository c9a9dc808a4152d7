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

// Unwraps a StatusOr or returns its error from the enclosing function.
#define GRAFT_ONNX_CONCAT_INNER(a, b) a##b
#define GRAFT_ONNX_CONCAT(a, b) GRAFT_ONNX_CONCAT_INNER(a, b)
#define GRAFT_ONNX_ASSIGN_OR_RETURN(lhs, expr) \
  GRAFT_ONNX_ASSIGN_OR_RETURN_IMPL(            \
      GRAFT_ONNX_CONCAT(graft_onnx_or_, __LINE__), lhs, expr)
#define GRAFT_ONNX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = *std::move(tmp)
#define GRAFT_ONNX_RETURN_IF_ERROR(expr)                   \
  do {                                                     \
    absl::Status graft_onnx_status = (expr);               \
    if (!graft_onnx_status.ok()) return graft_onnx_status; \
  } while (0)

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

// "[1,2,3]".
std::string IntsToString(const std::vector<int64_t>& v);

}  // namespace graft::onnx_import

#endif  // GRAFT_ONNX_ONNX_OPS_UTIL_H_
