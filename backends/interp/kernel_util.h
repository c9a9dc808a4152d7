#ifndef GRAFT_BACKENDS_INTERP_KERNEL_UTIL_H_
#define GRAFT_BACKENDS_INTERP_KERNEL_UTIL_H_

// Building blocks shared by the interpreter's kernels: per-dtype element
// traits, dtype dispatch, the strided broadcasting walk, casts, PyTorch's
// result-type rule and dim/shape checks.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/interp/kernel.h"
#include "graph/dtype.h"
#include "graph/tensor.h"

namespace graft::interp {

// Converts a computed value to storage type S: floats to integers truncate
// toward zero and saturate (NaN gives 0), integers to narrower integers wrap
// (two's complement, as PyTorch does), anything to bool is "!= 0".
template <typename S, typename V>
S ConvertValue(V v) {
  if constexpr (std::is_floating_point_v<V> && std::is_integral_v<S>) {
    if (std::isnan(v)) return 0;
    constexpr double lo = static_cast<double>(std::numeric_limits<S>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<S>::max());
    if (v <= lo) return std::numeric_limits<S>::min();
    if (v >= hi) return std::numeric_limits<S>::max();
    return static_cast<S>(v);
  } else {
    return static_cast<S>(v);
  }
}

// Element traits: S is the storage type, C the type arithmetic is done in
// (double for every float dtype, so f16/bf16 compute at least in f32;
// int64_t for integers and bool). Load widens, From narrows.
template <DType D, typename S, typename C>
struct ElementTraits {
  static constexpr DType kDType = D;
  using Storage = S;
  using Compute = C;
  static C Load(S v) { return static_cast<C>(v); }
  template <typename V>
  static S From(V v) {
    return ConvertValue<S>(v);
  }
};

using F32Traits = ElementTraits<DType::kF32, float, double>;
using F64Traits = ElementTraits<DType::kF64, double, double>;
using I8Traits = ElementTraits<DType::kI8, int8_t, int64_t>;
using U8Traits = ElementTraits<DType::kU8, uint8_t, int64_t>;
using I32Traits = ElementTraits<DType::kI32, int32_t, int64_t>;
using I64Traits = ElementTraits<DType::kI64, int64_t, int64_t>;

struct F16Traits {
  static constexpr DType kDType = DType::kF16;
  using Storage = uint16_t;
  using Compute = double;
  static double Load(uint16_t v) { return HalfToFloat(v); }
  template <typename V>
  static uint16_t From(V v) {
    return FloatToHalf(static_cast<float>(v));
  }
};

struct BF16Traits {
  static constexpr DType kDType = DType::kBF16;
  using Storage = uint16_t;
  using Compute = double;
  static double Load(uint16_t v) { return BFloat16ToFloat(v); }
  template <typename V>
  static uint16_t From(V v) {
    return FloatToBFloat16(static_cast<float>(v));
  }
};

struct BoolTraits {
  static constexpr DType kDType = DType::kBool;
  using Storage = uint8_t;
  using Compute = int64_t;
  static int64_t Load(uint8_t v) { return v != 0 ? 1 : 0; }
  template <typename V>
  static uint8_t From(V v) {
    return v != 0 ? 1 : 0;
  }
};

// Two's complement arithmetic on int64, without signed-overflow UB.
inline int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t WrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Calls fn(Traits{}) for the traits of `dtype`; every branch must return
// the same type.
template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(F32Traits{});
    case DType::kF64:
      return fn(F64Traits{});
    case DType::kF16:
      return fn(F16Traits{});
    case DType::kBF16:
      return fn(BF16Traits{});
    case DType::kI8:
      return fn(I8Traits{});
    case DType::kU8:
      return fn(U8Traits{});
    case DType::kI32:
      return fn(I32Traits{});
    case DType::kI64:
      return fn(I64Traits{});
    case DType::kBool:
      return fn(BoolTraits{});
    case DType::kF8E4M3:
      // Bytes: only views (copies) and dequantize read f8 tensors
      // (InferNodeTypes), and dequantize reads them itself.
      return fn(U8Traits{});
  }
  return fn(F32Traits{});  // Unreachable: the switch covers every dtype.
}

template <typename Traits>
inline constexpr bool kIsFloatTraits =
    std::is_floating_point_v<typename Traits::Compute>;

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> dims);
// Strides of a tensor with `dims` read as if broadcast to `out_dims`
// (right-aligned, NumPy style): 0 along broadcast and missing dims.
// Requires that `dims` broadcasts to `out_dims`.
std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> dims,
                                      absl::Span<const int64_t> out_dims);

// Walks the index space `dims` in C order one innermost row at a time:
// calls row(offsets, n, inner) where offsets[k] is the element offset of
// the row's first element in operand k (per strides[k], each of length
// dims.size()), n the row length and inner[k] operand k's stride along it.
// A rank-0 space is one row of one element; a space with a zero dim has no
// rows.
template <size_t N, typename RowFn>
void ForEachRow(absl::Span<const int64_t> dims,
                const std::array<const std::vector<int64_t>*, N>& strides,
                RowFn&& row) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  const size_t rank = dims.size();
  std::array<int64_t, N> inner{};
  if (rank > 0) {
    for (size_t k = 0; k < N; ++k) inner[k] = (*strides[k])[rank - 1];
  }
  const int64_t n = rank == 0 ? 1 : dims[rank - 1];
  const size_t outer_rank = rank == 0 ? 0 : rank - 1;
  std::vector<int64_t> index(outer_rank, 0);
  std::array<int64_t, N> offsets{};
  while (true) {
    row(offsets, n, inner);
    // Advance the outer index like an odometer, keeping offsets in step.
    size_t d = outer_rank;
    while (d > 0) {
      --d;
      if (++index[d] < dims[d]) {
        for (size_t k = 0; k < N; ++k) offsets[k] += (*strides[k])[d];
        break;
      }
      for (size_t k = 0; k < N; ++k) {
        offsets[k] -= (*strides[k])[d] * (dims[d] - 1);
      }
      index[d] = 0;
      if (d == 0) return;
    }
    if (outer_rank == 0) return;
  }
}

// NumPy broadcasting of two shapes; the error names both.
absl::StatusOr<std::vector<int64_t>> BroadcastDims(absl::Span<const int64_t> a,
                                                   absl::Span<const int64_t> b);

// The element count of `dims`, or an error if a dim is negative or the
// count (or its size in bytes) overflows.
absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims,
                                           DType dtype = DType::kF64);
// A zero-filled tensor after CheckedNumElements.
absl::StatusOr<Tensor> NewTensor(DType dtype, std::vector<int64_t> dims);

// `t` converted to `dtype` (the same tensor when it already has it), with
// ConvertValue's rules.
Tensor CastTensor(const Tensor& t, DType dtype);
// Copies `t` to a new tensor of the same dtype and dims laid out per
// strides `strides` starting at element `offset` of t's storage: the
// general strided gather behind permute, expand and slice.
Tensor StridedCopy(const Tensor& t, std::vector<int64_t> dims,
                   absl::Span<const int64_t> strides, int64_t offset);

// PyTorch's result type of an operation (the same rule as the type rules
// use): tensors with dims promote with each other first, rank-0 tensors
// next, literals last; a later group only matters when it is of a higher
// category (bool < integer < float), and a literal then gives its
// category's default dtype (i64 for ints, f32 for floats).
DType ResultType(absl::Span<const Operand> operands);

// Wraps `dim` into [0, rank) (Python style negatives). Rank-0 tensors
// accept -1 and 0, as PyTorch does.
absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank);

// "[2,3]".
std::string DimsString(absl::Span<const int64_t> dims);

// Reads an int-like element of an index tensor (i32 or i64; others refused).
absl::Status CheckIndexDType(const Tensor& index, absl::string_view what);

// An int[] parameter of a 2-D op (stride, padding, ...): one value
// (repeated) or two, each at least `min_value`.
absl::StatusOr<std::array<int64_t, 2>> Pair(const KernelContext& ctx, absl::string_view name,
                                            int64_t min_value);
// Views a [C,H,W] or [N,C,H,W] input as 4-D; `batched` says which it was.
absl::StatusOr<Tensor> As4D(const Tensor& x, bool& batched);
// Back to the input's rank.
Tensor From4D(const Tensor& out, bool batched);
int64_t IndexAt(const Tensor& index, int64_t i);

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_KERNEL_UTIL_H_
