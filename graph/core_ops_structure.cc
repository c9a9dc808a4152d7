// Structural ops of docs/ops.md: tuple access and pass-throughs.

#include "absl/strings/str_cat.h"
#include "graph/core_ops_internal.h"
#include "graph/node.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::StatusOr<TensorType> GetItem(const InferContext& ctx) {
  // core_ops::Add has checked that the input is a tuple-valued node.
  const std::vector<TensorType>& types = ctx.TupleTypes("input");
  int64_t n = static_cast<int64_t>(types.size());
  int64_t index = ctx.call().Int("index");
  if (index < -n || index >= n) {
    return ctx.Error(absl::StrCat("index ", index, " out of range for the ", n,
                                  " results of ",
                                  ctx.call().TensorNode("input")->Ref(),
                                  " (expected ", -n, "..", n - 1, ")"));
  }
  return types[index < 0 ? index + n : index];
}

absl::StatusOr<TensorType> Same(const InferContext& ctx) {
  return ctx.Type("input");
}

absl::StatusOr<TensorType> Dropout(const InferContext& ctx) {
  double p = ctx.call().Float("p");
  if (!(p >= 0 && p <= 1)) {
    return ctx.Error(absl::StrCat("p must be in [0, 1], got ", p));
  }
  return ctx.Type("input");
}

}  // namespace

void RegisterStructureOps(OpRegistry& r) {
  Add(r, {.name = "getitem",
          .params = {Param("input", K::kTensor), Param("index", K::kInt)},
          .traits = {.kind = OpKind::kView},
          .infer = One(GetItem),
          .summary = "one element of a tuple result"});
  Add(r, {.name = "identity",
          .params = {Param("input", K::kTensor)},
          .traits = {.kind = OpKind::kPointwise, .formula = Formula("input")},
          .infer = One(Same),
          .summary = "the input, unchanged"});
  Add(r, {.name = "dropout",
          .params = {Param("input", K::kTensor), Defaulted("p", K::kFloat, 0.5),
                     Defaulted("training", K::kBool, false)},
          .infer = One(Dropout),
          .summary = "randomly zero elements when training; identity in "
                     "inference"});
}

}  // namespace graft::core_ops
