// Kernels for the fused ops made by passes (docs/ops.md, "Fused ops").

#include "backends/interp/kernels_fused.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/interp/gemm.h"
#include "backends/interp/kernel_util.h"
#include "support/status_macros.h"

namespace graft::interp {
namespace {

double Activate(const std::string& activation, double v) {
  // NaN stays NaN, as in the relu op (torch.relu).
  if (activation == "relu") return std::isnan(v) ? v : (v > 0 ? v : 0.0);
  if (activation == "gelu") return 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2));
  // gelu_tanh.
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

// activation(input @ W^T + bias), computed in double and rounded once.
absl::StatusOr<Value> LinearActivation(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor x, ctx.Input("input"));
  ASSIGN_OR_RETURN(Tensor w, ctx.Input("weight"));
  ASSIGN_OR_RETURN(std::optional<Tensor> bias, ctx.OptionalInput("bias"));
  const std::string& activation = ctx.call().String("activation");
  const std::string& layout = ctx.call().String("weight_layout");
  if (activation != "relu" && activation != "gelu" &&
      activation != "gelu_tanh") {
    return KernelError("unknown activation \"", activation, "\"");
  }
  if (layout != "out_in" && layout != "in_out") {
    return KernelError("unknown weight_layout \"", layout, "\"");
  }
  if (!IsFloatingPoint(x.dtype()) || w.dtype() != x.dtype()) {
    return KernelError(
        "input and weight must share a floating-point dtype, got ",
        x.TypeString(), " and ", w.TypeString());
  }
  if (w.rank() != 2 || x.rank() == 0) {
    return KernelError("needs a 2-D weight and an input with dims, got ",
                       w.TypeString(), " and ", x.TypeString());
  }
  const bool out_in = layout == "out_in";
  const int64_t k = w.dim(out_in ? 1 : 0);
  const int64_t n = w.dim(out_in ? 0 : 1);
  if (x.dims().back() != k) {
    return KernelError("input ", x.TypeString(), " does not match weight ",
                       w.TypeString(), " (", layout, "): the last dim must be ",
                       k);
  }
  if (bias &&
      (bias->dtype() != x.dtype() || bias->rank() != 1 || bias->dim(0) != n)) {
    return KernelError("bias must be ", DTypeName(x.dtype()), "[", n, "], got ",
                       bias->TypeString());
  }
  std::vector<int64_t> out_dims = x.dims();
  out_dims.back() = n;
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.rank(); ++i) rows *= x.dim(static_cast<int>(i));
  ASSIGN_OR_RETURN(Tensor acc, NewTensor(DType::kF64, out_dims));
  Tensor xd = CastTensor(x, DType::kF64), wd = CastTensor(w, DType::kF64);
  double* po = acc.data<double>();
  if (out_in) {
    GemmNT<double>(rows, n, k, xd.data<double>(), k, wd.data<double>(), k, po,
                   n);
  } else {
    GemmNN<double>(rows, n, k, xd.data<double>(), k, wd.data<double>(), n, po,
                   n);
  }
  std::vector<double> b =
      bias ? bias->ToDoubles()
           : std::vector<double>(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      po[i * n + j] = Activate(activation, po[i * n + j] + b[j]);
    }
  }
  return Value(CastTensor(acc, x.dtype()));
}

// softmax(where(mask, masked_value, q k^T * scale)) v per matrix of the
// leading dims (keys after the query at -inf when causal), in double,
// rounded once. A row whose scores are all -inf
// is NaN (0 / 0), as softmax makes it.
absl::StatusOr<Value> Attention(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(Tensor q, ctx.Input("query"));
  ASSIGN_OR_RETURN(Tensor k, ctx.Input("key"));
  ASSIGN_OR_RETURN(Tensor v, ctx.Input("value"));
  ASSIGN_OR_RETURN(std::optional<Tensor> mask, ctx.OptionalInput("mask"));
  const double scale = ctx.call().Float("scale");
  const double masked_value = ctx.call().Float("masked_value");
  const bool causal = ctx.call().Bool("causal");
  const int r = static_cast<int>(q.rank());
  if (r < 2 || k.rank() != q.rank() || v.rank() != q.rank() || !IsFloatingPoint(q.dtype()) ||
      k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
    return KernelError("query, key and value must share a floating-point dtype and a rank of "
                       "at least 2, got ", q.TypeString(), ", ", k.TypeString(), " and ",
                       v.TypeString());
  }
  const int64_t t = q.dim(r - 2), d = q.dim(r - 1), s = k.dim(r - 2), dv = v.dim(r - 1);
  std::vector<int64_t> lead(q.dims().begin(), q.dims().end() - 2);
  if (std::vector<int64_t>(k.dims().begin(), k.dims().end() - 2) != lead ||
      std::vector<int64_t>(v.dims().begin(), v.dims().end() - 2) != lead || k.dim(r - 1) != d ||
      v.dim(r - 2) != s) {
    return KernelError("query [..., T, D], key [..., S, D] and value [..., S, Dv] do not fit: ",
                       q.TypeString(), ", ", k.TypeString(), " and ", v.TypeString());
  }
  std::vector<int64_t> scores = lead;
  scores.push_back(t);
  scores.push_back(s);
  std::vector<int64_t> mask_strides;
  if (mask) {
    if (mask->dtype() != DType::kBool) return KernelError("mask must be bool, got ", mask->TypeString());
    ASSIGN_OR_RETURN(std::vector<int64_t> b, BroadcastDims(mask->dims(), scores));
    if (b != scores) {
      return KernelError("mask ", mask->TypeString(), " does not broadcast to the scores' ",
                         DimsString(scores));
    }
    mask_strides = BroadcastStrides(mask->dims(), scores);
  }
  std::vector<int64_t> out_dims = lead;
  out_dims.push_back(t);
  out_dims.push_back(dv);
  ASSIGN_OR_RETURN(Tensor out, NewTensor(DType::kF64, out_dims));
  const std::vector<double> qd = q.ToDoubles(), kd = k.ToDoubles(), vd = v.ToDoubles();
  const std::vector<double> md = mask ? mask->ToDoubles() : std::vector<double>();
  double* po = out.data<double>();
  int64_t batches = 1;
  for (int64_t n : lead) batches *= n;
  std::vector<double> p(static_cast<size_t>(s));
  for (int64_t b = 0; b < batches; ++b) {
    int64_t mask_base = 0;
    for (int64_t i = static_cast<int64_t>(lead.size()) - 1, rest = b; mask && i >= 0; --i) {
      mask_base += rest % lead[i] * mask_strides[i];
      rest /= lead[i];
    }
    for (int64_t i = 0; i < t; ++i) {
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < s; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += qd[(b * t + i) * d + e] * kd[(b * s + j) * d + e];
        p[j] = dot * scale;
        if (mask && md[mask_base + i * mask_strides[r - 2] + j * mask_strides[r - 1]] != 0) {
          p[j] = masked_value;
        }
        if (causal && j > i) p[j] = -std::numeric_limits<double>::infinity();
        nan |= std::isnan(p[j]);
        m = std::max(m, p[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < s; ++j) sum += p[j] = std::exp(p[j] - m);
      for (int64_t e = 0; e < dv; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < s; ++j) acc += p[j] * vd[(b * s + j) * dv + e];
        po[(b * t + i) * dv + e] = nan ? std::nan("") : acc / sum;
      }
    }
  }
  return Value(CastTensor(out, q.dtype()));
}

}  // namespace

void RegisterFusedKernels(KernelTable& table) {
  table.Add("graft::linear_activation", LinearActivation);
  table.Add("graft::attention", Attention);
}

}  // namespace graft::interp
