#ifndef GRAFT_BACKENDS_INTERP_ELEMENTWISE_H_
#define GRAFT_BACKENDS_INTERP_ELEMENTWISE_H_

// Elementwise loops over already type-converted operands, shared by the
// elementwise and quantization kernels.

#include <array>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/interp/kernel_util.h"

namespace graft::interp {

// Calls fn(Traits{}) for a floating-point dtype; other dtypes are the
// caller's error to avoid (they dispatch as f32).
template <typename Fn>
decltype(auto) DispatchFloat(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF64:
      return fn(F64Traits{});
    case DType::kF16:
      return fn(F16Traits{});
    case DType::kBF16:
      return fn(BF16Traits{});
    default:
      return fn(F32Traits{});
  }
}

// `t` itself when it is floating point, else `t` converted to f32 ("float
// ops on integer input compute in f32").
inline Tensor ToFloat(const Tensor& t) {
  return IsFloatingPoint(t.dtype()) ? t : CastTensor(t, DType::kF32);
}

// out[i] = f(a[i]) computed in a's compute type; the result has a's dtype,
// or bool when `bool_out`.
template <typename F>
Tensor MapUnary(const Tensor& a, bool bool_out, F f) {
  Tensor out(bool_out ? DType::kBool : a.dtype(), a.dims());
  const int64_t n = a.NumElements();
  DispatchDType(a.dtype(), [&](auto tr) {
    using In = decltype(tr);
    const auto* p = a.data<typename In::Storage>();
    auto loop = [&](auto out_tr) {
      using Out = decltype(out_tr);
      auto* o = out.data<typename Out::Storage>();
      for (int64_t i = 0; i < n; ++i) o[i] = Out::From(f(In::Load(p[i])));
    };
    if (bool_out) {
      loop(BoolTraits{});
    } else {
      loop(In{});
    }
  });
  return out;
}

// out = f(a, b) with NumPy broadcasting; a and b have the same dtype and
// are computed in its compute type. The result has that dtype, or bool
// when `bool_out`.
template <typename F>
absl::StatusOr<Tensor> MapBinary(const Tensor& a, const Tensor& b,
                                 bool bool_out, F f) {
  absl::StatusOr<std::vector<int64_t>> dims = BroadcastDims(a.dims(), b.dims());
  if (!dims.ok()) return dims.status();
  absl::StatusOr<Tensor> out_or =
      NewTensor(bool_out ? DType::kBool : a.dtype(), *dims);
  if (!out_or.ok()) return out_or.status();
  Tensor out = *std::move(out_or);
  std::vector<int64_t> so = ContiguousStrides(*dims);
  std::vector<int64_t> sa = BroadcastStrides(a.dims(), *dims);
  std::vector<int64_t> sb = BroadcastStrides(b.dims(), *dims);
  DispatchDType(a.dtype(), [&](auto tr) {
    using In = decltype(tr);
    const auto* pa = a.data<typename In::Storage>();
    const auto* pb = b.data<typename In::Storage>();
    auto loop = [&](auto out_tr) {
      using Out = decltype(out_tr);
      auto* o = out.data<typename Out::Storage>();
      ForEachRow<3>(*dims, {&so, &sa, &sb},
                    [&](const std::array<int64_t, 3>& off, int64_t n,
                        const std::array<int64_t, 3>& inner) {
                      for (int64_t k = 0; k < n; ++k) {
                        o[off[0] + k] =
                            Out::From(f(In::Load(pa[off[1] + k * inner[1]]),
                                        In::Load(pb[off[2] + k * inner[2]])));
                      }
                    });
    };
    if (bool_out) {
      loop(BoolTraits{});
    } else {
      loop(In{});
    }
  });
  return out;
}

}  // namespace graft::interp

#endif  // GRAFT_BACKENDS_INTERP_ELEMENTWISE_H_
