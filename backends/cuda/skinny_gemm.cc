#include "backends/cuda/skinny_gemm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_emitter.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

constexpr int kThreads = 128;     // 4 warps, the kernel's kWarps.
// (2^31 - 1) / (255 * 128): the most terms an int8 product's int32 sums hold.
constexpr int64_t kMaxInt8ProductTerms = 65793;
constexpr int64_t kTileRows = 64;

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

static_assert(kGemmWorkspaceBytes == (size_t{32} << 20) && kSkinnyRowScaleBytes == 512,
              "skinny_gemm_source.h's kRowScaleOffset puts x's row scales in the last 512 bytes");

size_t SkinnyGemm::ScratchBytes() const {
  if (splits <= 1) return 0;
  const int64_t row_blocks = CeilDiv(tile_rows, 8);
  return static_cast<size_t>(tiles * splits * row_tiles * row_blocks * kThreads * 4) *
         sizeof(float);
}

size_t SkinnyGemm::HalfInputBytes() const {
  if (mode != 5) return 0;
  return static_cast<size_t>(CeilDiv(shape.m * shape.k * 2, 256) * 256);
}

size_t SkinnyGemm::HalfInputOffset() const {
  return kGemmWorkspaceBytes - kSkinnyRowScaleBytes - HalfInputBytes();
}

namespace {

// The state slot of the step's weight where it is a module tensor (which
// nothing in the run writes: SkinnyGemm::weights_ready).
std::optional<int> WeightSlot(const Step& step, const OpCall& call) {
  const Node* weight = call.TensorNode("weight");
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] == weight && step.operands[i].where == BufferRef::Where::kState) {
      return step.operands[i].index;
    }
  }
  return std::nullopt;
}

// Tiles of 64 weight rows, and K split so that the blocks fill the GPU,
// in chunks of at least 512 bytes a row (fewer, longer chunks stream
// better and leave less to add up).
void LayOut(SkinnyGemm& plan, int multiprocessors) {
  const GemmShape& shape = plan.shape;
  plan.tile_rows = std::min(shape.m, kSkinnyMaxRows);
  plan.row_tiles = CeilDiv(shape.m, plan.tile_rows);
  plan.tiles = CeilDiv(shape.n, kTileRows);
  const int64_t granule = 512 / static_cast<int64_t>(DTypeSize(shape.dtype));
  const int64_t wanted = std::max<int64_t>(
      1, CeilDiv(plan.blocks_per_sm * multiprocessors, plan.tiles * plan.row_tiles));
  plan.chunk = CeilDiv(CeilDiv(shape.k, wanted), granule) * granule;
  // A block's rows of x over its chunk are staged in shared memory where
  // they fit (kShareX in skinny_gemm_source.h: 40 KB, each row padded by
  // 64 bytes); else every warp reads them from L2 in its loop, as many
  // loads again as the weights'. Where K is split anyway, a shorter chunk
  // (more splits) keeps them staged (the f32 and tf32 MLP's 4096 x 4096
  // layer, docs/benchmarks.md). A product whose tiles alone fill the GPU
  // keeps K whole.
  const int64_t size = static_cast<int64_t>(DTypeSize(shape.dtype));
  while (plan.chunk < shape.k && plan.chunk > granule &&
         plan.tile_rows * (plan.chunk + 64 / size) * size > 40 * 1024) {
    plan.chunk = CeilDiv(plan.chunk / 2, granule) * granule;
  }
  plan.splits = CeilDiv(shape.k, plan.chunk);
  while (plan.splits > 1 && plan.ScratchBytes() > plan.HalfInputOffset()) {
    plan.chunk *= 2;
    plan.splits = CeilDiv(shape.k, plan.chunk);
  }
}

// The int8 product's shape and constants, or why graft's kernel cannot
// run it (FailedPrecondition while operand types are unknown).
absl::StatusOr<SkinnyGemm> Int8Plan(const Node& node) {
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  const Node* scales = call.TensorNode("weight_scales");
  const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
  for (const Node* n : {input, weight, scales, bias}) {
    if (n == nullptr) continue;
    if (!n->type().has_value()) return absl::FailedPreconditionError("operand types unknown");
    for (Dim d : n->type()->shape) {
      if (d.is_symbolic()) return absl::FailedPreconditionError("symbolic operand dims");
    }
  }
  const DType in = input->type()->dtype;
  const std::vector<int64_t> x = DimsOf(*input), w = DimsOf(*weight);
  if ((in != DType::kI8 && in != DType::kU8) || weight->type()->dtype != DType::kI8 ||
      w.size() != 2 || x.empty() || x.back() != w[1]) {
    return absl::UnimplementedError(absl::StrCat("an int8 product of ", input->type()->ToString(),
                                                 " by ", weight->type()->ToString()));
  }
  if (scales->type()->dtype != DType::kF32 || Product(DimsOf(*scales), 0, scales->type()->rank()) != w[0] ||
      (bias != nullptr && (bias->type()->dtype != DType::kF32 || bias->type()->rank() != 1 ||
                           DimsOf(*bias)[0] != w[0]))) {
    return absl::UnimplementedError("an int8 product whose scales or bias are not f32, one per output");
  }
  SkinnyGemm plan;
  GemmShape& shape = plan.shape;
  shape.m = Product(x, 0, x.size() - 1);
  shape.n = w[0];
  shape.k = w[1];
  shape.b_is_nk = true;
  shape.dtype = DType::kI8;
  shape.has_bias = bias != nullptr;
  if (shape.m < 1 || shape.n < 1) return absl::UnimplementedError("an empty int8 product");
  // |x - zero point| * |w| is at most 255 * 128: sums of more terms could
  // leave int32.
  if (shape.k > kMaxInt8ProductTerms) {
    return absl::UnimplementedError(absl::StrCat("an int8 product over ", shape.k,
                                                 " inputs (its int32 sums could overflow past ",
                                                 kMaxInt8ProductTerms, ")"));
  }
  if (shape.k % 16 != 0 || shape.k == 0) {
    return absl::UnimplementedError(
        absl::StrCat("an int8 product over ", shape.k, " inputs (graft's kernel takes a multiple of 16)"));
  }
  if (shape.n * shape.k >= (int64_t{1} << 31) || shape.m >= (int64_t{1} << 31) ||
      shape.k >= (int64_t{1} << 24)) {
    return absl::UnimplementedError("an int8 product too large for 32-bit offsets");
  }
  const std::string activation = call.String("activation");
  if (activation != "none" && activation != "relu") {
    return absl::UnimplementedError(absl::StrCat("an int8 product with activation '", activation, "'"));
  }
  plan.activation = activation == "relu" ? "relu" : "";
  plan.mode = 4;
  // Half as many bytes a row as bf16: twice the loads in flight, in two
  // larger blocks a multiprocessor (the benchmark MLP's int8 products,
  // chained: 25.9 us against 31.5 to 32.5 with bf16's layout on an H100,
  // bench/cuda_kernels/skinny_chain.cu).
  plan.unroll = 8;
  plan.blocks_per_sm = 2;
  SkinnyInt8& q = plan.int8;
  q.input_scale = call.Float("input_scale");
  q.unsigned_input = in == DType::kU8;
  q.zero_point = static_cast<int>(call.Int("input_zero_point"));
  q.output = call.GetDType("output_dtype");
  if (q.output != DType::kF32) {
    if (q.output != DType::kI8 && q.output != DType::kU8) {
      return absl::UnimplementedError(
          absl::StrCat("an int8 product with a ", DTypeName(q.output), " result"));
    }
    q.output_scale = call.Float("output_scale");
    q.output_zero_point = static_cast<int>(call.Int("output_zero_point"));
  }
  return plan;
}

// Whether the plan's blocks prefetch their weights (SkinnyGemm::
// prefetch_weights): module weights that fit in the share of L2.
void DecidePrefetch(SkinnyGemm& plan, const CudaOptions& options, int compute_capability) {
  const double weight_bytes =
      static_cast<double>(plan.shape.n) * plan.shape.k * DTypeSize(plan.shape.dtype);
  plan.prefetch_weights = plan.weights_ready && compute_capability >= 90 &&
                          weight_bytes <= kSkinnyPrefetchL2Share * options.l2_cache_bytes;
}

std::optional<SkinnyGemm> Int8PlanFor(const Step& step, int multiprocessors) {
  absl::StatusOr<SkinnyGemm> plan = Int8Plan(*step.node);
  absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
  if (!plan.ok() || !call.ok()) return std::nullopt;
  plan->weights_ready = WeightSlot(step, *call).has_value();
  LayOut(*plan, multiprocessors);
  return *std::move(plan);
}

}  // namespace

absl::Status CanLowerQuantizedLinear(const Node& node) {
  absl::StatusOr<SkinnyGemm> plan = Int8Plan(node);
  // Unknown types are checked again once the program is typed.
  if (!plan.ok() && !absl::IsFailedPrecondition(plan.status())) return plan.status();
  return absl::OkStatus();
}

namespace {

std::optional<int> WeightSlot(const Step& step) {
  absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
  return call.ok() ? WeightSlot(step, *call) : std::nullopt;
}

// The plan of a float linear layer of few rows, before gemm=auto's choice
// and mode 5.
std::optional<SkinnyGemm> FloatPlan(const Step& step, const CudaOptions& options) {
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
  plan.input_dtype = step.casts_input ? step.inputs[0]->type()->dtype : shape->dtype;
  plan.result_dtype = step.result_dtype.value_or(shape->dtype);
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
  // Only bf16 and f16 products read or write f32 in place of their own dtype.
  if ((plan.input_dtype != shape->dtype || plan.result_dtype != shape->dtype) && plan.mode > 1) {
    return std::nullopt;
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
  plan.weights_ready = WeightSlot(step, *call).has_value();
  if (CeilDiv(shape->n, kTileRows) > kSkinnyCounters) return std::nullopt;
  return plan;
}

// Whether the step is a tf32 product mode 5 can run, given its weight: a
// module tensor read as it is (a get_attr of [out, in], not through an
// alias op whose slot holds another shape) and only as the weight, its
// f16 x at most a quarter of the scratch buffer.
bool HalfWeightCandidate(const Step& step, const CudaOptions& options) {
  if (!IsGemmStep(step) || step.residual >= 0) return false;
  std::optional<SkinnyGemm> plan = FloatPlan(step, options);
  if (!plan.has_value() || plan->mode != 2 || !plan->weights_ready || plan->shape.k % 8 != 0 ||
      plan->shape.m * plan->shape.k * 2 > static_cast<int64_t>(kGemmWorkspaceBytes / 4)) {
    return false;
  }
  const OpCall call = *OpCall::Bind(*step.node);
  const Node* weight = call.TensorNode("weight");
  // The same tensor as x or bias would be read as f32 from the converted
  // slot.
  if (call.TensorNode("input") == weight ||
      (!call.IsNone("bias") && call.TensorNode("bias") == weight)) {
    return false;
  }
  return weight->op() == OpCode::kGetAttr && weight->type().has_value() &&
         weight->type()->shape == Shape{Dim(plan->shape.n), Dim(plan->shape.k)};
}

// Whether every step of `program` that reads state slot `slot` reads it as
// the weight of a mode-5 candidate (the slot then holds only the converted
// weights): not as its x or bias too.
bool OnlyHalfWeightReaders(const StepProgram& program, int slot, const CudaOptions& options) {
  for (const Step& other : program.steps) {
    for (size_t i = 0; i < other.operands.size(); ++i) {
      const BufferRef& ref = other.operands[i];
      if (ref.where != BufferRef::Where::kState || ref.index != slot) continue;
      if (!HalfWeightCandidate(other, options) ||
          other.inputs[i] != OpCall::Bind(*other.node)->TensorNode("weight")) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

std::optional<SkinnyGemm> SkinnyGemmFor(const Step& step, const CudaOptions& options,
                                        int multiprocessors, int compute_capability,
                                        const StepProgram* program) {
  if (!IsGemmStep(step) || compute_capability < 80 || step.residual >= 0 ||
      step.node->is_call("conv2d")) {
    return std::nullopt;
  }
  if (step.node->is_call(kQuantizedLinearOp)) {
    std::optional<SkinnyGemm> plan = Int8PlanFor(step, multiprocessors);
    if (plan.has_value()) DecidePrefetch(*plan, options, compute_capability);
    return plan;
  }
  if (options.gemm == "cublaslt") return std::nullopt;
  std::optional<SkinnyGemm> plan = FloatPlan(step, options);
  if (!plan.has_value()) return std::nullopt;
  // tf32 as f16 products of scaled operands: half the weight bytes.
  if (program != nullptr && HalfWeightCandidate(step, options) &&
      OnlyHalfWeightReaders(*program, *WeightSlot(step), options)) {
    plan->mode = 5;
    plan->shape.dtype = DType::kF16;  // The weights' storage and the products'.
  }
  // By default only where it measured faster than cuBLASLt on an H100
  // (docs/benchmarks.md): f32, whose cuBLASLt kernels do not use the
  // tensor cores, tf32 as f16, and bf16/f16 weights of at most 16 MB (a
  // larger one streams faster through cuBLASLt's kernels than through
  // this one).
  if (options.gemm == "auto") {
    const int64_t weight_bytes = plan->shape.n * plan->shape.k * DTypeSize(plan->shape.dtype);
    if (plan->mode == 2 || (plan->mode < 2 && weight_bytes > kSkinnyAutoMaxHalfWeightBytes)) {
      return std::nullopt;
    }
  }
  // bf16/f16: two 16-byte loads a row in each register buffer, not four.
  // Layouts swept on an H200 (docs/benchmarks.md): the benchmark MLP's two
  // 8 MB layers ran 1.5 us faster together, its 32 MB one as fast; f32
  // and tf32 were fastest with four.
  if (plan->mode <= 1 || plan->mode == 5) plan->unroll = 2;
  LayOut(*plan, multiprocessors);
  DecidePrefetch(*plan, options, compute_capability);
  return plan;
}

std::vector<int> HalfWeightSlots(const StepProgram& program, const CudaOptions& options,
                                 int compute_capability) {
  std::vector<int> slots;
  for (const Step& step : program.steps) {
    std::optional<SkinnyGemm> plan = SkinnyGemmFor(step, options, 132, compute_capability, &program);
    if (!plan.has_value() || plan->mode != 5) continue;
    const int slot = *WeightSlot(step);
    if (std::find(slots.begin(), slots.end(), slot) == slots.end()) slots.push_back(slot);
  }
  return slots;
}

Tensor ScaledHalfWeights(const Tensor& weight) {
  const int64_t rows = weight.dims()[0], cols = weight.dims()[1];
  Tensor out = UninitializedTensor(DType::kU8, {rows * cols * 2 + rows * 4});
  uint16_t* halves = reinterpret_cast<uint16_t*>(out.raw_data());
  float* scales = reinterpret_cast<float*>(halves + rows * cols);
  const float* w = weight.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float largest = 0;
    for (int64_t c = 0; c < cols; ++c) {
      if (std::isfinite(row[c])) largest = std::max(largest, std::fabs(row[c]));
    }
    // As the kernel's row_scales: s = 2^(e - 15), kept within f32's
    // normal range.
    int e = 15;
    if (largest > 0) std::frexp(largest, &e);
    e = e - 15 < -126 ? -111 : e;  // frexp of a float gives e <= 128.
    const float scale = std::ldexp(1.0f, e - 15), inverse = std::ldexp(1.0f, 15 - e);
    scales[r] = scale;
    for (int64_t c = 0; c < cols; ++c) halves[r * cols + c] = FloatToHalf(row[c] * inverse);
  }
  return out;
}

bool SkinnyGemmAbsorbsCasts(const Node& call, const CudaOptions& options) {
  // The call as its step before anything is absorbed; the multiprocessor
  // count only lays the product out.
  const Step step{.kind = StepKind::kLibrary, .node = &call};
  const std::optional<SkinnyGemm> plan =
      SkinnyGemmFor(step, options, 132, options.compute_capability);
  return plan.has_value() && plan->mode <= 1;
}

namespace {

// The int8 epilogue's constants as a struct of the kernel's source
// (doubles as exact hexadecimal literals).
std::string Int8Constants(const std::string& name, const SkinnyInt8& q) {
  const auto hex = ExactDoubleLiteral;
  const bool quantized = q.output != DType::kF32;
  return absl::StrCat(
      "struct ", name, " {\n  static constexpr bool unsigned_x = ", q.unsigned_input ? "true" : "false",
      ";\n  static constexpr int zero_point = ", q.zero_point,
      ";\n  static constexpr double input_scale = ", hex(q.input_scale),
      ";\n  static constexpr bool quantized_output = ", quantized ? "true" : "false",
      ";\n  static constexpr double output_scale = ", hex(q.output_scale),
      ", output_reciprocal = ", hex(1.0 / q.output_scale),
      ";\n  static constexpr int output_zero_point = ", q.output_zero_point,
      ", qmin = ", q.output == DType::kU8 ? 0 : -128, ", qmax = ", q.output == DType::kU8 ? 255 : 127,
      ";\n};\n");
}

// The kernel's weight scales: int8's parameter, mode 5's after the f16
// rows of w (ScaledHalfWeights), none for the other modes.
std::string WeightScalesArgument(const SkinnyGemm& plan) {
  if (plan.mode == 4) return "weight_scales";
  if (plan.mode == 5) {
    return absl::StrCat("(const float*)(w + ", plan.shape.n * plan.shape.k, "LL)");
  }
  return "(const float*)0";
}

// The kernel's x: its parameter, or mode 5's f16 rows in the scratch.
std::string XArgument(const SkinnyGemm& plan) {
  if (plan.mode != 5) return "x";
  return absl::StrCat("(const g_half*)((const char*)partial + ", plan.HalfInputOffset(), "LL)");
}

const char* Int8OutputName(DType t) {
  switch (t) {
    case DType::kI8: return "signed char";
    case DType::kU8: return "unsigned char";
    default: return "float";
  }
}

}  // namespace

std::string SkinnyGemmKernel(const std::string& name, const SkinnyGemm& plan) {
  const GemmShape& s = plan.shape;
  const bool int8 = plan.mode == 4;
  const char* t = int8 ? "signed char" : StorageName(s.dtype);
  // Mode 5 reads x as the kernel before left it: f16 rows in the scratch.
  const char* x = int8 || plan.mode == 5 ? t : StorageName(plan.input_dtype);
  const char* y = int8 ? Int8OutputName(plan.int8.output) : StorageName(plan.result_dtype);
  const char* b = StorageName(s.has_bias ? s.bias_dtype : DType::kF32);
  const std::string q = int8 ? absl::StrCat(name, "_q") : "g_skinny::no_quant";
  return absl::StrCat(
      int8 ? Int8Constants(q, plan.int8) : "",
      "extern \"C\" __global__ void __launch_bounds__(", kThreads, ", ", plan.blocks_per_sm, ") ",
      name, "(const ", x, "* __restrict__ x, const ", t, "* __restrict__ w, const ", b,
      "* __restrict__ bias, ", int8 ? "const float* __restrict__ weight_scales, " : "", y,
      "* __restrict__ y, float* __restrict__ partial, int* __restrict__ counters) {\n"
      "  g_skinny::gemm<",
      t, ", ", x, ", ", y, ", ", b, ", ", q, ", ", plan.mode, ", ", ActivationCode(plan.activation), ", ",
      s.has_bias ? "true" : "false", ", ", plan.weights_ready ? "true" : "false", ", 4, ",
      plan.unroll, ", ", plan.tile_rows, ", ", s.m, ", ", s.n, ", ", s.k, ", ", plan.splits, ", ", plan.chunk,
      ", ", plan.prefetch_weights ? "true" : "false", ">(", XArgument(plan), ", w, bias, ",
      WeightScalesArgument(plan), ", y, partial, counters);\n}\n");
}

std::string SkinnyHalfInputKernel(const std::string& name, const SkinnyGemm& plan) {
  // One block of 128 threads a row of x [rows, K] (f32): s = 2^(e - 15),
  // e the exponent of the row's largest finite |x| (frexp: that value is
  // below 2^e, at least 2^(e-1)), so x / s has its largest value in
  // [2^14, 2^15), within f16's range; s = 1 for a row of zeros or
  // non-finite values only. Then the row as f16(x / s) (exact scaling,
  // one rounding) and s at row m, 1 / s at 64 + m of the scales
  // (skinny_gemm_source.h's kRowScaleOffset). A row of up to 8192 values
  // stays in registers between the two passes (16 float4 a thread); a
  // longer one is read again.
  const int64_t k = plan.shape.k;
  const int64_t per_thread = CeilDiv(k, 512);
  const bool held = per_thread <= 16;
  const int64_t scales = static_cast<int64_t>(kGemmWorkspaceBytes - kSkinnyRowScaleBytes) / 4;
  const std::string load = absl::StrCat(
      "i * 512 + threadIdx.x * 4 < ", k, " ? __ldcg((const float4*)(row + i * 512 + threadIdx.x * 4)) "
      ": make_float4(0.0f, 0.0f, 0.0f, 0.0f)");
  return absl::StrCat(
      "extern \"C\" __global__ void __launch_bounds__(128) ", name,
      "(const float* __restrict__ x, float* __restrict__ partial, int* __restrict__ counters) {\n"
      "  g_pdl_begin();\n"
      "  const int m = blockIdx.x;\n"
      "  const float* row = x + (long long)m * ", k, "LL;\n"
      "  float largest = 0.0f;\n",
      held ? absl::StrCat("  float4 v[", per_thread, "];\n#pragma unroll\n  for (int i = 0; i < ",
                          per_thread, "; ++i) v[i] = ", load, ";\n")
           : "",
      // Held values are indexed by constants only when every loop over
      // them is unrolled whole (else v[] goes to local memory).
      held ? "#pragma unroll\n" : "#pragma unroll 8\n",
      "  for (int i = 0; i < ", per_thread, "; ++i) {\n",
      held ? "    const float4 u = v[i];\n" : absl::StrCat("    const float4 u = ", load, ";\n"),
      "    // Finite values only: NaN fails the comparison too.\n"
      "    if (fabsf(u.x) <= 3.402823466e38f) largest = fmaxf(largest, fabsf(u.x));\n"
      "    if (fabsf(u.y) <= 3.402823466e38f) largest = fmaxf(largest, fabsf(u.y));\n"
      "    if (fabsf(u.z) <= 3.402823466e38f) largest = fmaxf(largest, fabsf(u.z));\n"
      "    if (fabsf(u.w) <= 3.402823466e38f) largest = fmaxf(largest, fabsf(u.w));\n"
      "  }\n"
      "  for (int o = 16; o > 0; o >>= 1) largest = fmaxf(largest, __shfl_xor_sync(0xffffffffu, largest, o));\n"
      "  __shared__ float warps[4];\n"
      "  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = largest;\n"
      "  __syncthreads();\n"
      "  largest = fmaxf(fmaxf(warps[0], warps[1]), fmaxf(warps[2], warps[3]));\n"
      "  int e = 15;\n"
      "  if (largest > 0.0f) frexpf(largest, &e);\n"
      "  // Within f32's normal range both ways, as ScaledHalfWeights.\n"
      "  e = e - 15 < -126 ? -111 : e;\n"
      "  const float inverse = ldexpf(1.0f, 15 - e);\n"
      "  uint2* half = (uint2*)((char*)partial + ", plan.HalfInputOffset(), "LL + (long long)m * ",
      k * 2, "LL);\n",
      held ? "#pragma unroll\n" : "#pragma unroll 8\n",
      "  for (int i = 0; i < ", per_thread, "; ++i) {\n",
      held ? "    const float4 u = v[i];\n" : absl::StrCat("    const float4 u = ", load, ";\n"),
      "    const int k = i * 512 + threadIdx.x * 4;\n"
      "    if (k >= ", k, ") break;\n"
      "    uint2 h;\n"
      "    h.x = (unsigned)g_f2h(u.x * inverse).bits | ((unsigned)g_f2h(u.y * inverse).bits << 16);\n"
      "    h.y = (unsigned)g_f2h(u.z * inverse).bits | ((unsigned)g_f2h(u.w * inverse).bits << 16);\n"
      "    half[k / 4] = h;\n"
      "  }\n"
      "  if (threadIdx.x == 0) {\n"
      "    partial[", scales, "LL + m] = ldexpf(1.0f, e - 15);\n"
      "    partial[", scales, "LL + 64 + m] = inverse;\n"
      "  }\n"
      "}\n");
}

}  // namespace graft::cuda
