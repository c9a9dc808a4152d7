#include "backends/cuda/implicit_conv.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_emitter.h"
#include "graph/op_registry.h"

namespace graft::cuda {
namespace {


// Whether the step's operand `node` (or result, for nullptr) is an arena
// value at an offset that is a multiple of `align` bytes.
bool ArenaAligned(const Step& step, const Node* node, size_t align) {
  const BufferRef* ref = &step.result;
  if (node != nullptr) {
    auto it = std::find(step.inputs.begin(), step.inputs.end(), node);
    if (it == step.inputs.end() || step.operands.size() != step.inputs.size()) return false;
    ref = &step.operands[it - step.inputs.begin()];
  }
  return ref->where == BufferRef::Where::kArena && ref->offset % align == 0;
}


}  // namespace

std::optional<ImplicitConv> ImplicitConvFor(const Step& step, const StepProgram& program,
                                            const CudaOptions& options, int multiprocessors,
                                            int compute_capability) {
  if (compute_capability < 80 || options.gemm == "cublaslt" || !IsConvGemmStep(step) ||
      step.casts_input || step.result_dtype) {
    return std::nullopt;
  }
  absl::StatusOr<ConvGemm> conv = ConvGemmFor(step, program);
  if (!conv.ok()) return std::nullopt;
  const ConvGemm& c = *conv;
  const bool half = c.gemm.dtype == DType::kBF16 || c.gemm.dtype == DType::kF16;
  const std::string activation = GemmActivation(step);
  if (!half || !c.needs_columns || !c.taps_outer || c.gemm.k % 8 != 0 ||
      (activation != "" && activation != "relu") ||
      (c.gemm.has_bias && c.gemm.bias_dtype != c.gemm.dtype &&
       c.gemm.bias_dtype != DType::kF32)) {
    return std::nullopt;
  }
  // The kernel indexes pixels and input rows in 32 bits.
  constexpr int64_t kInt = int64_t{1} << 31;
  if (c.gemm.m >= kInt || c.batch * c.height * c.width >= kInt || c.gemm.m * c.gemm.n <= 0) {
    return std::nullopt;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
  if (!call.ok()) return std::nullopt;
  const Node* input = call->TensorNode("input");
  const Node* residual = step.residual >= 0 ? step.inputs[step.residual] : nullptr;
  if (!ArenaAligned(step, input, 16) || !ArenaAligned(step, nullptr, 4) ||
      (residual != nullptr && !ArenaAligned(step, residual, 4))) {
    return std::nullopt;
  }
  ImplicitConv plan{c, activation, residual != nullptr};
  if (c.in_channels % 8 != 0) {
    plan.rows = 64;
    plan.depth = 32;
    plan.stages = 4;
  }
  plan.grid = ((c.gemm.m + plan.rows - 1) / plan.rows) * ((c.gemm.n + plan.columns - 1) / plan.columns);
  const int64_t sms = multiprocessors;
  if (options.gemm != "graft" &&
      (2 * plan.grid < sms || (c.gemm.k > kImplicitConvMaxK && plan.grid < 2 * sms))) {
    return std::nullopt;
  }
  return plan;
}

std::string ImplicitConvKernel(const std::string& name, const ImplicitConv& plan) {
  const ConvGemm& c = plan.conv;
  const std::string t = StorageType(c.gemm.dtype);
  const std::string b = StorageType(c.gemm.has_bias ? c.gemm.bias_dtype : DType::kF32);
  return absl::StrCat(
      "extern \"C\" __global__ void __launch_bounds__(", plan.threads(), ") ", name, "(const ", t,
      "* __restrict__ x, const ", t, "* __restrict__ w, const ", b, "* __restrict__ bias, const ",
      t, "* __restrict__ residual, ", t, "* __restrict__ y) {\n  using tile = g_iconv::tile<",
      plan.rows, ", ", plan.columns, ", ", plan.depth, ", ", plan.stages, ", ", plan.warps_m, ", ",
      plan.warps_n, ">;\n  extern __shared__ __align__(128) unsigned char shared[];\n"
      "  g_iconv::conv<tile, ", t, ", ", b,
      ", ", c.gemm.has_bias ? "true" : "false", ", ", plan.residual ? "true" : "false", ", ",
      plan.activation == "relu" ? "true" : "false", ", ", c.batch, ", ", c.height, ", ", c.width,
      ", ", c.in_channels, ", ", c.out_height, ", ", c.out_width, ", ", c.gemm.n, ", ", c.kernel_h,
      ", ", c.kernel_w, ", ", c.stride_h, ", ", c.stride_w, ", ", c.pad_h, ", ", c.pad_w, ", ",
      c.dilation_h, ", ", c.dilation_w, ", ", c.gemm.k, ">(x, w, bias, residual, y, (", t, "*)shared);\n}\n");
}

}  // namespace graft::cuda
