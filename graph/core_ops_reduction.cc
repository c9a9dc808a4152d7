// Reductions and normalization ops of docs/ops.md.

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/core_ops_internal.h"
#include "graph/type_rules.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

absl::Status RequireFloat(const InferContext& ctx, const TensorType& t,
                          absl::string_view what = "input") {
  if (IsFloatingPoint(t.dtype)) return absl::OkStatus();
  return ctx.Error(absl::StrCat(what, " ", t.ToString(),
                                " is not floating point; cast it to a float "
                                "dtype first"));
}

// Which dims of `t` a reduction covers: `dims` normalized, or every dim
// when it is None or empty (as PyTorch treats dim=[]). A rank-0 input
// accepts dim 0 and -1, as PyTorch does, and reduces nothing.
absl::StatusOr<std::vector<bool>> ReducedDims(
    const InferContext& ctx, const TensorType& t,
    const std::optional<std::vector<int64_t>>& dims) {
  int64_t rank = t.rank();
  std::vector<bool> reduced(rank, false);
  if (!dims.has_value() || dims->empty()) {
    reduced.assign(rank, true);
    return reduced;
  }
  std::vector<bool> seen(std::max<int64_t>(rank, 1), false);
  for (int64_t d : *dims) {
    absl::StatusOr<int64_t> n =
        rules::NormalizeDim(ctx, d, std::max<int64_t>(rank, 1));
    if (!n.ok()) return n.status();
    if (seen[*n]) {
      return ctx.Error(absl::StrCat("dim ", d, " appears more than once in [",
                                    absl::StrJoin(*dims, ","), "]"));
    }
    seen[*n] = true;
    if (rank > 0) reduced[*n] = true;
  }
  return reduced;
}

// The shape left after reducing `reduced` dims of `t`; `nonempty` refuses
// reducing a dim of size 0 (a max of nothing is undefined).
absl::StatusOr<Shape> ReducedShape(const InferContext& ctx, const TensorType& t,
                                   const std::vector<bool>& reduced,
                                   bool keepdim, bool nonempty) {
  Shape out;
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (!reduced[i]) {
      out.push_back(t.shape[i]);
      continue;
    }
    if (nonempty && t.shape[i] == Dim(0)) {
      return ctx.Error(absl::StrCat("cannot reduce dim ", i, " of size 0 (",
                                    "input ", t.ToString(), ")"));
    }
    if (keepdim) out.push_back(Dim(1));
  }
  return out;
}

std::optional<std::vector<int64_t>> OptionalInts(const InferContext& ctx,
                                                 absl::string_view name) {
  if (ctx.call().IsNone(name)) return std::nullopt;
  return ctx.call().Ints(name);
}

enum class Reduction { kSum, kMean, kExtremum };

absl::StatusOr<TensorType> Reduce(const InferContext& ctx, Reduction kind) {
  TensorType t = ctx.Type("input");
  if (kind == Reduction::kMean) {
    absl::Status status = RequireFloat(ctx, t);
    if (!status.ok()) return status;
  }
  absl::StatusOr<std::vector<bool>> reduced =
      ReducedDims(ctx, t, OptionalInts(ctx, "dim"));
  if (!reduced.ok()) return reduced.status();
  absl::StatusOr<Shape> shape =
      ReducedShape(ctx, t, *reduced, ctx.call().Bool("keepdim"),
                   /*nonempty=*/kind == Reduction::kExtremum);
  if (!shape.ok()) return shape.status();
  DType dtype = t.dtype;
  // PyTorch sums bool and integers in i64 so that they do not overflow.
  if (kind == Reduction::kSum && !IsFloatingPoint(dtype)) dtype = DType::kI64;
  return TensorType{dtype, *std::move(shape)};
}

absl::StatusOr<TensorType> Argmax(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  bool keepdim = ctx.call().Bool("keepdim");
  if (ctx.call().IsNone("dim")) {
    // Over the flattened input: a scalar, or all ones with keepdim.
    std::optional<Dim> n = rules::NumElementsDim(t.shape);
    if (n.has_value() && *n == Dim(0)) {
      return ctx.Error(absl::StrCat("cannot take the argmax of an empty ",
                                    "tensor (input ", t.ToString(), ")"));
    }
    Shape shape;
    if (keepdim) shape.assign(t.rank(), Dim(1));
    return TensorType{DType::kI64, std::move(shape)};
  }
  absl::StatusOr<std::vector<bool>> reduced =
      ReducedDims(ctx, t, std::vector<int64_t>{ctx.call().Int("dim")});
  if (!reduced.ok()) return reduced.status();
  absl::StatusOr<Shape> shape =
      ReducedShape(ctx, t, *reduced, keepdim, /*nonempty=*/true);
  if (!shape.ok()) return shape.status();
  return TensorType{DType::kI64, *std::move(shape)};
}

// The running sum keeps the input's shape; integers and bool sum in i64,
// as torch.cumsum does.
absl::StatusOr<TensorType> Cumsum(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::StatusOr<int64_t> dim = rules::NormalizeDim(
      ctx, ctx.call().Int("dim"), std::max<int64_t>(t.rank(), 1));
  if (!dim.ok()) return dim.status();
  if (!IsFloatingPoint(t.dtype)) t.dtype = DType::kI64;
  return t;
}

absl::StatusOr<TensorType> Softmax(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloat(ctx, t);
  if (!status.ok()) return status;
  absl::StatusOr<int64_t> dim = rules::NormalizeDim(
      ctx, ctx.call().Int("dim"), std::max<int64_t>(t.rank(), 1));
  if (!dim.ok()) return dim.status();
  return t;
}

// `param`, when given, must be 1-D with `channels` entries.
absl::Status CheckPerChannel(const InferContext& ctx, absl::string_view param,
                             Dim channels, const TensorType& input) {
  if (!ctx.IsTensor(param)) return absl::OkStatus();
  TensorType p = ctx.Type(param);
  if (p.rank() == 1 && !rules::DimsConflict(p.shape[0], channels)) {
    return absl::OkStatus();
  }
  return ctx.Error(
      absl::StrCat(param, " ", p.ToString(), " does not match the ",
                   channels.ToString(), " channels (dim 1) of ", "input ",
                   input.ToString(), "; expected [", channels.ToString(), "]"));
}

absl::StatusOr<TensorType> LayerNorm(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloat(ctx, t);
  if (!status.ok()) return status;
  std::vector<int64_t> normalized = ctx.call().Ints("normalized_shape");
  std::string described =
      absl::StrCat("[", absl::StrJoin(normalized, ","), "]");
  if (normalized.empty()) {
    return ctx.Error("normalized_shape must have at least one dim");
  }
  for (int64_t n : normalized) {
    status = rules::CheckSize(ctx, n, "normalized_shape entries");
    if (!status.ok()) return status;
  }
  int64_t k = static_cast<int64_t>(normalized.size());
  bool matches = t.rank() >= k;
  for (int64_t i = 0; matches && i < k; ++i) {
    matches = !rules::DimsConflict(t.shape[t.rank() - k + i], normalized[i]);
  }
  if (!matches) {
    return ctx.Error(absl::StrCat("normalized_shape ", described,
                                  " does not match the last ", k,
                                  " dims of input ", t.ToString()));
  }
  for (const char* param : {"weight", "bias"}) {
    if (!ctx.IsTensor(param)) continue;
    TensorType p = ctx.Type(param);
    bool same = p.rank() == k;
    for (int64_t i = 0; same && i < k; ++i) {
      same = !rules::DimsConflict(p.shape[i], normalized[i]);
    }
    if (!same) {
      return ctx.Error(absl::StrCat(param, " ", p.ToString(),
                                    " does not match normalized_shape ",
                                    described));
    }
  }
  return t;
}

absl::StatusOr<TensorType> BatchNorm(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::Status status = RequireFloat(ctx, t);
  if (!status.ok()) return status;
  if (t.rank() < 2) {
    return ctx.Error(absl::StrCat("input ", t.ToString(),
                                  " needs at least 2 dims (N, C, ...)"));
  }
  for (const char* param : {"running_mean", "running_var", "weight", "bias"}) {
    status = CheckPerChannel(ctx, param, t.shape[1], t);
    if (!status.ok()) return status;
  }
  return t;
}

ParamSpec DimsParam() { return Optional("dim", K::kIntList); }
ParamSpec KeepDim() { return Defaulted("keepdim", K::kBool, false); }

}  // namespace

void RegisterReductionOps(OpRegistry& r) {
  struct ReduceOp {
    const char* name;
    Reduction kind;
    const char* summary;
  };
  for (const ReduceOp& op : {
           ReduceOp{"sum", Reduction::kSum,
                    "sum over dims (all when None); bool/int give i64"},
           ReduceOp{"mean", Reduction::kMean,
                    "mean over dims (all when None); needs float input"},
           ReduceOp{"amax", Reduction::kExtremum,
                    "maximum over dims (all when None)"},
           ReduceOp{"amin", Reduction::kExtremum,
                    "minimum over dims (all when None)"},
       }) {
    Reduction kind = op.kind;
    Add(r, {.name = op.name,
            .params = {Param("input", K::kTensor), DimsParam(), KeepDim()},
            .traits = {.kind = OpKind::kReduction},
            .infer = One(
                [kind](const InferContext& ctx) { return Reduce(ctx, kind); }),
            .summary = op.summary});
  }
  Add(r, {.name = "argmax",
          .params = {Param("input", K::kTensor), Optional("dim", K::kInt),
                     KeepDim()},
          .traits = {.kind = OpKind::kReduction},
          .infer = One(Argmax),
          .summary = "index of the maximum along dim (flattened when None); "
                     "result i64"});
  Add(r, {.name = "cumsum",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt),
                     Defaulted("exclusive", K::kBool, false),
                     Defaulted("reverse", K::kBool, false)},
          .traits = {.kind = OpKind::kOther},
          .infer = One(Cumsum),
          .summary = "running sum along dim (torch.cumsum; integers and bool sum in "
                     "i64); exclusive leaves each element out of its own sum, reverse "
                     "sums from the end (ONNX's CumSum)"});
  Add(r, {.name = "softmax",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt)},
          .traits = {.kind = OpKind::kReduction},
          .infer = One(Softmax),
          .summary = "softmax along dim"});
  Add(r, {.name = "log_softmax",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt)},
          .traits = {.kind = OpKind::kReduction},
          .infer = One(Softmax),
          .summary = "log of softmax along dim"});
  Add(r,
      {.name = "layer_norm",
       .params = {Param("input", K::kTensor),
                  Param("normalized_shape", K::kIntList),
                  Optional("weight", K::kTensor), Optional("bias", K::kTensor),
                  Defaulted("eps", K::kFloat, 1e-5)},
       .traits = {.kind = OpKind::kReduction},
       .infer = One(LayerNorm),
       .summary = "layer normalization over the last dims"});
  Add(r,
      {.name = "batch_norm",
       .params = {Param("input", K::kTensor), Param("running_mean", K::kTensor),
                  Param("running_var", K::kTensor),
                  Optional("weight", K::kTensor), Optional("bias", K::kTensor),
                  Defaulted("eps", K::kFloat, 1e-5)},
       .traits = {.kind = OpKind::kReduction},
       .infer = One(BatchNorm),
       .summary = "batch normalization with running statistics, "
                  "channels in dim 1 (inference form)"});
}

}  // namespace graft::core_ops
