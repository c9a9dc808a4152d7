// Shape and data-movement kernels (reshape ... pad) and the structural ops
// (getitem, identity, dropout).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

// Shape ops that only rename dims share the input's storage: values are
// never written after they are computed.
absl::StatusOr<Value> Reshape(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  std::vector<int64_t> shape = ctx.call().Ints("shape");
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) return KernelError("only one dim may be -1");
      infer_at = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return KernelError("invalid size ", shape[i], " in shape ",
                         DimsString(shape));
    } else {
      ASSIGN_OR_RETURN(int64_t n, CheckedNumElements({known, shape[i]}));
      known = n;
    }
  }
  const int64_t total = x.NumElements();
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return KernelError("cannot reshape ", x.TypeString(), " to ",
                         DimsString(shape));
    }
    shape[infer_at] = total / known;
  } else if (known != total) {
    return KernelError("cannot reshape ", x.TypeString(), " (", total,
                       " elements) to ", DimsString(shape));
  }
  return Value(x.Reshaped(shape));
}

absl::StatusOr<Value> PermuteBy(const Tensor& x, std::vector<int64_t> perm) {
  if (static_cast<int64_t>(perm.size()) != x.rank()) {
    return KernelError("dims ", DimsString(perm), " must list each of the ",
                       x.rank(), " dims of ", x.TypeString(), " once");
  }
  std::vector<bool> seen(x.rank(), false);
  for (int64_t& p : perm) {
    absl::StatusOr<int64_t> d = NormalizeDim(p, x.rank());
    if (!d.ok()) return d.status();
    if (seen[*d]) return KernelError("dim ", p, " appears twice in dims");
    seen[*d] = true;
    p = *d;
  }
  std::vector<int64_t> in_strides = ContiguousStrides(x.dims());
  std::vector<int64_t> dims, strides;
  for (int64_t p : perm) {
    dims.push_back(x.dims()[p]);
    strides.push_back(in_strides[p]);
  }
  return Value(StridedCopy(x, dims, strides, 0));
}

absl::StatusOr<Value> Permute(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  return PermuteBy(x, ctx.call().Ints("dims"));
}

absl::StatusOr<Value> Transpose(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (x.rank() == 0) return Value(x);
  absl::StatusOr<int64_t> d0 = NormalizeDim(ctx.call().Int("dim0"), x.rank());
  if (!d0.ok()) return d0.status();
  absl::StatusOr<int64_t> d1 = NormalizeDim(ctx.call().Int("dim1"), x.rank());
  if (!d1.ok()) return d1.status();
  std::vector<int64_t> perm(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) perm[i] = i;
  std::swap(perm[*d0], perm[*d1]);
  return PermuteBy(x, perm);
}

absl::StatusOr<Value> Flatten(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (x.rank() == 0) return Value(x.Reshaped({1}));
  ASSIGN_OR_RETURN(int64_t s,
                   NormalizeDim(ctx.call().Int("start_dim"), x.rank()));
  ASSIGN_OR_RETURN(int64_t e,
                   NormalizeDim(ctx.call().Int("end_dim"), x.rank()));
  if (s > e) {
    return KernelError("start_dim ", s, " comes after end_dim ", e);
  }
  std::vector<int64_t> dims(x.dims().begin(), x.dims().begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= x.dims()[i];
  dims.push_back(n);
  dims.insert(dims.end(), x.dims().begin() + e + 1, x.dims().end());
  return Value(x.Reshaped(dims));
}

absl::StatusOr<Value> Squeeze(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  std::vector<bool> drop(x.rank(), false);
  if (ctx.call().IsNone("dim")) {
    for (int64_t i = 0; i < x.rank(); ++i) drop[i] = x.dims()[i] == 1;
  } else {
    for (int64_t d : ctx.call().Ints("dim")) {
      absl::StatusOr<int64_t> nd = NormalizeDim(d, x.rank());
      if (!nd.ok()) return nd.status();
      // A dim that is not of size 1 is kept, as in PyTorch.
      if (x.rank() > 0 && x.dims()[*nd] == 1) drop[*nd] = true;
    }
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (!drop[i]) dims.push_back(x.dims()[i]);
  }
  return Value(x.Reshaped(dims));
}

absl::StatusOr<Value> Unsqueeze(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(int64_t d,
                   NormalizeDim(ctx.call().Int("dim"), x.rank() + 1));
  std::vector<int64_t> dims = x.dims();
  dims.insert(dims.begin() + d, 1);
  return Value(x.Reshaped(dims));
}

absl::StatusOr<Value> Expand(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  std::vector<int64_t> size = ctx.call().Ints("size");
  const int64_t rank = static_cast<int64_t>(size.size());
  if (rank < x.rank()) {
    return KernelError("size ", DimsString(size), " has fewer dims than input ",
                       x.TypeString());
  }
  std::vector<int64_t> in_strides = ContiguousStrides(x.dims());
  std::vector<int64_t> dims(rank), strides(rank, 0);
  const int64_t lead = rank - x.rank();
  for (int64_t i = 0; i < rank; ++i) {
    if (i < lead) {
      if (size[i] < 0) {
        return KernelError("size ", DimsString(size),
                           ": a new leading dim cannot be ", size[i]);
      }
      dims[i] = size[i];
      continue;
    }
    const int64_t in = x.dims()[i - lead];
    if (size[i] == -1 || size[i] == in) {
      dims[i] = in;
      strides[i] = in_strides[i - lead];
    } else if (in == 1 && size[i] >= 0) {
      dims[i] = size[i];
    } else {
      return KernelError("cannot expand ", x.TypeString(), " to ",
                         DimsString(size), " (dim ", i, ": ", in, " to ",
                         size[i], ")");
    }
  }
  // Checked only: an expansion too large to hold is an error, not a crash.
  RETURN_IF_ERROR(CheckedNumElements(dims, x.dtype()).status());
  return Value(StridedCopy(x, dims, strides, 0));
}

absl::StatusOr<Value> Concat(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<Tensor> ts, ctx.InputList("tensors"));
  if (ts.empty()) return KernelError("needs at least one tensor");
  const Tensor& first = ts.front();
  if (first.rank() == 0) {
    return KernelError("cannot concatenate rank-0 tensors; unsqueeze them");
  }
  absl::StatusOr<int64_t> dim =
      NormalizeDim(ctx.call().Int("dim"), first.rank());
  if (!dim.ok()) return dim.status();
  std::vector<Operand> operands;
  std::vector<int64_t> dims = first.dims();
  dims[*dim] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    bool ok = t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d) {
      ok = d == *dim || t.dims()[d] == first.dims()[d];
    }
    if (!ok) {
      return KernelError("tensor ", i, " ", t.TypeString(),
                         " does not match tensor 0 ", first.TypeString(),
                         " outside dim ", *dim);
    }
    dims[*dim] += t.dims()[*dim];
    operands.push_back({t, false});
  }
  const DType dtype = ResultType(operands);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(dtype, dims));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < *dim; ++d) outer *= dims[d];
  for (int64_t d = *dim + 1; d < first.rank(); ++d) inner *= dims[d];
  const int64_t elem = DTypeSize(dtype);
  const int64_t out_row = dims[*dim] * inner * elem;
  int64_t at = 0;  // Byte offset of this tensor's block within a row.
  for (const Tensor& t : ts) {
    Tensor c = CastTensor(t, dtype);
    const int64_t block = t.dims()[*dim] * inner * elem;
    for (int64_t o = 0; o < outer && block > 0; ++o) {
      std::memcpy(static_cast<char*>(out.raw_data()) + o * out_row + at,
                  static_cast<const char*>(c.raw_data()) + o * block, block);
    }
    at += block;
  }
  return Value(out);
}

// Elements [start, start + step * len) of `x` along `dim`.
Tensor SliceAlong(const Tensor& x, int64_t dim, int64_t start, int64_t len,
                  int64_t step) {
  std::vector<int64_t> strides = ContiguousStrides(x.dims());
  std::vector<int64_t> dims = x.dims();
  dims[dim] = len;
  const int64_t offset = len > 0 ? start * strides[dim] : 0;
  strides[dim] *= step;
  return StridedCopy(x, dims, strides, offset);
}

absl::StatusOr<Value> Split(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (x.rank() == 0) return KernelError("cannot split a rank-0 tensor");
  absl::StatusOr<int64_t> dim = NormalizeDim(ctx.call().Int("dim"), x.rank());
  if (!dim.ok()) return dim.status();
  const int64_t size = x.dims()[*dim];
  const Argument& arg = ctx.call().Get("split_size_or_sections");
  std::vector<int64_t> sizes;
  if (arg.is_int()) {
    // Chunks of this size; the last may be smaller.
    const int64_t chunk = arg.int_value();
    if (chunk < 0 || (chunk == 0 && size != 0)) {
      return KernelError("split size must be positive, got ", chunk);
    }
    if (size == 0) sizes.push_back(0);
    for (int64_t at = 0; at < size;) {
      const int64_t piece = std::min(chunk, size - at);
      sizes.push_back(piece);
      at += piece;
    }
  } else {
    sizes = arg.int_list();
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) return KernelError("split sizes must not be negative");
      if (s > size - total) {
        return KernelError("split sizes ", DimsString(sizes),
                           " add up to more than dim ", *dim, " of ",
                           x.TypeString(), " (", size, ")");
      }
      total += s;
    }
    if (total != size) {
      return KernelError("split sizes ", DimsString(sizes), " add up to ",
                         total, ", but dim ", *dim, " of ", x.TypeString(),
                         " has ", size);
    }
  }
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    parts.push_back(SliceAlong(x, *dim, at, s, 1));
    at += s;
  }
  return Value::Tuple(std::move(parts));
}

absl::StatusOr<Value> Slice(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  if (x.rank() == 0) return KernelError("cannot slice a rank-0 tensor");
  absl::StatusOr<int64_t> dim = NormalizeDim(ctx.call().Int("dim"), x.rank());
  if (!dim.ok()) return dim.status();
  const int64_t step = ctx.call().Int("step");
  if (step <= 0) return KernelError("step must be positive, got ", step);
  const int64_t size = x.dims()[*dim];
  // Python slice bounds: negatives count from the end, then clamp.
  auto bound = [&](absl::string_view name, int64_t fallback) {
    if (ctx.call().IsNone(name)) return fallback;
    int64_t v = ctx.call().Int(name);
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  const int64_t start = bound("start", 0), end = bound("end", size);
  const int64_t len = end > start ? 1 + (end - start - 1) / step : 0;
  return Value(SliceAlong(x, *dim, start, len, step));
}

absl::StatusOr<Value> Gather(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor index, ctx.Input("index"));
  RETURN_IF_ERROR(CheckIndexDType(index, "index"));
  absl::StatusOr<int64_t> dim = NormalizeDim(ctx.call().Int("dim"), x.rank());
  if (!dim.ok()) return dim.status();
  const int64_t rank = std::max<int64_t>(x.rank(), 1);
  std::vector<int64_t> xd = x.dims(), id = index.dims();
  if (xd.empty()) xd = {1};
  if (id.empty()) id = {1};
  bool ok = static_cast<int64_t>(id.size()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d) ok = d == *dim || id[d] <= xd[d];
  if (!ok) {
    return KernelError("index ", index.TypeString(),
                       " must have the rank of input ", x.TypeString(),
                       " and no larger sizes outside dim ", *dim);
  }
  Tensor out(x.dtype(), index.dims());
  std::vector<int64_t> xs = ContiguousStrides(xd);
  const int64_t elem = DTypeSize(x.dtype());
  const int64_t n = index.NumElements();
  std::vector<int64_t> pos(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = IndexAt(index, i);
    if (v < 0 || v >= xd[*dim]) {
      return KernelError("index ", v, " at position ", i,
                         " is out of range for dim ", *dim, " of size ",
                         xd[*dim]);
    }
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (d == *dim ? v : pos[d]) * xs[d];
    std::memcpy(static_cast<char*>(out.raw_data()) + i * elem,
                static_cast<const char*>(x.raw_data()) + src * elem, elem);
    for (int64_t d = rank; d > 0; --d) {
      if (++pos[d - 1] < id[d - 1]) break;
      pos[d - 1] = 0;
    }
  }
  return Value(out);
}

enum class ScatterReduce { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<ScatterReduce> ScatterReduceOf(const std::string& reduce) {
  if (reduce == "none") return ScatterReduce::kNone;
  if (reduce == "add") return ScatterReduce::kAdd;
  if (reduce == "mul") return ScatterReduce::kMul;
  if (reduce == "max") return ScatterReduce::kMax;
  if (reduce == "min") return ScatterReduce::kMin;
  return KernelError("reduce \"", reduce, "\" must be none, add, mul, max or min");
}

// A copy of `input` with src's elements combined in: `writes(apply)` calls
// apply(to, from) for each element `from` of src written to element `to`,
// in order, and returns an error for a bad index. Values stay in the
// compute type until the end (a bf16 scatter_add of ones counts past 256);
// integers wrap; max and min let NaN win, as torch's scatter_reduce.
template <typename Writes>
absl::StatusOr<Tensor> ApplyScatter(const Tensor& input, const Tensor& src, ScatterReduce reduce, Writes&& writes) {
  return DispatchDType(input.dtype(), [&](auto traits) -> absl::StatusOr<Tensor> {
    using T = decltype(traits);
    using S = typename T::Storage;
    using C = typename T::Compute;
    const int64_t n = input.NumElements();
    std::vector<C> acc(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) acc[i] = T::Load(input.data<S>()[i]);
    const S* from = src.data<S>();
    auto apply = [&](int64_t to, int64_t k) {
      const C v = T::Load(from[k]);
      C& w = acc[to];
      switch (reduce) {
        case ScatterReduce::kNone:
          w = v;
          break;
        case ScatterReduce::kAdd:
          if constexpr (std::is_floating_point_v<C>) w += v; else w = WrapAdd(w, v);
          break;
        case ScatterReduce::kMul:
          if constexpr (std::is_floating_point_v<C>) w *= v; else w = WrapMul(w, v);
          break;
        case ScatterReduce::kMax:
        case ScatterReduce::kMin:
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(w) || std::isnan(v)) {
              w = std::numeric_limits<C>::quiet_NaN();
              break;
            }
          }
          w = reduce == ScatterReduce::kMax ? std::max(w, v) : std::min(w, v);
          break;
      }
    };
    RETURN_IF_ERROR(writes(apply));
    Tensor out(input.dtype(), input.dims());
    for (int64_t i = 0; i < n; ++i) out.data<S>()[i] = T::From(acc[i]);
    return out;
  });
}

// torch.scatter / scatter_reduce, ONNX ScatterElements: a copy of input,
// src's elements written along dim at index (negative ones from the end),
// in index order.
absl::StatusOr<Value> Scatter(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor index, ctx.Input("index"));
  ASSIGN_OR_RETURN(Tensor src, ctx.Input("src"));
  RETURN_IF_ERROR(CheckIndexDType(index, "index"));
  absl::StatusOr<int64_t> dim = NormalizeDim(ctx.call().Int("dim"), x.rank());
  if (!dim.ok()) return dim.status();
  ASSIGN_OR_RETURN(const ScatterReduce reduce, ScatterReduceOf(ctx.call().String("reduce")));
  const std::vector<int64_t>& xd = x.dims();
  const std::vector<int64_t>& id = index.dims();
  bool ok = x.rank() > 0 && index.rank() == x.rank() && src.dims() == id && src.dtype() == x.dtype();
  for (int64_t d = 0; ok && d < x.rank(); ++d) ok = d == *dim || id[d] <= xd[d];
  if (!ok) {
    return KernelError("index ", index.TypeString(), " and src ", src.TypeString(),
                       " must have one shape, the rank of input ", x.TypeString(),
                       " and no larger sizes outside dim ", *dim);
  }
  const std::vector<int64_t> xs = ContiguousStrides(xd);
  ASSIGN_OR_RETURN(Tensor out, ApplyScatter(x, src, reduce, [&](auto&& apply) -> absl::Status {
    std::vector<int64_t> pos(id.size(), 0);
    for (int64_t i = 0; i < index.NumElements(); ++i) {
      int64_t v = IndexAt(index, i);
      if (v < -xd[*dim] || v >= xd[*dim]) {
        return KernelError("index ", v, " at position ", i, " is out of range for dim ", *dim, " of size ",
                           xd[*dim]);
      }
      if (v < 0) v += xd[*dim];
      int64_t to = 0;
      for (size_t d = 0; d < id.size(); ++d) to += (static_cast<int64_t>(d) == *dim ? v : pos[d]) * xs[d];
      apply(to, i);
      for (size_t d = id.size(); d > 0; --d) {
        if (++pos[d - 1] < id[d - 1]) break;
        pos[d - 1] = 0;
      }
    }
    return absl::OkStatus();
  }));
  return Value(out);
}

// ONNX ScatterND, index_put: a copy of input, each index tuple (indices'
// last dim, m long, negative entries from the end) naming a slice of
// input's dims from m on, which takes the matching slice of updates.
absl::StatusOr<Value> ScatterNd(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor indices, ctx.Input("indices"));
  ASSIGN_OR_RETURN(Tensor updates, ctx.Input("updates"));
  RETURN_IF_ERROR(CheckIndexDType(indices, "indices"));
  ASSIGN_OR_RETURN(const ScatterReduce reduce, ScatterReduceOf(ctx.call().String("reduce")));
  const std::vector<int64_t>& xd = x.dims();
  const int64_t m = indices.rank() == 0 ? 0 : indices.dims().back();
  if (m < 1 || m > x.rank()) {
    return KernelError("indices ", indices.TypeString(), " must end in a dim between 1 and the rank of input ",
                       x.TypeString());
  }
  std::vector<int64_t> want(indices.dims().begin(), indices.dims().end() - 1);
  want.insert(want.end(), xd.begin() + m, xd.end());
  if (updates.dims() != want || updates.dtype() != x.dtype()) {
    return KernelError("updates ", updates.TypeString(), " must have indices' dims but the last, then input ",
                       x.TypeString(), "'s from ", m, " on");
  }
  int64_t slice = 1;
  for (int64_t d = m; d < x.rank(); ++d) slice *= xd[d];
  const std::vector<int64_t> xs = ContiguousStrides(xd);
  const int64_t tuples = indices.NumElements() / m;
  ASSIGN_OR_RETURN(Tensor out, ApplyScatter(x, updates, reduce, [&](auto&& apply) -> absl::Status {
    for (int64_t k = 0; k < tuples; ++k) {
      int64_t at = 0;
      for (int64_t j = 0; j < m; ++j) {
        const int64_t v = IndexAt(indices, k * m + j);
        if (v < -xd[j] || v >= xd[j]) {
          return KernelError("index ", v, " of tuple ", k, " is out of range for dim ", j, " of size ", xd[j]);
        }
        at += (v < 0 ? v + xd[j] : v) * xs[j];
      }
      for (int64_t e = 0; e < slice; ++e) apply(at + e, k * slice + e);
    }
    return absl::OkStatus();
  }));
  return Value(out);
}

// Rows of `x` along `dim` picked by `index` (i32/i64, any shape); the
// picked dim becomes index's dims. Shared by index_select and embedding.
absl::StatusOr<Tensor> TakeAlong(const Tensor& x, int64_t dim,
                                 const Tensor& index,
                                 std::vector<int64_t> index_dims) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.dims()[d];
  for (int64_t d = dim + 1; d < x.rank(); ++d) inner *= x.dims()[d];
  const int64_t size = x.rank() == 0 ? 1 : x.dims()[dim];
  std::vector<int64_t> dims(x.dims().begin(), x.dims().begin() + dim);
  dims.insert(dims.end(), index_dims.begin(), index_dims.end());
  if (x.rank() > 0) {
    dims.insert(dims.end(), x.dims().begin() + dim + 1, x.dims().end());
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), dims));
  const int64_t n = index.NumElements();
  const int64_t row = inner * DTypeSize(x.dtype());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = IndexAt(index, i);
    if (v < 0 || v >= size) {
      return KernelError("index ", v, " at position ", i,
                         " is out of range for dim ", dim, " of size ", size);
    }
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = IndexAt(index, i);
      std::memcpy(static_cast<char*>(out.raw_data()) + (o * n + i) * row,
                  static_cast<const char*>(x.raw_data()) + (o * size + v) * row,
                  row);
    }
  }
  return out;
}

absl::StatusOr<Value> IndexSelect(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor index, ctx.Input("index"));
  RETURN_IF_ERROR(CheckIndexDType(index, "index"));
  if (index.rank() > 1) {
    return KernelError("index must be 1-D, got ", index.TypeString());
  }
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(ctx.call().Int("dim"), x.rank()));
  std::vector<int64_t> index_dims;
  if (x.rank() > 0) {
    index_dims = {index.NumElements()};
  } else if (index.NumElements() != 1) {
    return KernelError("a rank-0 input takes exactly one index, got ",
                       index.TypeString());
  }
  ASSIGN_OR_RETURN(Tensor out, TakeAlong(x, dim, index, index_dims));
  return Value(std::move(out));
}

absl::StatusOr<Value> Embedding(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor index, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor weight, ctx.Input("weight"));
  RETURN_IF_ERROR(CheckIndexDType(index, "input (the indices)"));
  if (weight.rank() != 2) {
    return KernelError("weight must be 2-D [num_embeddings, dim], got ",
                       weight.TypeString());
  }
  ASSIGN_OR_RETURN(Tensor out, TakeAlong(weight, 0, index, index.dims()));
  return Value(std::move(out));
}

// Source index along one dim for output position `o` of a padded dim
// (`before` elements added in front), or -1 for the constant fill.
int64_t PadSource(int64_t o, int64_t before, int64_t size,
                  absl::string_view mode) {
  int64_t i = o - before;
  if (mode == "constant") return i >= 0 && i < size ? i : -1;
  if (mode == "replicate") return std::clamp<int64_t>(i, 0, size - 1);
  // reflect: mirror without repeating the edge element.
  if (size == 1) return 0;
  const int64_t period = 2 * (size - 1);
  i = ((i % period) + period) % period;
  return i < size ? i : period - i;
}

absl::StatusOr<Value> Pad(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  std::vector<int64_t> pad = ctx.call().Ints("pad");
  const std::string& mode = ctx.call().String("mode");
  if (mode != "constant" && mode != "reflect" && mode != "replicate") {
    return KernelError("mode must be constant, reflect or replicate, got \"",
                       mode, "\"");
  }
  if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size()) > 2 * x.rank()) {
    return KernelError("pad ", DimsString(pad),
                       " must hold (before, after) pairs for at most the ",
                       x.rank(), " dims of ", x.TypeString());
  }
  const int64_t rank = x.rank();
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  for (size_t p = 0; p < pad.size() / 2; ++p) {
    // Pairs start from the last dim, as in F.pad.
    before[rank - 1 - p] = pad[2 * p];
    after[rank - 1 - p] = pad[2 * p + 1];
  }
  std::vector<int64_t> dims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in = x.dims()[d];
    constexpr int64_t kMaxPad = int64_t{1} << 40;
    if (before[d] > kMaxPad || before[d] < -kMaxPad || after[d] > kMaxPad ||
        after[d] < -kMaxPad) {
      return KernelError("pad ", DimsString(pad), " is too large");
    }
    dims[d] = in + before[d] + after[d];
    if (dims[d] < 0) {
      return KernelError("pad ", DimsString(pad), " makes dim ", d, " of ",
                         x.TypeString(), " negative");
    }
    if (mode != "constant" && (before[d] != 0 || after[d] != 0)) {
      if (in == 0) {
        return KernelError(mode, " padding needs a non-empty dim ", d);
      }
      if (mode == "reflect" && (before[d] >= in || after[d] >= in)) {
        return KernelError("reflect padding of dim ", d,
                           " must be less than "
                           "its size ",
                           in, ", got ", before[d], " and ", after[d]);
      }
    }
  }
  ASSIGN_OR_RETURN(Tensor out, NewTensor(x.dtype(), dims));
  // Per dim, the source index of every output position.
  std::vector<std::vector<int64_t>> source(rank);
  for (int64_t d = 0; d < rank; ++d) {
    for (int64_t o = 0; o < dims[d]; ++o) {
      source[d].push_back(PadSource(o, before[d], x.dims()[d], mode));
    }
  }
  std::vector<int64_t> xs = ContiguousStrides(x.dims());
  const double value = ctx.call().Float("value");
  DispatchDType(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    const auto fill = Tr::From(value);
    const int64_t n = out.NumElements();
    std::vector<int64_t> pos(rank, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t src = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank && inside; ++d) {
        const int64_t s = source[d][pos[d]];
        inside = s >= 0;
        src += s * xs[d];
      }
      o[i] = inside ? in[src] : fill;
      for (int64_t d = rank; d > 0; --d) {
        if (++pos[d - 1] < dims[d - 1]) break;
        pos[d - 1] = 0;
      }
    }
  });
  return Value(out);
}

absl::StatusOr<Value> GetItem(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const Value* v, ctx.InputValue("input"));
  if (!v->is_tuple()) {
    return KernelError("input ", ctx.call().TensorNode("input")->Ref(),
                       " is a tensor, not a tuple");
  }
  const std::vector<Tensor>& tuple = v->tuple();
  const int64_t size = static_cast<int64_t>(tuple.size());
  int64_t i = ctx.call().Int("index");
  if (i < -size || i >= size) {
    return KernelError("index ", i, " is out of range for a tuple of ", size);
  }
  return Value(tuple[i < 0 ? i + size : i]);
}

absl::StatusOr<Value> Identity(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const Value* v, ctx.InputValue("input"));
  return *v;
}

absl::StatusOr<Value> Dropout(const KernelContext& ctx) {
  const double p = ctx.call().Float("p");
  if (!(p >= 0 && p <= 1)) {
    return KernelError("p must be between 0 and 1, got ", p);
  }
  if (ctx.call().Bool("training") && p > 0) {
    return KernelError(
        "training=True is random and not supported by the interpreter; "
        "graphs for inference use training=False");
  }
  return Identity(ctx);
}

}  // namespace

void RegisterShapeKernels(KernelTable& t) {
  t.Add("reshape", Reshape);
  t.Add("permute", Permute);
  t.Add("transpose", Transpose);
  t.Add("flatten", Flatten);
  t.Add("squeeze", Squeeze);
  t.Add("unsqueeze", Unsqueeze);
  t.Add("expand", Expand);
  t.Add("concat", Concat);
  t.Add("split", Split);
  t.Add("slice", Slice);
  t.Add("gather", Gather);
  t.Add("scatter", Scatter);
  t.Add("scatter_nd", ScatterNd);
  t.Add("index_select", IndexSelect);
  t.Add("embedding", Embedding);
  t.Add("pad", Pad);
  t.Add("getitem", GetItem);
  t.Add("identity", Identity);
  t.Add("dropout", Dropout);
}

}  // namespace graft::interp
