// Reductions: sum, mean, amax, amin, argmax.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

// Which dims a reduction covers and the shapes it produces.
struct ReducePlan {
  std::vector<int64_t> keep_dims;  // Input dims with reduced ones set to 1.
  std::vector<int64_t> out_dims;   // keep_dims, or without the reduced dims.
  int64_t count = 1;               // Elements reduced into each output.
};

// `dim: int[]? = None`: None (or an empty list, as in PyTorch) reduces
// every dim.
absl::StatusOr<ReducePlan> PlanReduce(const KernelContext& ctx,
                                      const Tensor& x) {
  const int64_t rank = x.rank();
  std::vector<bool> reduced(rank, false);
  const Argument& dim_arg = ctx.call().Get("dim");
  std::vector<int64_t> dims =
      dim_arg.is_none() ? std::vector<int64_t>{} : dim_arg.int_list();
  if (dims.empty()) {
    reduced.assign(rank, true);
  } else {
    for (int64_t d : dims) {
      absl::StatusOr<int64_t> nd = NormalizeDim(d, rank);
      if (!nd.ok()) return nd.status();
      if (rank == 0) continue;
      if (reduced[*nd]) return KernelError("dim ", d, " appears twice");
      reduced[*nd] = true;
    }
  }
  const bool keepdim = ctx.call().Bool("keepdim");
  ReducePlan plan;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i]) {
      plan.count *= x.dims()[i];
      plan.keep_dims.push_back(1);
      if (keepdim) plan.out_dims.push_back(1);
    } else {
      plan.keep_dims.push_back(x.dims()[i]);
      plan.out_dims.push_back(x.dims()[i]);
    }
  }
  return plan;
}

// Calls visit(out_index, x_value) for every input element, in C order;
// out_index is the flat index of the output element it reduces into.
template <typename Traits, typename Visit>
void VisitReduced(const Tensor& x, const ReducePlan& plan, Visit&& visit) {
  std::vector<int64_t> sx = ContiguousStrides(x.dims());
  std::vector<int64_t> so = BroadcastStrides(plan.keep_dims, x.dims());
  const auto* p = x.data<typename Traits::Storage>();
  ForEachRow<2>(x.dims(), {&sx, &so},
                [&](const std::array<int64_t, 2>& off, int64_t n,
                    const std::array<int64_t, 2>& inner) {
                  for (int64_t k = 0; k < n; ++k) {
                    visit(off[1] + k * inner[1],
                          Traits::Load(p[off[0] + k * inner[0]]));
                  }
                });
}

absl::StatusOr<Value> SumOrMean(const KernelContext& ctx, bool mean) {
  absl::StatusOr<Tensor> x = ctx.Input("input");
  if (!x.ok()) return x.status();
  if (mean && !IsFloatingPoint(x->dtype())) {
    return KernelError("mean needs a floating-point input, got ",
                       x->TypeString(), "; cast it first");
  }
  ASSIGN_OR_RETURN(ReducePlan plan, PlanReduce(ctx, *x));
  // sum of bool or integers gives i64 (PyTorch).
  DType out_dtype = IsFloatingPoint(x->dtype()) ? x->dtype() : DType::kI64;
  Tensor out(out_dtype, plan.out_dims);
  const int64_t n = out.NumElements();
  DispatchDType(x->dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::Compute;
    std::vector<C> acc(n, C{0});
    VisitReduced<Tr>(*x, plan, [&](int64_t o, C v) {
      if constexpr (std::is_integral_v<C>) {
        acc[o] = static_cast<C>(static_cast<uint64_t>(acc[o]) +
                                static_cast<uint64_t>(v));
      } else {
        acc[o] += v;
      }
    });
    for (int64_t i = 0; i < n; ++i) {
      double v = static_cast<double>(acc[i]);
      if (mean) v /= static_cast<double>(plan.count);
      if constexpr (std::is_integral_v<C>) {
        out.data<int64_t>()[i] = acc[i];
      } else {
        DispatchDType(out_dtype, [&](auto otr) {
          using O = decltype(otr);
          out.data<typename O::Storage>()[i] = O::From(v);
        });
      }
    }
  });
  return Value(out);
}

absl::StatusOr<Value> MinMax(const KernelContext& ctx, bool is_max) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(ReducePlan plan, PlanReduce(ctx, x));
  Tensor out(x.dtype(), plan.out_dims);
  const int64_t n = out.NumElements();
  if (n > 0 && plan.count == 0) {
    return KernelError("cannot reduce over a zero-size dim of ", x.TypeString(),
                       ": the result has no identity");
  }
  DispatchDType(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::Compute;
    std::vector<C> acc(n);
    std::vector<bool> seen(n, false);
    VisitReduced<Tr>(x, plan, [&](int64_t o, C v) {
      if (!seen[o]) {
        acc[o] = v;
        seen[o] = true;
        return;
      }
      if constexpr (std::is_floating_point_v<C>) {
        // NaN propagates.
        if (std::isnan(acc[o])) return;
        if (std::isnan(v)) {
          acc[o] = v;
          return;
        }
      }
      acc[o] = is_max ? std::max(acc[o], v) : std::min(acc[o], v);
    });
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t i = 0; i < n; ++i) o[i] = Tr::From(acc[i]);
  });
  return Value(out);
}

absl::StatusOr<Value> Argmax(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  const bool keepdim = ctx.call().Bool("keepdim");
  int64_t outer = 1, len = x.NumElements(), inner = 1;
  std::vector<int64_t> out_dims;
  if (ctx.call().IsNone("dim")) {
    // Flattened; keepdim keeps every dim as 1.
    if (keepdim) out_dims.assign(x.rank(), 1);
  } else {
    absl::StatusOr<int64_t> d = NormalizeDim(ctx.call().Int("dim"), x.rank());
    if (!d.ok()) return d.status();
    if (x.rank() > 0) {
      outer = 1;
      inner = 1;
      for (int64_t i = 0; i < *d; ++i) outer *= x.dims()[i];
      len = x.dims()[*d];
      for (int64_t i = *d + 1; i < x.rank(); ++i) inner *= x.dims()[i];
      out_dims = x.dims();
      if (keepdim) {
        out_dims[*d] = 1;
      } else {
        out_dims.erase(out_dims.begin() + *d);
      }
    }
  }
  Tensor out(DType::kI64, out_dims);
  if (out.NumElements() > 0 && len == 0) {
    return KernelError("argmax of an empty dim of ", x.TypeString(),
                       " is undefined");
  }
  int64_t* o = out.data<int64_t>();
  DispatchDType(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::Compute;
    const auto* p = x.data<typename Tr::Storage>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t base = a * len * inner + c;
        int64_t best = 0;
        C best_v = Tr::Load(p[base]);
        for (int64_t i = 1; i < len; ++i) {
          C v = Tr::Load(p[base + i * inner]);
          bool better = v > best_v;
          if constexpr (std::is_floating_point_v<C>) {
            // The first NaN counts as the maximum.
            if (std::isnan(best_v)) break;
            better = better || std::isnan(v);
          }
          if (better) {
            best = i;
            best_v = v;
          }
        }
        o[a * inner + c] = best;
      }
    }
  });
  return Value(out);
}

// Sums in the compute type (double for floats, int64 for integers and
// bool), in order along dim (from its end with reverse), each element left
// out of its own sum with exclusive.
absl::StatusOr<Value> Cumsum(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  absl::StatusOr<int64_t> d =
      NormalizeDim(ctx.call().Int("dim"), std::max<int64_t>(x.rank(), 1));
  if (!d.ok()) return d.status();
  const bool exclusive = ctx.call().Bool("exclusive");
  const bool reverse = ctx.call().Bool("reverse");
  int64_t outer = 1, len = 1, inner = 1;
  if (x.rank() > 0) {
    for (int64_t i = 0; i < *d; ++i) outer *= x.dims()[i];
    len = x.dims()[*d];
    for (int64_t i = *d + 1; i < x.rank(); ++i) inner *= x.dims()[i];
  }
  Tensor out(IsFloatingPoint(x.dtype()) ? x.dtype() : DType::kI64, x.dims());
  DispatchDType(x.dtype(), [&](auto in_traits) {
    using In = decltype(in_traits);
    using C = typename In::Compute;
    const auto* p = x.data<typename In::Storage>();
    DispatchDType(out.dtype(), [&](auto out_traits) {
      using Out = decltype(out_traits);
      auto* q = out.data<typename Out::Storage>();
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t c = 0; c < inner; ++c) {
          C sum = 0;
          for (int64_t step = 0; step < len; ++step) {
            const int64_t i = reverse ? len - 1 - step : step;
            const int64_t at = (a * len + i) * inner + c;
            const C v = In::Load(p[at]);
            if (!exclusive) sum += v;
            q[at] = Out::From(sum);
            if (exclusive) sum += v;
          }
        }
      }
    });
  });
  return Value(out);
}

}  // namespace

void RegisterReduceKernels(KernelTable& t) {
  t.Add("sum", [](const KernelContext& ctx) { return SumOrMean(ctx, false); });
  t.Add("mean", [](const KernelContext& ctx) { return SumOrMean(ctx, true); });
  t.Add("amax", [](const KernelContext& ctx) { return MinMax(ctx, true); });
  t.Add("amin", [](const KernelContext& ctx) { return MinMax(ctx, false); });
  t.Add("argmax", Argmax);
  t.Add("cumsum", Cumsum);
}

}  // namespace graft::interp
