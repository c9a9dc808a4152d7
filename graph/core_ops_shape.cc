// Shape and data movement ops of docs/ops.md.
//
// Symbolic dims: a result size that is a product of input dims (reshape,
// flatten) becomes a derived symbol such as "128*batch" (see
// rules::MulDims), so it cancels again later. A size that depends on a
// symbol's value in other ways (slicing or padding a symbolic dim, a
// reshape whose -1 does not divide out) becomes a fresh symbol named after
// the node (rules::UnknownDim). An error is reserved for arguments that are
// wrong whatever the symbols turn out to be.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/core_ops_internal.h"
#include "graph/type_rules.h"
#include "support/status_macros.h"

namespace graft::core_ops {
namespace {

using K = ParamKind;

std::string IntsToString(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

absl::Status RequireIndices(const InferContext& ctx, absl::string_view param,
                            absl::string_view role) {
  TensorType t = ctx.Type(param);
  if (IsInteger(t.dtype)) return absl::OkStatus();
  return ctx.Error(absl::StrCat(param, " ", t.ToString(), " ", role,
                                " and must be an integer tensor (i64 or i32)"));
}

absl::StatusOr<TensorType> Reshape(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  std::vector<int64_t> target = ctx.call().Ints("shape");
  std::string target_str = IntsToString(target);
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer_at >= 0) {
        return ctx.Error(
            absl::StrCat("only one -1 is allowed in shape ", target_str));
      }
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (target[i] < 0) {
      return ctx.Error(
          absl::StrCat("invalid size ", target[i], " in shape ", target_str));
    }
    if (__builtin_mul_overflow(known, target[i], &known)) {
      return ctx.Error(absl::StrCat("shape ", target_str, " is too large"));
    }
  }
  std::optional<Dim> total = rules::NumElementsDim(t.shape);
  if (!total.has_value()) {
    return ctx.Error(absl::StrCat("input ", t.ToString(), " is too large"));
  }
  Shape shape;
  for (int64_t v : target) shape.push_back(v == -1 ? 0 : v);  // -1: below.
  if (infer_at < 0) {
    // With symbols the count can only be checked at run time.
    if (total->is_constant() && total->value() != known) {
      return ctx.Error(absl::StrCat("cannot reshape ", t.ToString(), " (",
                                    total->value(), " elements) to ",
                                    target_str, " (", known, " elements)"));
    }
    return TensorType{t.dtype, std::move(shape)};
  }
  if (known == 0) {
    return ctx.Error(absl::StrCat("cannot infer the -1 in ", target_str,
                                  ": the other sizes multiply to 0"));
  }
  std::optional<Dim> inferred = rules::DivDims(*total, known);
  if (inferred.has_value()) {
    shape[infer_at] = *inferred;
  } else if (total->is_constant()) {
    return ctx.Error(absl::StrCat(
        "cannot reshape ", t.ToString(), " (", total->value(), " elements) to ",
        target_str, ": ", total->value(), " is not a multiple of ", known));
  } else {
    shape[infer_at] = rules::UnknownDim(ctx, infer_at);
  }
  return TensorType{t.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> Permute(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  std::vector<int64_t> dims = ctx.call().Ints("dims");
  if (static_cast<int64_t>(dims.size()) != t.rank()) {
    return ctx.Error(absl::StrCat("dims ", IntsToString(dims), " has ",
                                  dims.size(), " entries but input ",
                                  t.ToString(), " has ", t.rank(), " dims"));
  }
  std::vector<bool> seen(t.rank(), false);
  Shape shape;
  for (int64_t d : dims) {
    absl::StatusOr<int64_t> n = rules::NormalizeDim(ctx, d, t.rank());
    if (!n.ok()) return n.status();
    if (seen[*n]) {
      return ctx.Error(absl::StrCat("dim ", d, " appears more than once in ",
                                    "dims ", IntsToString(dims)));
    }
    seen[*n] = true;
    shape.push_back(t.shape[*n]);
  }
  return TensorType{t.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> Transpose(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  int64_t rank = std::max<int64_t>(t.rank(), 1);  // PyTorch allows 0-d.
  absl::StatusOr<int64_t> a =
      rules::NormalizeDim(ctx, ctx.call().Int("dim0"), rank, "dim0");
  if (!a.ok()) return a.status();
  absl::StatusOr<int64_t> b =
      rules::NormalizeDim(ctx, ctx.call().Int("dim1"), rank, "dim1");
  if (!b.ok()) return b.status();
  if (t.rank() > 0) std::swap(t.shape[*a], t.shape[*b]);
  return t;
}

absl::StatusOr<TensorType> Flatten(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  int64_t rank = std::max<int64_t>(t.rank(), 1);  // A 0-d input gives [1].
  absl::StatusOr<int64_t> start =
      rules::NormalizeDim(ctx, ctx.call().Int("start_dim"), rank, "start_dim");
  if (!start.ok()) return start.status();
  absl::StatusOr<int64_t> end =
      rules::NormalizeDim(ctx, ctx.call().Int("end_dim"), rank, "end_dim");
  if (!end.ok()) return end.status();
  if (*start > *end) {
    return ctx.Error(absl::StrCat(
        "start_dim ", ctx.call().Int("start_dim"), " comes after end_dim ",
        ctx.call().Int("end_dim"), " for input ", t.ToString()));
  }
  if (t.rank() == 0) return TensorType{t.dtype, {Dim(1)}};
  Shape shape(t.shape.begin(), t.shape.begin() + *start);
  Shape merged(t.shape.begin() + *start, t.shape.begin() + *end + 1);
  std::optional<Dim> n = rules::NumElementsDim(merged);
  if (!n.has_value()) {
    return ctx.Error(absl::StrCat("input ", t.ToString(), " is too large"));
  }
  shape.push_back(*n);
  shape.insert(shape.end(), t.shape.begin() + *end + 1, t.shape.end());
  return TensorType{t.dtype, std::move(shape)};
}

// A symbolic dim is never dropped: its size is unknown, and keeping it is
// right for every size but 1.
absl::StatusOr<TensorType> Squeeze(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  std::vector<bool> drop(t.rank(), false);
  if (ctx.call().IsNone("dim")) {
    for (int64_t i = 0; i < t.rank(); ++i) drop[i] = t.shape[i] == Dim(1);
  } else {
    std::vector<int64_t> dims = ctx.call().Ints("dim");
    std::vector<bool> seen(std::max<int64_t>(t.rank(), 1), false);
    for (int64_t d : dims) {
      absl::StatusOr<int64_t> n =
          rules::NormalizeDim(ctx, d, std::max<int64_t>(t.rank(), 1));
      if (!n.ok()) return n.status();
      if (seen[*n]) {
        return ctx.Error(absl::StrCat("dim ", d, " appears more than once in ",
                                      IntsToString(dims)));
      }
      seen[*n] = true;
      if (t.rank() > 0) drop[*n] = t.shape[*n] == Dim(1);
    }
  }
  Shape shape;
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (!drop[i]) shape.push_back(t.shape[i]);
  }
  return TensorType{t.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> Unsqueeze(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  absl::StatusOr<int64_t> d =
      rules::NormalizeDim(ctx, ctx.call().Int("dim"), t.rank() + 1);
  if (!d.ok()) return d.status();
  t.shape.insert(t.shape.begin() + *d, Dim(1));
  return t;
}

absl::StatusOr<TensorType> Expand(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  std::vector<int64_t> size = ctx.call().Ints("size");
  int64_t n = static_cast<int64_t>(size.size());
  if (n < t.rank()) {
    return ctx.Error(absl::StrCat("size ", IntsToString(size), " has ", n,
                                  " entries but input ", t.ToString(), " has ",
                                  t.rank(), " dims"));
  }
  int64_t offset = n - t.rank();
  Shape shape;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = size[i];
    if (i < offset) {
      if (v < 0) {
        return ctx.Error(absl::StrCat("size ", v,
                                      " is not allowed for the "
                                      "new leading dim ",
                                      i, " of ", IntsToString(size)));
      }
      shape.push_back(v);
      continue;
    }
    Dim in = t.shape[i - offset];
    if (v == -1) {
      shape.push_back(in);
    } else if (v < 0) {
      return ctx.Error(
          absl::StrCat("invalid size ", v, " in ", IntsToString(size)));
    } else if (in == Dim(1) || in == Dim(v) || in.is_symbolic()) {
      shape.push_back(v);
    } else {
      return ctx.Error(absl::StrCat(
          "cannot expand dim ", i - offset, " of input ", t.ToString(),
          " from ", in.ToString(), " to ", v, "; only size-1 dims expand"));
    }
  }
  return TensorType{t.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> Concat(const InferContext& ctx) {
  std::vector<TensorType> ts = ctx.Types("tensors");
  if (ts.empty()) return ctx.Error("needs at least one tensor");
  const TensorType& first = ts[0];
  if (first.rank() == 0) {
    return ctx.Error(absl::StrCat("tensor 0 ", first.ToString(),
                                  " has no dims to concatenate along"));
  }
  absl::StatusOr<int64_t> dim =
      rules::NormalizeDim(ctx, ctx.call().Int("dim"), first.rank());
  if (!dim.ok()) return dim.status();
  TensorType out = first;
  for (size_t k = 1; k < ts.size(); ++k) {
    const TensorType& t = ts[k];
    if (t.rank() != first.rank()) {
      return ctx.Error(absl::StrCat("tensor ", k, " ", t.ToString(), " has ",
                                    t.rank(), " dims but tensor 0 ",
                                    first.ToString(), " has ", first.rank()));
    }
    out.dtype = PromoteTypes(out.dtype, t.dtype);
    for (int64_t i = 0; i < t.rank(); ++i) {
      if (i == *dim) continue;
      if (rules::DimsConflict(out.shape[i], t.shape[i])) {
        return ctx.Error(absl::StrCat("tensor ", k, " ", t.ToString(),
                                      " does not match tensor 0 ",
                                      first.ToString(), " in dim ", i,
                                      " (only dim ", *dim, " may differ)"));
      }
      // A constant pins a symbol down.
      if (out.shape[i].is_symbolic()) out.shape[i] = t.shape[i];
    }
    std::optional<Dim> sum = rules::AddDims(out.shape[*dim], t.shape[*dim]);
    out.shape[*dim] = sum.has_value() ? *sum : rules::UnknownDim(ctx, *dim);
  }
  return out;
}

absl::StatusOr<std::vector<TensorType>> Split(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  if (t.rank() == 0) {
    return ctx.Error(
        absl::StrCat("input ", t.ToString(), " has no dims to split"));
  }
  absl::StatusOr<int64_t> dim =
      rules::NormalizeDim(ctx, ctx.call().Int("dim"), t.rank());
  if (!dim.ok()) return dim.status();
  Dim size = t.shape[*dim];
  const Argument& arg = ctx.call().Get("split_size_or_sections");
  std::vector<int64_t> pieces;
  if (arg.is_int()) {
    int64_t chunk = arg.int_value();
    if (chunk < 0 || (chunk == 0 && size != Dim(0))) {
      return ctx.Error(
          absl::StrCat("split size must be positive, got ", chunk));
    }
    if (size.is_symbolic()) {
      return ctx.Error(absl::StrCat(
          "cannot split dim ", *dim, " of ", t.ToString(), " into chunks of ",
          chunk, ": the number of pieces depends on ", size.ToString(),
          "; give the sizes as a list"));
    }
    int64_t n = size.value();
    if (n == 0) pieces.push_back(0);  // PyTorch returns one empty piece.
    for (int64_t start = 0; start < n; start += chunk) {
      pieces.push_back(std::min(chunk, n - start));
    }
  } else {
    pieces = arg.int_list();
    int64_t sum = 0;
    for (int64_t p : pieces) {
      if (p < 0) {
        return ctx.Error(absl::StrCat("sections ", IntsToString(pieces),
                                      " must not be negative"));
      }
      // Compared before adding: sections from a file may be huge.
      if (p > std::numeric_limits<int64_t>::max() - sum) {
        return ctx.Error(absl::StrCat("sections ", IntsToString(pieces),
                                      " sum past the largest size"));
      }
      sum += p;
    }
    if (pieces.empty()) return ctx.Error("sections must not be empty");
    if (size.is_constant() && sum != size.value()) {
      return ctx.Error(absl::StrCat(
          "sections ", IntsToString(pieces), " sum to ", sum, " but dim ", *dim,
          " of input ", t.ToString(), " has size ", size.value()));
    }
  }
  std::vector<TensorType> out;
  for (int64_t p : pieces) {
    TensorType piece = t;
    piece.shape[*dim] = p;
    out.push_back(std::move(piece));
  }
  return out;
}

// Python's slice bounds for a sequence of length n: negative counts from
// the end, then clamped to [0, n].
int64_t SliceBound(int64_t v, int64_t n) {
  if (v < 0) v = std::max<int64_t>(v + n, 0);
  return std::min(v, n);
}

absl::StatusOr<TensorType> Slice(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  if (t.rank() == 0) {
    return ctx.Error(
        absl::StrCat("input ", t.ToString(), " has no dims to slice"));
  }
  absl::StatusOr<int64_t> dim =
      rules::NormalizeDim(ctx, ctx.call().Int("dim"), t.rank());
  if (!dim.ok()) return dim.status();
  int64_t step = ctx.call().Int("step");
  if (step <= 0) {
    return ctx.Error(absl::StrCat("step must be positive, got ", step));
  }
  // Tracers write an open end as INT64_MAX (x[1:]).
  constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
  std::optional<int64_t> start, end;
  if (!ctx.call().IsNone("start")) start = ctx.call().Int("start");
  if (!ctx.call().IsNone("end") && ctx.call().Int("end") != kOpen) {
    end = ctx.call().Int("end");
  }
  Dim size = t.shape[*dim];
  if (size.is_symbolic()) {
    bool whole = start.value_or(0) == 0 && !end.has_value() && step == 1;
    t.shape[*dim] = whole ? size : rules::UnknownDim(ctx, *dim);
    return t;
  }
  int64_t n = size.value();
  int64_t lo = start.has_value() ? SliceBound(*start, n) : 0;
  int64_t hi = end.has_value() ? SliceBound(*end, n) : n;
  t.shape[*dim] = SliceLength(lo, hi, step);
  return t;
}

absl::StatusOr<TensorType> Gather(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  TensorType index = ctx.Type("index");
  absl::Status status = RequireIndices(ctx, "index", "holds indices");
  if (!status.ok()) return status;
  int64_t rank = std::max<int64_t>(t.rank(), 1);
  absl::StatusOr<int64_t> dim =
      rules::NormalizeDim(ctx, ctx.call().Int("dim"), rank);
  if (!dim.ok()) return dim.status();
  if (index.rank() != t.rank()) {
    return ctx.Error(absl::StrCat("index ", index.ToString(),
                                  " must have as many dims as input ",
                                  t.ToString()));
  }
  for (int64_t i = 0; i < t.rank(); ++i) {
    if (i == *dim) continue;
    Dim a = index.shape[i];
    Dim b = t.shape[i];
    if (a.is_constant() && b.is_constant() && a.value() > b.value()) {
      return ctx.Error(absl::StrCat(
          "index ", index.ToString(), " is larger than input ", t.ToString(),
          " in dim ", i, " (", a.value(), " > ", b.value(), ")"));
    }
  }
  return TensorType{t.dtype, std::move(index.shape)};
}

// scatter and scatter_nd: one of the reductions ONNX's scatters have.
absl::Status RequireScatterReduction(const InferContext& ctx) {
  const std::string& reduce = ctx.call().String("reduce");
  if (reduce == "none" || reduce == "add" || reduce == "mul" || reduce == "max" || reduce == "min") {
    return absl::OkStatus();
  }
  return ctx.Error(absl::StrCat("reduce \"", reduce, "\" must be none, add, mul, max or min"));
}

// input with src written along dim at index: index and src of one shape,
// the rank of input, no larger than it outside dim.
absl::StatusOr<TensorType> Scatter(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  TensorType index = ctx.Type("index");
  TensorType src = ctx.Type("src");
  RETURN_IF_ERROR(RequireIndices(ctx, "index", "holds indices"));
  RETURN_IF_ERROR(RequireScatterReduction(ctx));
  if (src.dtype != t.dtype) {
    return ctx.Error(absl::StrCat("src ", src.ToString(), " must have the dtype of input ", t.ToString()));
  }
  bool same = index.rank() == src.rank();
  for (int64_t i = 0; same && i < index.rank(); ++i) {
    same = !index.shape[i].is_constant() || !src.shape[i].is_constant() || index.shape[i] == src.shape[i];
  }
  if (!same) {
    return ctx.Error(absl::StrCat("index ", index.ToString(), " and src ", src.ToString(), " must have one shape"));
  }
  if (index.rank() != t.rank() || t.rank() == 0) {
    return ctx.Error(absl::StrCat("index ", index.ToString(), " must have as many dims as input ", t.ToString(),
                                  ", at least one"));
  }
  absl::StatusOr<int64_t> dim = rules::NormalizeDim(ctx, ctx.call().Int("dim"), t.rank());
  if (!dim.ok()) return dim.status();
  for (int64_t i = 0; i < t.rank(); ++i) {
    const Dim a = index.shape[i], b = t.shape[i];
    if (i != *dim && a.is_constant() && b.is_constant() && a.value() > b.value()) {
      return ctx.Error(absl::StrCat("index ", index.ToString(), " is larger than input ", t.ToString(), " in dim ",
                                    i));
    }
  }
  return t;
}

// input with updates written at the positions of indices' last dim: an
// index tuple of m names a slice of input's dims from m on.
absl::StatusOr<TensorType> ScatterNd(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  TensorType indices = ctx.Type("indices");
  TensorType updates = ctx.Type("updates");
  RETURN_IF_ERROR(RequireIndices(ctx, "indices", "holds index tuples"));
  RETURN_IF_ERROR(RequireScatterReduction(ctx));
  if (updates.dtype != t.dtype) {
    return ctx.Error(absl::StrCat("updates ", updates.ToString(), " must have the dtype of input ", t.ToString()));
  }
  if (indices.rank() < 1 || !indices.shape.back().is_constant() || indices.shape.back().value() < 1 ||
      indices.shape.back().value() > t.rank()) {
    return ctx.Error(absl::StrCat("indices ", indices.ToString(), " must end in a static dim between 1 and the rank of input ",
                                  t.ToString()));
  }
  const int64_t m = indices.shape.back().value();
  Shape want(indices.shape.begin(), indices.shape.end() - 1);
  want.insert(want.end(), t.shape.begin() + m, t.shape.end());
  if (updates.shape.size() != want.size()) {
    return ctx.Error(absl::StrCat("updates ", updates.ToString(), " must have indices' dims but the last, then input's from ",
                                  m, " on"));
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].is_constant() && updates.shape[i].is_constant() && want[i] != updates.shape[i]) {
      return ctx.Error(absl::StrCat("updates ", updates.ToString(), " must have indices' dims but the last, then input's from ",
                                    m, " on"));
    }
  }
  return t;
}

absl::StatusOr<TensorType> IndexSelect(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  TensorType index = ctx.Type("index");
  absl::Status status = RequireIndices(ctx, "index", "holds indices");
  if (!status.ok()) return status;
  if (index.rank() > 1) {
    return ctx.Error(absl::StrCat("index ", index.ToString(), " must be 1-D"));
  }
  absl::StatusOr<int64_t> dim = rules::NormalizeDim(
      ctx, ctx.call().Int("dim"), std::max<int64_t>(t.rank(), 1));
  if (!dim.ok()) return dim.status();
  if (t.rank() > 0) t.shape[*dim] = index.rank() == 0 ? Dim(1) : index.shape[0];
  return t;
}

absl::StatusOr<TensorType> Embedding(const InferContext& ctx) {
  TensorType index = ctx.Type("input");
  TensorType weight = ctx.Type("weight");
  absl::Status status = RequireIndices(ctx, "input", "holds indices");
  if (!status.ok()) return status;
  if (weight.rank() != 2) {
    return ctx.Error(absl::StrCat("weight ", weight.ToString(),
                                  " must be 2-D [num_embeddings, "
                                  "embedding_dim]"));
  }
  Shape shape = index.shape;
  shape.push_back(weight.shape[1]);
  return TensorType{weight.dtype, std::move(shape)};
}

absl::StatusOr<TensorType> Pad(const InferContext& ctx) {
  TensorType t = ctx.Type("input");
  std::vector<int64_t> pad = ctx.call().Ints("pad");
  const std::string& mode = ctx.call().String("mode");
  if (mode != "constant" && mode != "reflect" && mode != "replicate") {
    return ctx.Error(
        absl::StrCat("mode must be \"constant\", \"reflect\" or "
                     "\"replicate\", got \"",
                     mode, "\""));
  }
  if (pad.size() % 2 != 0) {
    return ctx.Error(absl::StrCat("pad ", IntsToString(pad),
                                  " must have an even number of entries "
                                  "(before, after) pairs from the last dim"));
  }
  int64_t pairs = static_cast<int64_t>(pad.size()) / 2;
  if (pairs > t.rank()) {
    return ctx.Error(absl::StrCat("pad ", IntsToString(pad), " pads ", pairs,
                                  " dims but input ", t.ToString(), " has ",
                                  t.rank()));
  }
  for (int64_t k = 0; k < pairs; ++k) {
    int64_t i = t.rank() - 1 - k;
    int64_t before = pad[2 * k];
    int64_t after = pad[2 * k + 1];
    Dim d = t.shape[i];
    if (mode != "constant") {
      if (before < 0 || after < 0) {
        return ctx.Error(absl::StrCat(mode,
                                      " padding must not be negative, "
                                      "got ",
                                      IntsToString(pad)));
      }
      if (d.is_constant() && (before > 0 || after > 0)) {
        if (d.value() == 0) {
          return ctx.Error(absl::StrCat(mode, " padding needs a non-empty dim ",
                                        i, " in input ", t.ToString()));
        }
        if (mode == "reflect" && (before >= d.value() || after >= d.value())) {
          return ctx.Error(
              absl::StrCat("reflect padding ", std::max(before, after),
                           " must be less than the size ", d.value(),
                           " of dim ", i, " in input ", t.ToString()));
        }
      }
    }
    if (before + after == 0) continue;
    if (d.is_symbolic()) {
      t.shape[i] = rules::UnknownDim(ctx, i);
      continue;
    }
    int64_t n = d.value() + before + after;
    if (n < 0) {
      return ctx.Error(absl::StrCat("pad ", IntsToString(pad),
                                    " would make dim ", i, " of input ",
                                    t.ToString(), " negative (", n, ")"));
    }
    t.shape[i] = n;
  }
  return t;
}

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  Add(r, {.name = "reshape",
          .params = {Param("input", K::kTensor), Param("shape", K::kIntList)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Reshape),
          .summary = "same elements in a new shape; one -1 is inferred"});
  Add(r, {.name = "permute",
          .params = {Param("input", K::kTensor), Param("dims", K::kIntList)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Permute),
          .summary = "reorder dims"});
  Add(r, {.name = "transpose",
          .params = {Param("input", K::kTensor), Param("dim0", K::kInt),
                     Param("dim1", K::kInt)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Transpose),
          .summary = "swap two dims"});
  Add(r, {.name = "flatten",
          .params = {Param("input", K::kTensor),
                     Defaulted("start_dim", K::kInt, 0),
                     Defaulted("end_dim", K::kInt, -1)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Flatten),
          .summary = "merge dims start_dim..end_dim into one"});
  Add(r, {.name = "squeeze",
          .params = {Param("input", K::kTensor), Optional("dim", K::kIntList)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Squeeze),
          .summary = "drop size-1 dims (every one when dim is None)"});
  Add(r, {.name = "unsqueeze",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Unsqueeze),
          .summary = "insert a size-1 dim"});
  Add(r,
      {.name = "expand",
       .params = {Param("input", K::kTensor), Param("size", K::kIntList)},
       .traits = {.kind = OpKind::kView},
       .infer = One(Expand),
       .summary = "broadcast size-1 dims to a larger size (-1 keeps a dim)"});
  Add(r, {.name = "concat",
          .params = {Param("tensors", K::kTensorList),
                     Defaulted("dim", K::kInt, 0)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Concat),
          .summary = "join tensors along dim"});
  Add(r, {.name = "split",
          .params = {Param("input", K::kTensor),
                     Param("split_size_or_sections", K::kIntList),
                     Defaulted("dim", K::kInt, 0)},
          .returns_tuple = true,
          .traits = {.kind = OpKind::kView},
          .infer = Split,
          .summary = "cut along dim into chunks of a size or given sizes; "
                     "returns a tuple"});
  Add(r, {.name = "slice",
          .params = {Param("input", K::kTensor), Defaulted("dim", K::kInt, 0),
                     Optional("start", K::kInt), Optional("end", K::kInt),
                     Defaulted("step", K::kInt, 1)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Slice),
          .summary = "input[start:end:step] along dim (Python bounds)"});
  Add(r, {.name = "gather",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt),
                     Param("index", K::kTensor)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Gather),
          .summary = "pick elements along dim by an index tensor of the "
                     "same rank"});
  Add(r, {.name = "scatter",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt), Param("index", K::kTensor),
                     Param("src", K::kTensor), Defaulted("reduce", K::kString, "none")},
          .infer = One(Scatter),
          .summary = "input with src written along dim at index (torch.scatter, scatter_reduce; ONNX "
                     "ScatterElements): reduce none (the last write wins), add, mul, max or min"});
  Add(r, {.name = "scatter_nd",
          .params = {Param("input", K::kTensor), Param("indices", K::kTensor), Param("updates", K::kTensor),
                     Defaulted("reduce", K::kString, "none")},
          .infer = One(ScatterNd),
          .summary = "input with updates written at the index tuples in indices' last dim (ONNX ScatterND, "
                     "index_put): reduce none (the last write wins), add, mul, max or min"});
  Add(r, {.name = "index_select",
          .params = {Param("input", K::kTensor), Param("dim", K::kInt),
                     Param("index", K::kTensor)},
          .traits = {.kind = OpKind::kView},
          .infer = One(IndexSelect),
          .summary = "pick slices along dim by a 1-D index"});
  Add(r, {.name = "embedding",
          .params = {Param("input", K::kTensor), Param("weight", K::kTensor)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Embedding),
          .summary = "rows of weight looked up by the indices in input"});
  Add(r, {.name = "pad",
          .params = {Param("input", K::kTensor), Param("pad", K::kIntList),
                     Defaulted("mode", K::kString, "constant"),
                     Defaulted("value", K::kFloat, 0.0)},
          .traits = {.kind = OpKind::kView},
          .infer = One(Pad),
          .summary = "pad dims from the last, as F.pad (constant, reflect, "
                     "replicate)"});
}

}  // namespace graft::core_ops
