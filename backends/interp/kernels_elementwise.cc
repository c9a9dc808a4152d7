// Elementwise kernels: unary math, activations, clamp, cast, the
// broadcasting binary ops, comparisons, logical ops and where.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/interp/elementwise.h"
#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "graph/float_limits.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

using Int = int64_t;

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// A unary op: `f` computes floats (integer inputs are converted to f32
// first) and, when set, `fi` computes integers in place of that.
struct UnaryOp {
  double (*f)(double);
  Int (*fi)(Int) = nullptr;
  bool allow_bool = true;  // For ops with `fi`: accept bool inputs.
};

Kernel UnaryKernel(UnaryOp op) {
  return [op](const KernelContext& ctx) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
    if (op.fi != nullptr && !IsFloatingPoint(x.dtype())) {
      if (x.dtype() == DType::kBool && !op.allow_bool) {
        return KernelError("is not defined for bool tensors; use logical_not");
      }
      return Value(MapUnary(x, false, [&](auto v) {
        if constexpr (std::is_integral_v<decltype(v)>) {
          return op.fi(v);
        } else {
          return op.f(v);
        }
      }));
    }
    return Value(MapUnary(ToFloat(x), false, [&](auto v) {
      return op.f(static_cast<double>(v));
    }));
  };
}

absl::StatusOr<Value> Gelu(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  const std::string& approximate = ctx.call().String("approximate");
  if (approximate == "none") {
    return Value(MapUnary(ToFloat(x), false, [](auto v) {
      double d = static_cast<double>(v);
      return 0.5 * d * (1.0 + std::erf(d / std::sqrt(2.0)));
    }));
  }
  if (approximate == "tanh") {
    return Value(MapUnary(ToFloat(x), false, [](auto v) {
      double d = static_cast<double>(v);
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * d * (1.0 + std::tanh(k * (d + 0.044715 * d * d * d)));
    }));
  }
  return KernelError("approximate must be \"none\" or \"tanh\", got \"",
                     approximate, "\"");
}

absl::StatusOr<Value> LeakyRelu(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  const double slope = ctx.call().Float("negative_slope");
  return Value(MapUnary(ToFloat(x), false, [slope](auto v) {
    double d = static_cast<double>(v);
    return d > 0 ? d : d * slope;
  }));
}

absl::StatusOr<Value> LogicalNot(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  return Value(MapUnary(x, true, [](auto v) { return v == 0; }));
}

// With saturate, a finite float past a narrower float's largest becomes
// it (CastFormula); the values between it and the rounding midpoint round
// to it anyway.
absl::StatusOr<Value> Cast(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  const DType to = ctx.call().GetDType("dtype");
  const double limit = LargestFinite(to);
  if (ctx.call().Bool("saturate") && IsFloatingPoint(x.dtype()) && IsFloatingPoint(to) &&
      LargestFinite(x.dtype()) > limit) {
    Tensor wide = x.dtype() == DType::kF64 ? x.Clone() : CastTensor(x, DType::kF64);
    double* v = wide.data<double>();
    for (int64_t i = 0; i < wide.NumElements(); ++i) {
      if (std::isfinite(v[i])) v[i] = std::clamp(v[i], -limit, limit);
    }
    return Value(CastTensor(wide, to));
  }
  return Value(CastTensor(x, to));
}

// A clamp bound as a literal operand for promotion, or nothing for None.
std::optional<Operand> Bound(const KernelContext& ctx, absl::string_view name) {
  const Argument& a = ctx.call().Get(name);
  if (a.is_none()) return std::nullopt;
  if (a.is_bool())
    return Operand{Tensor::Scalar(DType::kBool, a.bool_value()), true};
  if (a.is_int()) {
    Tensor t(DType::kI64, {});
    t.data<int64_t>()[0] = a.int_value();
    return Operand{t, true};
  }
  Tensor t(DType::kF64, {});
  t.data<double>()[0] = a.number();
  return Operand{t, true};
}

absl::StatusOr<Value> Clamp(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  std::optional<Operand> lo = Bound(ctx, "min");
  std::optional<Operand> hi = Bound(ctx, "max");
  if (!lo && !hi) return KernelError("needs at least one of min and max");
  std::vector<Operand> operands = {Operand{x, false}};
  if (lo) operands.push_back(*lo);
  if (hi) operands.push_back(*hi);
  DType dtype = ResultType(operands);
  Tensor in = CastTensor(x, dtype);
  const Argument& lo_arg = ctx.call().Get("min");
  const Argument& hi_arg = ctx.call().Get("max");
  return Value(MapUnary(in, false, [&](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;
      if (lo)
        v = std::max(v, static_cast<C>(lo_arg.is_bool() ? lo_arg.bool_value()
                                                        : lo_arg.number()));
      if (hi)
        v = std::min(v, static_cast<C>(hi_arg.is_bool() ? hi_arg.bool_value()
                                                        : hi_arg.number()));
    } else {
      // Integer results only arise from integer (or bool) bounds.
      auto as_int = [](const Argument& a) -> C {
        return a.is_bool() ? C{a.bool_value()} : static_cast<C>(a.int_value());
      };
      if (lo) v = std::max(v, as_int(lo_arg));
      if (hi) v = std::min(v, as_int(hi_arg));
    }
    return v;
  }));
}

// Reads input and other, and converts both to their result type.
struct BinaryOperands {
  Tensor a, b;
  DType dtype;
};

absl::StatusOr<BinaryOperands> ReadBinary(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Operand a, ctx.InputOrScalar("input"));
  ASSIGN_OR_RETURN(Operand b, ctx.InputOrScalar("other"));
  DType dtype = ResultType({a, b});
  return BinaryOperands{CastTensor(a.tensor, dtype),
                        CastTensor(b.tensor, dtype), dtype};
}

// A binary arithmetic op. `fi` handles integer and bool dtypes; `f` floats.
template <typename F, typename FI>
Kernel Arithmetic(F f, FI fi, bool bool_ok = true) {
  return [f, fi, bool_ok](const KernelContext& ctx) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(BinaryOperands in, ReadBinary(ctx));
    if (in.dtype == DType::kBool && !bool_ok) {
      return KernelError("is not defined for two bool operands");
    }
    absl::StatusOr<Tensor> out =
        MapBinary(in.a, in.b, false, [&](auto x, auto y) {
          if constexpr (std::is_integral_v<decltype(x)>) {
            return fi(x, y);
          } else {
            return f(x, y);
          }
        });
    if (!out.ok()) return out.status();
    return Value(*std::move(out));
  };
}

absl::StatusOr<Value> Div(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(BinaryOperands in, ReadBinary(ctx));
  // True division: integer and bool operands divide as f32.
  Tensor a = ToFloat(in.a), b = ToFloat(in.b);
  absl::StatusOr<Tensor> out = MapBinary(a, b, false, [](auto x, auto y) {
    return static_cast<double>(x) / static_cast<double>(y);
  });
  if (!out.ok()) return out.status();
  return Value(*std::move(out));
}

// Integer power by squaring; exponent >= 0.
Int IntPow(Int base, Int exp) {
  Int result = 1;
  while (exp > 0) {
    if (exp & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

absl::StatusOr<Value> Pow(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(BinaryOperands in, ReadBinary(ctx));
  bool negative_exponent = false;
  absl::StatusOr<Tensor> out =
      MapBinary(in.a, in.b, false, [&](auto x, auto y) {
        if constexpr (std::is_integral_v<decltype(x)>) {
          if (y < 0) {
            negative_exponent = true;
            return Int{0};
          }
          return IntPow(x, y);
        } else {
          return std::pow(x, y);
        }
      });
  if (!out.ok()) return out.status();
  if (negative_exponent) {
    return KernelError(
        "integers to negative integer powers are not allowed; cast the base "
        "to a float dtype first");
  }
  return Value(*std::move(out));
}

// A comparison or logical op: the result is bool.
template <typename F>
Kernel Predicate(F f) {
  return [f](const KernelContext& ctx) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(BinaryOperands in, ReadBinary(ctx));
    ASSIGN_OR_RETURN(Tensor out, MapBinary(in.a, in.b, true, f));
    return Value(std::move(out));
  };
}

absl::StatusOr<Value> Where(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor cond, ctx.Input("condition"));
  if (cond.dtype() != DType::kBool) {
    return KernelError("condition must be a bool tensor, got ",
                       cond.TypeString());
  }
  ASSIGN_OR_RETURN(Operand a, ctx.InputOrScalar("input"));
  ASSIGN_OR_RETURN(Operand b, ctx.InputOrScalar("other"));
  DType dtype = ResultType({a, b});
  Tensor x = CastTensor(a.tensor, dtype), y = CastTensor(b.tensor, dtype);
  absl::StatusOr<std::vector<int64_t>> dims = BroadcastDims(x.dims(), y.dims());
  if (!dims.ok()) return dims.status();
  dims = BroadcastDims(cond.dims(), *dims);
  if (!dims.ok()) return dims.status();
  ASSIGN_OR_RETURN(Tensor out, NewTensor(dtype, *dims));
  std::vector<int64_t> so = ContiguousStrides(*dims);
  std::vector<int64_t> sc = BroadcastStrides(cond.dims(), *dims);
  std::vector<int64_t> sx = BroadcastStrides(x.dims(), *dims);
  std::vector<int64_t> sy = BroadcastStrides(y.dims(), *dims);
  const uint8_t* pc = cond.data<uint8_t>();
  DispatchDType(dtype, [&](auto tr) {
    using S = typename decltype(tr)::Storage;
    const S* px = x.data<S>();
    const S* py = y.data<S>();
    S* o = out.data<S>();
    ForEachRow<4>(*dims, {&so, &sc, &sx, &sy},
                  [&](const std::array<int64_t, 4>& off, int64_t n,
                      const std::array<int64_t, 4>& inner) {
                    for (int64_t k = 0; k < n; ++k) {
                      o[off[0] + k] = pc[off[1] + k * inner[1]] != 0
                                          ? px[off[2] + k * inner[2]]
                                          : py[off[3] + k * inner[3]];
                    }
                  });
  });
  return Value(out);
}

}  // namespace

void RegisterElementwiseKernels(KernelTable& t) {
  // Unary math. Integer inputs compute in f32 except where `fi` is given.
  t.Add("neg", UnaryKernel({[](double x) { return -x; },
                            [](Int x) { return WrapSub(0, x); },
                            /*allow_bool=*/false}));
  t.Add("abs", UnaryKernel({[](double x) { return std::fabs(x); },
                            [](Int x) { return x < 0 ? WrapSub(0, x) : x; }}));
  t.Add("relu", UnaryKernel({[](double x) {
                               return std::isnan(x) ? x : (x > 0 ? x : 0.0);
                             },
                             [](Int x) { return x > 0 ? x : Int{0}; }}));
  auto whole = [](Int x) { return x; };
  t.Add("floor", UnaryKernel({[](double x) { return std::floor(x); }, whole}));
  t.Add("ceil", UnaryKernel({[](double x) { return std::ceil(x); }, whole}));
  // nearbyint in the default rounding mode: halves to even, as torch.round.
  t.Add("round", UnaryKernel({[](double x) { return std::nearbyint(x); }, whole}));
  t.Add("exp", UnaryKernel({[](double x) { return std::exp(x); }}));
  t.Add("log", UnaryKernel({[](double x) { return std::log(x); }}));
  t.Add("sqrt", UnaryKernel({[](double x) { return std::sqrt(x); }}));
  t.Add("rsqrt", UnaryKernel({[](double x) { return 1.0 / std::sqrt(x); }}));
  t.Add("sin", UnaryKernel({[](double x) { return std::sin(x); }}));
  t.Add("cos", UnaryKernel({[](double x) { return std::cos(x); }}));
  t.Add("tanh", UnaryKernel({[](double x) { return std::tanh(x); }}));
  t.Add("tan", UnaryKernel({[](double x) { return std::tan(x); }}));
  t.Add("asin", UnaryKernel({[](double x) { return std::asin(x); }}));
  t.Add("acos", UnaryKernel({[](double x) { return std::acos(x); }}));
  t.Add("atan", UnaryKernel({[](double x) { return std::atan(x); }}));
  t.Add("sinh", UnaryKernel({[](double x) { return std::sinh(x); }}));
  t.Add("cosh", UnaryKernel({[](double x) { return std::cosh(x); }}));
  t.Add("asinh", UnaryKernel({[](double x) { return std::asinh(x); }}));
  t.Add("acosh", UnaryKernel({[](double x) { return std::acosh(x); }}));
  t.Add("atanh", UnaryKernel({[](double x) { return std::atanh(x); }}));
  t.Add("sigmoid", UnaryKernel({Sigmoid}));
  t.Add("silu", UnaryKernel({[](double x) { return x * Sigmoid(x); }}));
  t.Add("erf", UnaryKernel({[](double x) { return std::erf(x); }}));
  t.Add("reciprocal", UnaryKernel({[](double x) { return 1.0 / x; }}));
  t.Add("logical_not", LogicalNot);
  t.Add("gelu", Gelu);
  t.Add("leaky_relu", LeakyRelu);
  t.Add("clamp", Clamp);
  t.Add("cast", Cast);

  t.Add("add", Arithmetic([](double x, double y) { return x + y; }, WrapAdd));
  t.Add("sub", Arithmetic([](double x, double y) { return x - y; }, WrapSub,
                          /*bool_ok=*/false));
  t.Add("mul", Arithmetic([](double x, double y) { return x * y; }, WrapMul));
  t.Add("div", Div);
  t.Add("pow", Pow);
  // NaN wins in maximum and minimum, as in PyTorch.
  t.Add("maximum", Arithmetic(
                       [](double x, double y) {
                         return std::isnan(x) || std::isnan(y) ? NAN
                                                               : std::max(x, y);
                       },
                       [](Int x, Int y) { return std::max(x, y); }));
  t.Add("minimum", Arithmetic(
                       [](double x, double y) {
                         return std::isnan(x) || std::isnan(y) ? NAN
                                                               : std::min(x, y);
                       },
                       [](Int x, Int y) { return std::min(x, y); }));

  t.Add("eq", Predicate([](auto x, auto y) { return x == y; }));
  t.Add("ne", Predicate([](auto x, auto y) { return x != y; }));
  t.Add("lt", Predicate([](auto x, auto y) { return x < y; }));
  t.Add("le", Predicate([](auto x, auto y) { return x <= y; }));
  t.Add("gt", Predicate([](auto x, auto y) { return x > y; }));
  t.Add("ge", Predicate([](auto x, auto y) { return x >= y; }));
  t.Add("logical_and",
        Predicate([](auto x, auto y) { return x != 0 && y != 0; }));
  t.Add("logical_or",
        Predicate([](auto x, auto y) { return x != 0 || y != 0; }));
  t.Add("where", Where);
}

}  // namespace graft::interp
