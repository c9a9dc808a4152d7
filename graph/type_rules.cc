#include "graph/type_rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace graft::rules {

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Dim da = i < rank - a.size() ? Dim(1) : a[i - (rank - a.size())];
    Dim db = i < rank - b.size() ? Dim(1) : b[i - (rank - b.size())];
    if (da == db || db == Dim(1)) {
      out[i] = da;
    } else if (da == Dim(1)) {
      out[i] = db;
    } else if (da.is_symbolic() && db.is_constant()) {
      out[i] = db;
    } else if (db.is_symbolic() && da.is_constant()) {
      out[i] = da;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ShapeToString(a), " and ", ShapeToString(b),
                       " do not broadcast (dim ", i, ": ", da.ToString(), " vs ",
                       db.ToString(), ")"));
    }
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> SameAsInput(const InferContext& ctx) {
  return std::vector<TensorType>{ctx.Type("input")};
}

absl::StatusOr<std::vector<TensorType>> BroadcastBinary(const InferContext& ctx) {
  TensorType a = ctx.Type("input");
  TensorType b = ctx.Type("other");
  absl::StatusOr<Shape> shape = BroadcastShapes(a.shape, b.shape);
  if (!shape.ok()) return ctx.Error(shape.status().message());
  // A Python scalar does not widen a tensor's float dtype (PyTorch rule).
  DType dtype = PromoteTypes(a.dtype, b.dtype);
  if (!ctx.IsTensor("other") && ctx.IsTensor("input")) {
    dtype = IsFloatingPoint(a.dtype) || !IsFloatingPoint(b.dtype) ? a.dtype : DType::kF32;
  } else if (!ctx.IsTensor("input") && ctx.IsTensor("other")) {
    dtype = IsFloatingPoint(b.dtype) || !IsFloatingPoint(a.dtype) ? b.dtype : DType::kF32;
  }
  return std::vector<TensorType>{TensorType{dtype, *std::move(shape)}};
}

}  // namespace graft::rules
