#include "backends/cuda/skinny_gemm.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_emitter.h"
#include "graph/op_registry.h"

namespace graft::cuda {
namespace {

constexpr int kThreads = 128;     // g_skinny::kWarps warps.
constexpr int64_t kTileRows = 64;
// Blocks per multiprocessor the split aims at: about what fits at once.
constexpr int64_t kBlocksPerSm = 4;

const char* StorageName(DType t) {
  switch (t) {
    case DType::kF16: return "g_half";
    case DType::kBF16: return "g_bfloat";
    default: return "float";
  }
}

int ActivationCode(const std::string& activation) {
  if (activation == "relu") return 1;
  if (activation == "gelu") return 2;
  if (activation == "gelu_tanh") return 3;
  return 0;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

size_t SkinnyGemm::ScratchBytes() const {
  if (splits <= 1) return 0;
  const int64_t row_blocks = CeilDiv(shape.m, 8);
  return static_cast<size_t>(tiles * splits * row_blocks * kThreads * 4) * sizeof(float);
}

std::optional<SkinnyGemm> SkinnyGemmFor(const Step& step, const CudaOptions& options,
                                        int multiprocessors, int compute_capability) {
  if (options.gemm == "cublaslt" || !IsGemmStep(step) || compute_capability < 80) {
    return std::nullopt;
  }
  if (!step.node->is_call("linear") && !step.node->is_call("graft::linear_activation")) {
    return std::nullopt;
  }
  absl::StatusOr<GemmShape> shape = GemmShapeOf(*step.node);
  if (!shape.ok() || !shape->b_is_nk || shape->batch != 1 || shape->m < 1 ||
      shape->m > kSkinnyMaxRows || shape->n < 1) {
    return std::nullopt;
  }
  SkinnyGemm plan;
  plan.shape = *shape;
  plan.activation = GemmActivation(step);
  if (!plan.activation.empty() && plan.activation != "relu" && plan.activation != "gelu" &&
      plan.activation != "gelu_tanh") {
    return std::nullopt;
  }
  switch (shape->dtype) {
    case DType::kBF16: plan.mode = 0; break;
    case DType::kF16: plan.mode = 1; break;
    case DType::kF32: plan.mode = options.precision == "tf32" ? 2 : 3; break;
    default: return std::nullopt;
  }
  // By default only where it measured faster than cuBLASLt on an H100
  // (docs/benchmarks.md): f32, whose cuBLASLt kernels do not use the
  // tensor cores, and bf16/f16 weights of at most 16 MB (a larger one
  // streams faster through cuBLASLt's kernels than through this one).
  if (options.gemm == "auto") {
    const int64_t weight_bytes = shape->n * shape->k * DTypeSize(shape->dtype);
    if (plan.mode == 2 || (plan.mode < 2 && weight_bytes > kSkinnyAutoMaxHalfWeightBytes)) {
      return std::nullopt;
    }
  }
  const int64_t vec = 16 / static_cast<int64_t>(DTypeSize(shape->dtype));
  // 32-bit index arithmetic in the kernel.
  if (shape->k % vec != 0 || shape->n * shape->k >= (int64_t{1} << 31) ||
      shape->m * shape->n >= (int64_t{1} << 31) || shape->m * shape->k >= (int64_t{1} << 31)) {
    return std::nullopt;
  }
  // The step's operands: input, weight (bias).
  absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
  if (!call.ok()) return std::nullopt;
  const Node* weight = call->TensorNode("weight");
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] == weight) {
      plan.weights_ready = step.operands[i].where == BufferRef::Where::kState;
    }
  }
  plan.tiles = CeilDiv(shape->n, kTileRows);
  if (plan.tiles > kSkinnyCounters) return std::nullopt;
  // Enough blocks to fill the GPU, but chunks of at least 512 bytes a row
  // (fewer, longer chunks stream better and leave less to add up).
  const int64_t granule = 512 / static_cast<int64_t>(DTypeSize(shape->dtype));
  const int64_t wanted = std::max<int64_t>(1, CeilDiv(kBlocksPerSm * multiprocessors, plan.tiles));
  plan.chunk = CeilDiv(CeilDiv(shape->k, wanted), granule) * granule;
  plan.splits = CeilDiv(shape->k, plan.chunk);
  while (plan.splits > 1 && plan.ScratchBytes() > kGemmWorkspaceBytes) {
    plan.chunk *= 2;
    plan.splits = CeilDiv(shape->k, plan.chunk);
  }
  return plan;
}

std::string SkinnyGemmKernel(const std::string& name, const SkinnyGemm& plan) {
  const GemmShape& s = plan.shape;
  const char* t = StorageName(s.dtype);
  const char* b = StorageName(s.has_bias ? s.bias_dtype : DType::kF32);
  return absl::StrCat(
      "extern \"C\" __global__ void __launch_bounds__(", kThreads, ", ", kBlocksPerSm, ") ",
      name, "(const ", t, "* __restrict__ x, const ", t, "* __restrict__ w, const ", b,
      "* __restrict__ bias, ", t,
      "* __restrict__ y, float* __restrict__ partial, int* __restrict__ counters) {\n"
      "  g_skinny::gemm<",
      t, ", ", b, ", ", plan.mode, ", ", ActivationCode(plan.activation), ", ",
      s.has_bias ? "true" : "false", ", ", plan.weights_ready ? "true" : "false", ", ", s.m, ", ",
      s.n, ", ", s.k, ", ", plan.splits, ", ", plan.chunk,
      ">(x, w, bias, y, partial, counters);\n}\n");
}

}  // namespace graft::cuda
