// Creation ops of docs/ops.md: tensors made from arguments alone.

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/core_ops_internal.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::StatusOr<Shape> SizeParam(const InferContext& ctx) {
  std::vector<int64_t> size = ctx.call().Ints("size");
  for (int64_t s : size) {
    if (s < 0) {
      return ctx.Error(absl::StrCat("size [", absl::StrJoin(size, ","),
                                    "] must not have negative entries"));
    }
  }
  return ShapeFromDims(size);
}

absl::StatusOr<TensorType> Filled(const InferContext& ctx) {
  absl::StatusOr<Shape> shape = SizeParam(ctx);
  if (!shape.ok()) return shape.status();
  return TensorType{ctx.call().GetDType("dtype"), *std::move(shape)};
}

// A Scalar literal as a number; bools count as 0 and 1.
double Number(const Argument& a) {
  return a.is_bool() ? (a.bool_value() ? 1.0 : 0.0) : a.number();
}
bool IsIntegral(const Argument& a) { return a.is_int() || a.is_bool(); }
int64_t IntOf(const Argument& a) {
  return a.is_bool() ? (a.bool_value() ? 1 : 0) : a.int_value();
}

absl::StatusOr<TensorType> Arange(const InferContext& ctx) {
  const Argument& start = ctx.call().Get("start");
  const Argument& end = ctx.call().Get("end");
  const Argument& step = ctx.call().Get("step");
  bool all_ints = IsIntegral(start) && IsIntegral(end) && IsIntegral(step);
  DType dtype = all_ints ? DType::kI64 : DType::kF32;
  if (!ctx.call().IsNone("dtype")) dtype = ctx.call().GetDType("dtype");
  if (dtype == DType::kBool) return ctx.Error("dtype bool is not supported");
  double lo = Number(start), hi = Number(end), by = Number(step);
  if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(by)) {
    return ctx.Error("start, end and step must be finite");
  }
  if (by == 0) return ctx.Error("step must not be zero");
  if ((hi - lo) * by < 0) {
    return ctx.Error(absl::StrCat("step ", by, " does not lead from start ", lo,
                                  " to end ", hi));
  }
  int64_t length;
  if (all_ints) {
    // Exact: ceil((end - start) / step) without rounding through double.
    int64_t a = IntOf(start), b = IntOf(end), s = IntOf(step);
    int64_t distance = s > 0 ? b - a : a - b;
    int64_t magnitude = s > 0 ? s : -s;
    length = (distance + magnitude - 1) / magnitude;
  } else {
    double n = std::ceil((hi - lo) / by);
    if (n > 9.0e18) return ctx.Error("the result would be too large");
    length = static_cast<int64_t>(n);
  }
  return TensorType{dtype, {Dim(length)}};
}

}  // namespace

void RegisterCreationOps(OpRegistry& r) {
  Add(r,
      {.name = "full",
       .params = {Param("size", K::kIntList), Param("fill_value", K::kScalar),
                  Defaulted("dtype", K::kDType, DType::kF32)},
       .infer = One(Filled),
       .summary = "a tensor of the given size filled with one value"});
  Add(r, {.name = "zeros",
          .params = {Param("size", K::kIntList),
                     Defaulted("dtype", K::kDType, DType::kF32)},
          .infer = One(Filled),
          .summary = "a tensor of the given size filled with zeros"});
  Add(r, {.name = "arange",
          .params = {Param("start", K::kScalar), Param("end", K::kScalar),
                     Defaulted("step", K::kScalar, 1),
                     Optional("dtype", K::kDType)},
          .infer = One(Arange),
          .summary = "values start, start + step, ... below end; i64 when all "
                     "are ints, else f32"});
}

}  // namespace graft::core_ops
