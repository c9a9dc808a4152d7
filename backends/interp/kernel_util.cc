#include "backends/interp/kernel_util.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace graft::interp {

std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  for (size_t i = dims.size(); i > 0; --i) {
    strides[i - 1] = stride;
    stride *= dims[i - 1];
  }
  return strides;
}

std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> dims,
                                      absl::Span<const int64_t> out_dims) {
  std::vector<int64_t> own = ContiguousStrides(dims);
  std::vector<int64_t> strides(out_dims.size(), 0);
  const size_t lead = out_dims.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    strides[lead + i] = dims[i] == 1 && out_dims[lead + i] != 1 ? 0 : own[i];
  }
  return strides;
}

std::string DimsString(absl::Span<const int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return KernelError("shapes ", DimsString(a), " and ", DimsString(b),
                         " do not broadcast (dim ", i, ": ", da, " vs ", db,
                         ")");
    }
  }
  return out;
}

absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims,
                                           DType dtype) {
  // Keep byte counts well inside size_t and int64_t.
  constexpr int64_t kMaxBytes = int64_t{1} << 48;
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) {
      return KernelError("negative dimension ", d, " in shape ",
                         DimsString(dims));
    }
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : dims) {
    if (n > kMaxBytes / d) {
      return KernelError("shape ", DimsString(dims), " is too large");
    }
    n *= d;
  }
  if (n > kMaxBytes / DTypeSize(dtype)) {
    return KernelError("shape ", DimsString(dims), " is too large");
  }
  return n;
}

absl::StatusOr<Tensor> NewTensor(DType dtype, std::vector<int64_t> dims) {
  // Checked only: a tensor too large to hold is an error, not a crash.
  RETURN_IF_ERROR(CheckedNumElements(dims, dtype).status());
  return Tensor(dtype, std::move(dims));
}

Tensor CastTensor(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out(dtype, t.dims());
  const int64_t n = t.NumElements();
  DispatchDType(t.dtype(), [&](auto src) {
    using Src = decltype(src);
    DispatchDType(dtype, [&](auto dst) {
      using Dst = decltype(dst);
      const auto* in = t.data<typename Src::Storage>();
      auto* o = out.data<typename Dst::Storage>();
      for (int64_t i = 0; i < n; ++i) o[i] = Dst::From(Src::Load(in[i]));
    });
  });
  return out;
}

namespace {

// Copies elements of `size` bytes; typed so the loop compiles to moves.
template <typename T>
void CopyRows(const Tensor& t, Tensor& out, absl::Span<const int64_t> strides,
              int64_t offset) {
  const T* in = t.data<T>() + offset;
  T* o = out.data<T>();
  std::vector<int64_t> out_strides = ContiguousStrides(out.dims());
  std::vector<int64_t> in_strides(strides.begin(), strides.end());
  ForEachRow<2>(out.dims(), {&out_strides, &in_strides},
                [&](const std::array<int64_t, 2>& off, int64_t n,
                    const std::array<int64_t, 2>& inner) {
                  for (int64_t k = 0; k < n; ++k) {
                    o[off[0] + k] = in[off[1] + k * inner[1]];
                  }
                });
}

}  // namespace

Tensor StridedCopy(const Tensor& t, std::vector<int64_t> dims,
                   absl::Span<const int64_t> strides, int64_t offset) {
  Tensor out(t.dtype(), std::move(dims));
  switch (DTypeSize(t.dtype())) {
    case 1:
      CopyRows<uint8_t>(t, out, strides, offset);
      break;
    case 2:
      CopyRows<uint16_t>(t, out, strides, offset);
      break;
    case 4:
      CopyRows<uint32_t>(t, out, strides, offset);
      break;
    default:
      CopyRows<uint64_t>(t, out, strides, offset);
      break;
  }
  return out;
}

namespace {

enum class Category { kNone, kBool, kInteger, kFloat };

Category CategoryOf(DType d) {
  if (d == DType::kBool) return Category::kBool;
  return IsFloatingPoint(d) ? Category::kFloat : Category::kInteger;
}

// c10's combine_categories: `lower` only matters when it is of a higher
// category than `higher`.
std::optional<DType> Combine(std::optional<DType> higher,
                             std::optional<DType> lower) {
  if (!higher.has_value()) return lower;
  if (!lower.has_value()) return higher;
  if (CategoryOf(*higher) == Category::kFloat) return higher;
  if (*higher == DType::kBool || CategoryOf(*lower) == Category::kFloat) {
    return PromoteTypes(*higher, *lower);
  }
  return higher;
}

std::optional<DType> Promote(std::optional<DType> a, DType b) {
  return a.has_value() ? PromoteTypes(*a, b) : b;
}

}  // namespace

DType ResultType(absl::Span<const Operand> operands) {
  std::optional<DType> dimensioned, zero_dim, literal;
  for (const Operand& op : operands) {
    if (op.literal) {
      // A float literal stands for the default float dtype.
      DType d =
          op.tensor.dtype() == DType::kF64 ? DType::kF32 : op.tensor.dtype();
      literal = Promote(literal, d);
    } else if (op.tensor.rank() == 0) {
      zero_dim = Promote(zero_dim, op.tensor.dtype());
    } else {
      dimensioned = Promote(dimensioned, op.tensor.dtype());
    }
  }
  return Combine(dimensioned, Combine(zero_dim, literal)).value_or(DType::kF32);
}

absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    return KernelError("dim ", dim, " is out of range for a tensor of rank ",
                       rank, " (expected ", -r, " to ", r - 1, ")");
  }
  return dim < 0 ? dim + r : dim;
}

absl::Status CheckIndexDType(const Tensor& index, absl::string_view what) {
  if (index.dtype() != DType::kI64 && index.dtype() != DType::kI32) {
    return KernelError(what, " must be an i64 or i32 tensor, got ",
                       index.TypeString());
  }
  return absl::OkStatus();
}

int64_t IndexAt(const Tensor& index, int64_t i) {
  return index.dtype() == DType::kI64 ? index.data<int64_t>()[i]
                                      : index.data<int32_t>()[i];
}

// An int[] parameter of a 2-D op: one value (repeated) or two.
absl::StatusOr<std::array<int64_t, 2>> Pair(const KernelContext& ctx,
                                            absl::string_view name,
                                            int64_t min_value) {
  std::vector<int64_t> v = ctx.call().Ints(name);
  if (v.size() != 1 && v.size() != 2) {
    return KernelError(name, " must have 1 or 2 values, got ", v.size());
  }
  std::array<int64_t, 2> out = {v[0], v.size() == 2 ? v[1] : v[0]};
  for (int64_t e : out) {
    if (e < min_value) {
      return KernelError(name, " must be at least ", min_value, ", got ", e);
    }
    // Keeps window arithmetic far from overflow.
    if (e > (int64_t{1} << 30)) {
      return KernelError(name, " ", e, " is too large");
    }
  }
  return out;
}

// Views a [C,H,W] or [N,C,H,W] input as 4-D; `batched` says which it was.
absl::StatusOr<Tensor> As4D(const Tensor& x, bool& batched) {
  if (x.rank() == 4) {
    batched = true;
    return x;
  }
  if (x.rank() == 3) {
    batched = false;
    std::vector<int64_t> dims = x.dims();
    dims.insert(dims.begin(), 1);
    return x.Reshaped(dims);
  }
  return KernelError("expects a 3-D [C,H,W] or 4-D [N,C,H,W] input, got ",
                     x.TypeString());
}

Tensor From4D(const Tensor& out, bool batched) {
  if (batched) return out;
  std::vector<int64_t> dims(out.dims().begin() + 1, out.dims().end());
  return out.Reshaped(dims);
}

}  // namespace graft::interp
