// Kernels for the fused ops made by passes (docs/ops.md, "Fused ops").

#include "backends/interp/kernels_fused.h"

#include <cmath>
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

}  // namespace

void RegisterFusedKernels(KernelTable& table) {
  table.Add("graft::linear_activation", LinearActivation);
}

}  // namespace graft::interp
