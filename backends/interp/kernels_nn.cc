// Neural-network kernels: matmul, linear, conv2d, pooling, softmax and
// normalization.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/interp/elementwise.h"
#include "backends/interp/gemm.h"
#include "backends/interp/kernel.h"
#include "backends/interp/kernel_util.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

// The dtype a product is computed in: f64 stays f64, the other floats
// compute in f32, integers in i64 (wrapping).
absl::StatusOr<DType> ProductDType(DType dtype) {
  if (dtype == DType::kBool) {
    return KernelError("is not defined for bool tensors");
  }
  if (dtype == DType::kF64) return DType::kF64;
  return IsFloatingPoint(dtype) ? DType::kF32 : DType::kI64;
}

// Calls fn(T{}) with T the C++ type products in `compute` use.
template <typename Fn>
void WithProductType(DType compute, Fn&& fn) {
  if (compute == DType::kF64) {
    fn(double{});
  } else if (compute == DType::kF32) {
    fn(float{});
  } else {
    fn(uint64_t{});
  }
}

absl::Status SameDType(const Tensor& a, const Tensor& b, absl::string_view an,
                       absl::string_view bn) {
  if (a.dtype() != b.dtype()) {
    return KernelError(an, " and ", bn, " must have the same dtype, got ",
                       a.TypeString(), " and ", b.TypeString());
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Matmul(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor a_or, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor b_or, ctx.Input("other"));
  Tensor a = a_or, b = b_or;
  RETURN_IF_ERROR(SameDType(a, b, "input", "other"));
  if (a.rank() == 0 || b.rank() == 0) {
    return KernelError("both arguments must be at least 1-D, got ",
                       a.TypeString(), " and ", b.TypeString());
  }
  ASSIGN_OR_RETURN(DType compute, ProductDType(a.dtype()));
  // torch.matmul's 1-D rules: a vector on the left gains a leading 1, on
  // the right a trailing 1; both are dropped from the result.
  const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
  std::vector<int64_t> ad = a.dims(), bd = b.dims();
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2], k = ad.back();
  const int64_t k2 = bd[bd.size() - 2], n = bd.back();
  if (k != k2) {
    return KernelError("shapes ", a.TypeString(), " and ", b.TypeString(),
                       " cannot be multiplied (", k, " vs ", k2, ")");
  }
  std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2);
  std::vector<int64_t> b_batch(bd.begin(), bd.end() - 2);
  ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastDims(a_batch, b_batch));
  std::vector<int64_t> out_dims = batch;
  if (!a_vec) out_dims.push_back(m);
  if (!b_vec) out_dims.push_back(n);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(compute, out_dims));
  Tensor ac = CastTensor(a, compute), bc = CastTensor(b, compute);
  // Offsets of each batch's matrices, through broadcast batch strides.
  std::vector<int64_t> sa = BroadcastStrides(a_batch, batch);
  std::vector<int64_t> sb = BroadcastStrides(b_batch, batch);
  const int64_t batches = CheckedNumElements(batch).value_or(0);
  std::vector<int64_t> index(batch.size(), 0);
  WithProductType(compute, [&](auto zero) {
    using T = decltype(zero);
    const T* pa = ac.data<T>();
    const T* pb = bc.data<T>();
    T* po = out.data<T>();
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t rem = bi, oa = 0, ob = 0;
      for (size_t d = batch.size(); d > 0; --d) {
        const int64_t i = rem % batch[d - 1];
        rem /= batch[d - 1];
        oa += i * sa[d - 1];
        ob += i * sb[d - 1];
      }
      GemmNN<T>(m, n, k, pa + oa * m * k, k, pb + ob * k * n, n,
                po + bi * m * n, n);
    }
  });
  return Value(CastTensor(out, a.dtype()));
}

absl::StatusOr<Value> Linear(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  RETURN_IF_ERROR(SameDType(x, w, "input", "weight"));
  if (w.rank() != 2) {
    return KernelError("weight must be 2-D [out, in], got ", w.TypeString());
  }
  const int64_t n = w.dims()[0], k = w.dims()[1];
  if (x.rank() == 0 || x.dims().back() != k) {
    return KernelError("input ", x.TypeString(), " does not match weight ",
                       w.TypeString(), ": the last dim must be ", k);
  }
  if (bias) {
    RETURN_IF_ERROR(SameDType(x, *bias, "input", "bias"));
    // [out], or a scalar added to every feature (linear's type rule).
    if ((bias->rank() == 1 && bias->NumElements() != n) || bias->rank() > 1) {
      return KernelError("bias must be [", n, "] or a scalar, got ", bias->TypeString());
    }
  }
  ASSIGN_OR_RETURN(DType compute, ProductDType(x.dtype()));
  std::vector<int64_t> out_dims = x.dims();
  out_dims.back() = n;
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.rank(); ++i) rows *= x.dims()[i];
  ASSIGN_OR_RETURN(Tensor out, NewTensor(compute, out_dims));
  Tensor xc = CastTensor(x, compute), wc = CastTensor(w, compute);
  WithProductType(compute, [&](auto zero) {
    using T = decltype(zero);
    T* po = out.data<T>();
    GemmNT<T>(rows, n, k, xc.data<T>(), k, wc.data<T>(), k, po, n);
    if (bias) {
      Tensor bc = CastTensor(*bias, compute);
      const T* pb = bc.data<T>();
      const int64_t step = bc.rank() == 0 ? 0 : 1;
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += pb[j * step];
      }
    }
  });
  return Value(CastTensor(out, x.dtype()));
}

absl::Status RequireFloat(const Tensor& t, absl::string_view what) {
  if (!IsFloatingPoint(t.dtype())) {
    return KernelError(what, " must be floating point, got ", t.TypeString(),
                       "; cast it first");
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Conv2d(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x_or, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  bool batched = true;
  ASSIGN_OR_RETURN(Tensor x, As4D(x_or, batched));
  RETURN_IF_ERROR(RequireFloat(x, "input"));
  RETURN_IF_ERROR(SameDType(x, w, "input", "weight"));
  auto stride = Pair(ctx, "stride", 1);
  if (!stride.ok()) return stride.status();
  auto padding = Pair(ctx, "padding", 0);
  if (!padding.ok()) return padding.status();
  auto dilation = Pair(ctx, "dilation", 1);
  if (!dilation.ok()) return dilation.status();
  const int64_t groups = ctx.call().Int("groups");
  const int64_t batch = x.dims()[0], c = x.dims()[1], h = x.dims()[2],
                wd = x.dims()[3];
  if (w.rank() != 4) {
    return KernelError("weight must be 4-D [out, in/groups, kh, kw], got ",
                       w.TypeString());
  }
  const int64_t oc = w.dims()[0], cg = w.dims()[1], kh = w.dims()[2],
                kw = w.dims()[3];
  if (groups < 1 || c % groups != 0 || oc % groups != 0 || cg != c / groups) {
    return KernelError("input ", x_or.TypeString(), " and weight ",
                       w.TypeString(), " do not agree for groups=", groups,
                       " (need in channels = groups * weight.size(1) and out "
                       "channels divisible by groups)");
  }
  if (bias) {
    RETURN_IF_ERROR(SameDType(x, *bias, "input", "bias"));
    if (bias->rank() != 1 || bias->dims()[0] != oc) {
      return KernelError("bias must be [", oc, "], got ", bias->TypeString());
    }
  }
  const auto [sh, sw] = *stride;
  const auto [ph, pw] = *padding;
  const auto [dh, dw] = *dilation;
  const int64_t eff_h = h + 2 * ph - dh * (kh - 1) - 1;
  const int64_t eff_w = wd + 2 * pw - dw * (kw - 1) - 1;
  if (kh < 1 || kw < 1 || eff_h < 0 || eff_w < 0) {
    return KernelError("kernel ", kh, "x", kw, " (dilation ", dh, "x", dw,
                       ") is larger than the padded input ", h + 2 * ph, "x",
                       wd + 2 * pw);
  }
  const int64_t oh = eff_h / sh + 1, ow = eff_w / sw + 1;
  const DType compute = x.dtype() == DType::kF64 ? DType::kF64 : DType::kF32;
  ASSIGN_OR_RETURN(Tensor out, NewTensor(compute, {batch, oc, oh, ow}));
  Tensor xc = CastTensor(x, compute), wc = CastTensor(w, compute);
  const int64_t ocg = oc / groups, kc = cg * kh * kw, p = oh * ow;
  WithProductType(compute, [&](auto zero) {
    using T = decltype(zero);
    // im2col: column matrix [cg*kh*kw, oh*ow] of one image and group, so
    // the convolution is the product weight_g [ocg, kc] * col [kc, p].
    std::vector<T> col(static_cast<size_t>(kc * p));
    for (int64_t ni = 0; ni < batch; ++ni) {
      for (int64_t g = 0; g < groups; ++g) {
        const T* img = xc.data<T>() + (ni * c + g * cg) * h * wd;
        for (int64_t ci = 0; ci < cg; ++ci) {
          for (int64_t ki = 0; ki < kh; ++ki) {
            for (int64_t kj = 0; kj < kw; ++kj) {
              T* col_row = col.data() + ((ci * kh + ki) * kw + kj) * p;
              for (int64_t y = 0; y < oh; ++y) {
                const int64_t iy = y * sh - ph + ki * dh;
                for (int64_t xx = 0; xx < ow; ++xx) {
                  const int64_t ix = xx * sw - pw + kj * dw;
                  const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < wd;
                  col_row[y * ow + xx] =
                      inside ? img[(ci * h + iy) * wd + ix] : T{0};
                }
              }
            }
          }
        }
        T* dst = out.data<T>() + (ni * oc + g * ocg) * p;
        GemmNN<T>(ocg, p, kc, wc.data<T>() + g * ocg * kc, kc, col.data(), p,
                  dst, p);
      }
    }
    if (bias) {
      Tensor bc = CastTensor(*bias, compute);
      for (int64_t ni = 0; ni < batch; ++ni) {
        for (int64_t o = 0; o < oc; ++o) {
          T* dst = out.data<T>() + (ni * oc + o) * p;
          for (int64_t i = 0; i < p; ++i) dst[i] += bc.data<T>()[o];
        }
      }
    }
  });
  return Value(From4D(CastTensor(out, x.dtype()), batched));
}

// PyTorch's pooling_output_shape.
int64_t PoolOutputSize(int64_t in, int64_t k, int64_t pad, int64_t stride,
                       int64_t dilation, bool ceil_mode) {
  int64_t num =
      in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (num may be negative).
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// The parameters of a 2-D pooling window.
struct PoolParams {
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  int64_t oh = 0, ow = 0;
};

absl::StatusOr<PoolParams> ReadPool(const KernelContext& ctx, const Tensor& x,
                                    bool has_dilation) {
  PoolParams pp;
  auto kernel = Pair(ctx, "kernel_size", 1);
  if (!kernel.ok()) return kernel.status();
  pp.kernel = *kernel;
  if (ctx.call().IsNone("stride") || ctx.call().Ints("stride").empty()) {
    pp.stride = pp.kernel;
  } else {
    auto stride = Pair(ctx, "stride", 1);
    if (!stride.ok()) return stride.status();
    pp.stride = *stride;
  }
  auto padding = Pair(ctx, "padding", 0);
  if (!padding.ok()) return padding.status();
  pp.padding = *padding;
  pp.dilation = {1, 1};
  if (has_dilation) {
    auto dilation = Pair(ctx, "dilation", 1);
    if (!dilation.ok()) return dilation.status();
    pp.dilation = *dilation;
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t effective = (pp.kernel[i] - 1) * pp.dilation[i] + 1;
    if (pp.padding[i] > effective / 2) {
      return KernelError("padding ", pp.padding[i],
                         " must be at most half of the kernel size ",
                         effective);
    }
  }
  const bool ceil_mode = ctx.call().Bool("ceil_mode");
  pp.oh = PoolOutputSize(x.dims()[2], pp.kernel[0], pp.padding[0], pp.stride[0],
                         pp.dilation[0], ceil_mode);
  pp.ow = PoolOutputSize(x.dims()[3], pp.kernel[1], pp.padding[1], pp.stride[1],
                         pp.dilation[1], ceil_mode);
  if (pp.oh < 1 || pp.ow < 1) {
    return KernelError("input ", x.TypeString(), " is too small for kernel ",
                       pp.kernel[0], "x", pp.kernel[1], ": output would be ",
                       pp.oh, "x", pp.ow);
  }
  return pp;
}

absl::StatusOr<Value> MaxPool2d(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x_or, ctx.Input("input"));
  bool batched = true;
  ASSIGN_OR_RETURN(Tensor x, As4D(x_or, batched));
  if (x.dtype() == DType::kBool) {
    return KernelError("is not defined for bool tensors");
  }
  absl::StatusOr<PoolParams> pp = ReadPool(ctx, x, true);
  if (!pp.ok()) return pp.status();
  const int64_t planes = x.dims()[0] * x.dims()[1], h = x.dims()[2],
                w = x.dims()[3];
  Tensor out(x.dtype(), {x.dims()[0], x.dims()[1], pp->oh, pp->ow});
  DispatchDType(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    using C = typename Tr::Compute;
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      for (int64_t y = 0; y < pp->oh; ++y) {
        for (int64_t xx = 0; xx < pp->ow; ++xx) {
          bool found = false;
          C best{};
          for (int64_t ki = 0; ki < pp->kernel[0]; ++ki) {
            const int64_t iy =
                y * pp->stride[0] - pp->padding[0] + ki * pp->dilation[0];
            if (iy < 0 || iy >= h) continue;
            for (int64_t kj = 0; kj < pp->kernel[1]; ++kj) {
              const int64_t ix =
                  xx * pp->stride[1] - pp->padding[1] + kj * pp->dilation[1];
              if (ix < 0 || ix >= w) continue;
              C v = Tr::Load(in[(pl * h + iy) * w + ix]);
              bool nan_v = false, nan_best = false;
              if constexpr (std::is_floating_point_v<C>) {
                nan_v = std::isnan(v);
                nan_best = found && std::isnan(best);
              }
              if (!found || (!nan_best && (v > best || nan_v))) best = v;
              found = true;
            }
          }
          o[(pl * pp->oh + y) * pp->ow + xx] = Tr::From(best);
        }
      }
    }
  });
  return Value(From4D(out, batched));
}

absl::StatusOr<Value> AvgPool2d(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x_or, ctx.Input("input"));
  bool batched = true;
  ASSIGN_OR_RETURN(Tensor x, As4D(x_or, batched));
  RETURN_IF_ERROR(RequireFloat(x, "input"));
  absl::StatusOr<PoolParams> pp = ReadPool(ctx, x, false);
  if (!pp.ok()) return pp.status();
  const bool count_include_pad = ctx.call().Bool("count_include_pad");
  const int64_t planes = x.dims()[0] * x.dims()[1], h = x.dims()[2],
                w = x.dims()[3];
  Tensor out(x.dtype(), {x.dims()[0], x.dims()[1], pp->oh, pp->ow});
  DispatchFloat(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      for (int64_t y = 0; y < pp->oh; ++y) {
        for (int64_t xx = 0; xx < pp->ow; ++xx) {
          // PyTorch's window: clipped to the padded input for the divisor
          // with padding, and to the input itself for the sum.
          int64_t y0 = y * pp->stride[0] - pp->padding[0];
          int64_t x0 = xx * pp->stride[1] - pp->padding[1];
          int64_t y1 = std::min(y0 + pp->kernel[0], h + pp->padding[0]);
          int64_t x1 = std::min(x0 + pp->kernel[1], w + pp->padding[1]);
          const int64_t padded_count = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0);
          x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, h);
          x1 = std::min(x1, w);
          double sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              sum += Tr::Load(in[(pl * h + iy) * w + ix]);
            }
          }
          const int64_t count =
              count_include_pad ? padded_count : (y1 - y0) * (x1 - x0);
          o[(pl * pp->oh + y) * pp->ow + xx] =
              Tr::From(sum / static_cast<double>(count));
        }
      }
    }
  });
  return Value(From4D(out, batched));
}

absl::StatusOr<Value> AdaptiveAvgPool2d(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x_or, ctx.Input("input"));
  bool batched = true;
  ASSIGN_OR_RETURN(Tensor x, As4D(x_or, batched));
  RETURN_IF_ERROR(RequireFloat(x, "input"));
  auto size = Pair(ctx, "output_size", 0);
  if (!size.ok()) return size.status();
  const int64_t planes = x.dims()[0] * x.dims()[1], h = x.dims()[2],
                w = x.dims()[3], oh = (*size)[0], ow = (*size)[1];
  if ((h == 0 && oh > 0) || (w == 0 && ow > 0)) {
    return KernelError("cannot pool an empty ", x.TypeString(), " to ", oh, "x",
                       ow);
  }
  Tensor out(x.dtype(), {x.dims()[0], x.dims()[1], oh, ow});
  DispatchFloat(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      for (int64_t y = 0; y < oh; ++y) {
        // Window [floor(y*h/oh), ceil((y+1)*h/oh)).
        const int64_t y0 = y * h / oh, y1 = ((y + 1) * h + oh - 1) / oh;
        for (int64_t xx = 0; xx < ow; ++xx) {
          const int64_t x0 = xx * w / ow, x1 = ((xx + 1) * w + ow - 1) / ow;
          double sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              sum += Tr::Load(in[(pl * h + iy) * w + ix]);
            }
          }
          o[(pl * oh + y) * ow + xx] =
              Tr::From(sum / static_cast<double>((y1 - y0) * (x1 - x0)));
        }
      }
    }
  });
  return Value(From4D(out, batched));
}

absl::StatusOr<Value> Softmax(const KernelContext& ctx, bool log) {
  ASSIGN_OR_RETURN(Tensor x_or, ctx.Input("input"));
  RETURN_IF_ERROR(RequireFloat(x_or, "input"));
  const Tensor& x = x_or;
  absl::StatusOr<int64_t> dim = NormalizeDim(ctx.call().Int("dim"), x.rank());
  if (!dim.ok()) return dim.status();
  int64_t outer = 1, len = 1, inner = 1;
  if (x.rank() > 0) {
    for (int64_t i = 0; i < *dim; ++i) outer *= x.dims()[i];
    len = x.dims()[*dim];
    for (int64_t i = *dim + 1; i < x.rank(); ++i) inner *= x.dims()[i];
  }
  Tensor out(x.dtype(), x.dims());
  DispatchFloat(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    std::vector<double> row(len);
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t base = a * len * inner + c;
        double max = -INFINITY;
        for (int64_t i = 0; i < len; ++i) {
          row[i] = Tr::Load(in[base + i * inner]);
          max = std::max(max, row[i]);
        }
        if (std::isinf(max) && max < 0) max = 0;  // All -inf: avoid NaN shift.
        double sum = 0;
        for (int64_t i = 0; i < len; ++i) sum += std::exp(row[i] - max);
        for (int64_t i = 0; i < len; ++i) {
          const double v =
              log ? row[i] - max - std::log(sum) : std::exp(row[i] - max) / sum;
          o[base + i * inner] = Tr::From(v);
        }
      }
    }
  });
  return Value(out);
}

absl::StatusOr<Value> LayerNorm(const KernelContext& ctx) {
  absl::StatusOr<Tensor> x = ctx.Input("input");
  if (!x.ok()) return x.status();
  RETURN_IF_ERROR(RequireFloat(*x, "input"));
  std::vector<int64_t> norm = ctx.call().Ints("normalized_shape");
  ASSIGN_OR_RETURN(std::optional<Tensor> weight, ctx.OptionalInput("weight"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  if (norm.empty()) {
    return KernelError("normalized_shape must have at least one dim");
  }
  const int64_t rank = x->rank(), nr = static_cast<int64_t>(norm.size());
  bool match = nr <= rank;
  for (int64_t i = 0; match && i < nr; ++i) {
    match = x->dims()[rank - nr + i] == norm[i];
  }
  if (!match) {
    return KernelError("normalized_shape ", DimsString(norm),
                       " does not match the trailing dims of input ",
                       x->TypeString());
  }
  for (const auto* p : {&weight, &bias}) {
    if (*p && (*p)->dims() != norm) {
      return KernelError("weight and bias must have shape ", DimsString(norm),
                         ", got ", (*p)->TypeString());
    }
  }
  int64_t n = 1;
  for (int64_t d : norm) n *= d;
  const int64_t rows = n == 0 ? 0 : x->NumElements() / n;
  const double eps = ctx.call().Float("eps");
  std::vector<double> w =
      weight ? weight->ToDoubles() : std::vector<double>(n, 1.0);
  std::vector<double> b =
      bias ? bias->ToDoubles() : std::vector<double>(n, 0.0);
  Tensor out(x->dtype(), x->dims());
  DispatchFloat(x->dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x->data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t r = 0; r < rows; ++r) {
      const auto* row = in + r * n;
      double mean = 0;
      for (int64_t i = 0; i < n; ++i) mean += Tr::Load(row[i]);
      mean /= static_cast<double>(n);
      double var = 0;  // Biased, as layer_norm uses.
      for (int64_t i = 0; i < n; ++i) {
        const double d = Tr::Load(row[i]) - mean;
        var += d * d;
      }
      var /= static_cast<double>(n);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < n; ++i) {
        o[r * n + i] = Tr::From((Tr::Load(row[i]) - mean) * inv * w[i] + b[i]);
      }
    }
  });
  return Value(out);
}

absl::StatusOr<Value> BatchNorm(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  RETURN_IF_ERROR(RequireFloat(x, "input"));
  if (x.rank() < 2) {
    return KernelError("input must have at least 2 dims [N, C, ...], got ",
                       x.TypeString());
  }
  const int64_t c = x.dims()[1];
  std::vector<std::vector<double>> params;  // mean, var, weight, bias.
  for (const char* name : {"running_mean", "running_var", "weight", "bias"}) {
    ASSIGN_OR_RETURN(std::optional<Tensor> t, ctx.OptionalInput(name));
    if (!t) {
      params.push_back(std::vector<double>(
          c, absl::string_view(name) == "weight" ? 1.0 : 0.0));
      continue;
    }
    if (t->rank() != 1 || t->dims()[0] != c) {
      return KernelError(name, " must be [", c, "] (the channels of input ",
                         x.TypeString(), "), got ", t->TypeString());
    }
    params.push_back(t->ToDoubles());
  }
  const double eps = ctx.call().Float("eps");
  int64_t inner = 1;
  for (int64_t i = 2; i < x.rank(); ++i) inner *= x.dims()[i];
  const int64_t batch = x.dims()[0];
  Tensor out(x.dtype(), x.dims());
  DispatchFloat(x.dtype(), [&](auto tr) {
    using Tr = decltype(tr);
    const auto* in = x.data<typename Tr::Storage>();
    auto* o = out.data<typename Tr::Storage>();
    for (int64_t ch = 0; ch < c; ++ch) {
      const double scale = params[2][ch] / std::sqrt(params[1][ch] + eps);
      for (int64_t ni = 0; ni < batch; ++ni) {
        const int64_t base = (ni * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          o[base + i] = Tr::From(
              (Tr::Load(in[base + i]) - params[0][ch]) * scale + params[3][ch]);
        }
      }
    }
  });
  return Value(out);
}

}  // namespace

void RegisterNnKernels(KernelTable& t) {
  t.Add("matmul", Matmul);
  t.Add("linear", Linear);
  t.Add("conv2d", Conv2d);
  t.Add("max_pool2d", MaxPool2d);
  t.Add("avg_pool2d", AvgPool2d);
  t.Add("adaptive_avg_pool2d", AdaptiveAvgPool2d);
  t.Add("softmax",
        [](const KernelContext& ctx) { return Softmax(ctx, false); });
  t.Add("log_softmax",
        [](const KernelContext& ctx) { return Softmax(ctx, true); });
  t.Add("layer_norm", LayerNorm);
  t.Add("batch_norm", BatchNorm);
}

}  // namespace graft::interp
