// Creation kernels: full, zeros, arange.

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

// Fills a new tensor of `dtype` and dims `size` with one literal.
absl::StatusOr<Value> Fill(const std::vector<int64_t>& size, DType dtype,
                           const Argument& value) {
  ASSIGN_OR_RETURN(Tensor out, NewTensor(dtype, size));
  const int64_t n = out.NumElements();
  DispatchDType(dtype, [&](auto tr) {
    using Tr = decltype(tr);
    // Integer literals convert exactly; floats truncate (saturating) into
    // integer dtypes.
    const auto v = value.is_int()    ? Tr::From(value.int_value())
                   : value.is_bool() ? Tr::From(value.bool_value() ? 1 : 0)
                                     : Tr::From(value.double_value());
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  });
  return Value(std::move(out));
}

absl::StatusOr<Value> Full(const KernelContext& ctx) {
  return Fill(ctx.call().Ints("size"), ctx.call().GetDType("dtype"),
              ctx.call().Get("fill_value"));
}

absl::StatusOr<Value> Zeros(const KernelContext& ctx) {
  return Fill(ctx.call().Ints("size"), ctx.call().GetDType("dtype"),
              Argument(int64_t{0}));
}

absl::StatusOr<Value> Arange(const KernelContext& ctx) {
  const Argument& start = ctx.call().Get("start");
  const Argument& end = ctx.call().Get("end");
  const Argument& step = ctx.call().Get("step");
  auto is_integral = [](const Argument& a) {
    return a.is_int() || a.is_bool();
  };
  auto as_double = [](const Argument& a) {
    return a.is_bool() ? (a.bool_value() ? 1.0 : 0.0) : a.number();
  };
  const bool all_int =
      is_integral(start) && is_integral(end) && is_integral(step);
  DType dtype = all_int ? DType::kI64 : DType::kF32;
  if (!ctx.call().IsNone("dtype")) dtype = ctx.call().GetDType("dtype");
  const double s = as_double(start), e = as_double(end), st = as_double(step);
  if (!std::isfinite(s) || !std::isfinite(e) || !std::isfinite(st)) {
    return KernelError("start, end and step must be finite");
  }
  if (st == 0) return KernelError("step must not be zero");
  if ((e - s) / st < 0) {
    return KernelError("end ", e, " cannot be reached from start ", s,
                       " with step ", st);
  }
  const double count = std::ceil((e - s) / st);
  if (count > static_cast<double>(int64_t{1} << 40)) {
    return KernelError("arange would have ", count, " elements");
  }
  const int64_t n = static_cast<int64_t>(count);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(dtype, {n}));
  DispatchDType(dtype, [&](auto tr) {
    using Tr = decltype(tr);
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t i = 0; i < n; ++i) {
      if (all_int) {
        const int64_t si =
            start.is_bool() ? start.bool_value() : start.int_value();
        const int64_t ti =
            step.is_bool() ? step.bool_value() : step.int_value();
        // Exact for integer arguments; wraps rather than overflowing.
        o[i] = Tr::From(static_cast<int64_t>(static_cast<uint64_t>(si) +
                                             static_cast<uint64_t>(i) *
                                                 static_cast<uint64_t>(ti)));
      } else {
        o[i] = Tr::From(s + static_cast<double>(i) * st);
      }
    }
  });
  return Value(std::move(out));
}

}  // namespace

void RegisterCreationKernels(KernelTable& t) {
  t.Add("full", Full);
  t.Add("zeros", Zeros);
  t.Add("arange", Arange);
}

}  // namespace graft::interp
