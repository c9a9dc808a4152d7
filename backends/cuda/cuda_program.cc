#include "backends/cuda/cuda_program.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/skinny_gemm.h"
#include "backends/inline_submodules.h"
#include "graph/collective_ops.h"
#include "graph/fused_ops.h"
#include "graph/int4_ops.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "graph/quant_ops.h"
#include "passes/cast_float.h"
#include "support/status_macros.h"

namespace graft::cuda {

bool IsGemmCall(const Node& node) {
  return node.is_call("linear") || node.is_call("matmul") ||
         node.is_call("graft::linear_activation");
}

namespace {

// cuBLASLt adds a residual r to the product as it writes it (its C matrix
// with beta 1: D = A B + bias + r, summed before the one rounding). Not for
// the linear layers of few rows that graft's own kernel may run
// (skinny_gemm.h, unless gemm=cublaslt), which have no such epilogue.
bool AbsorbsResidual(const Node& call, const CudaOptions& options) {
  // A convolution's product writes [N*Ho*Wo, Cout] rows: an NHWC residual
  // has that layout (step_program.cc checks that it is channels-last too).
  if (RunsAsConvGemm(call)) return true;
  if (!call.is_call("linear") && !call.is_call("matmul")) return false;
  absl::StatusOr<GemmShape> shape = GemmShapeOf(call);
  // One product (batched ones as one GEMM where they flatten), whose C
  // layout is D's plain [m, n].
  return shape.ok() && shape->dtype != DType::kF64 && shape->batch == 1 &&
         (call.is_call("matmul") || options.gemm == "cublaslt" || shape->m > kSkinnyMaxRows);
}

// graft::quantized_linear is a product too: graft's own int8 kernel
// (skinny_gemm.h) runs it.
bool IsLibraryCall(const Node& node) {
  return IsGemmCall(node) || node.is_call("conv2d") || node.is_call(kQuantizedLinearOp) ||
         node.is_call(kQuantizedConv2dOp);
}

// A direct kernel, as conv2d's, summing in int32: NCHW i8/u8 input, i8
// weight, f32 scales and bias.
absl::Status CanLowerQuantizedConv2d(const Node& node) {
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Node* input = call.TensorNode("input");
  const Node* scales = call.TensorNode("weight_scales");
  const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
  if (!input->type().has_value() || !scales->type().has_value()) return absl::OkStatus();
  if (input->type()->rank() != 4) {
    return absl::UnimplementedError("an int8 convolution of a tensor that is not 4-D");
  }
  if (scales->type()->dtype != DType::kF32 ||
      (bias != nullptr && bias->type().has_value() && bias->type()->dtype != DType::kF32)) {
    return absl::UnimplementedError("an int8 convolution whose scales or bias are not f32");
  }
  const std::string activation = call.String("activation");
  if (activation != "none" && activation != "relu") {
    return absl::UnimplementedError(
        absl::StrCat("an int8 convolution with activation '", activation, "'"));
  }
  return absl::OkStatus();
}

bool IsRowOp(const Node& node) {
  return node.is_call("sum") || node.is_call("mean") || node.is_call("amax") ||
         node.is_call("amin") || node.is_call("softmax") || node.is_call("log_softmax") ||
         node.is_call("layer_norm") || node.is_call("batch_norm") ||
         node.is_call("max_pool2d") || node.is_call("avg_pool2d") ||
         node.is_call("adaptive_avg_pool2d") || node.is_call("argmax") || node.is_call("concat");
}

// NCCL gathers whole rank blocks: along dim 0, or a dim with only size-1
// dims before it.
absl::Status CanLowerCollective(const Node& node) {
  if (!node.is_call(kAllGatherOp)) return absl::OkStatus();
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Node* input = call.TensorNode("input");
  if (input == nullptr || !input->type().has_value()) return absl::OkStatus();
  const Shape& shape = input->type()->shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t dim = call.Int("dim");
  if (dim < 0) dim += rank;
  for (int64_t d = 0; d < dim && d < rank; ++d) {
    if (shape[d] != Dim(1)) {
      return absl::UnimplementedError(absl::StrCat(
          "all_gather along dim ", dim, " of ", input->type()->ToString(),
          ": NCCL gathers along the first dim larger than 1"));
    }
  }
  return absl::OkStatus();
}

// graft's attention kernel (attention_source.h): tensor-core operands
// (bf16, f16) and head dims that are multiples of 16 up to 128 (its
// registers and shared memory), on compute capability 8.0 on (cp.async,
// mma.m16n8k16 on bf16 and f16).
absl::Status CanLowerAttention(const Node& node, int compute_capability) {
  if (compute_capability < 80) {
    return absl::UnimplementedError(absl::StrCat(
        "attention needs compute capability 8.0 or more; this GPU has ",
        compute_capability / 10, ".", compute_capability % 10));
  }
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  const Node* q = call.TensorNode("query");
  const Node* v = call.TensorNode("value");
  if (q == nullptr || v == nullptr || !q->type().has_value() || !v->type().has_value() ||
      q->type()->rank() < 2) {
    return absl::OkStatus();  // Checked again once the program is typed.
  }
  const DType t = q->type()->dtype;
  if (t != DType::kBF16 && t != DType::kF16) {
    return absl::UnimplementedError(absl::StrCat(
        "attention in ", DTypeName(t), ": graft's attention kernel takes bf16 and f16"));
  }
  for (const Dim d : {q->type()->shape.back(), v->type()->shape.back()}) {
    if (d.is_symbolic() || d.value() % 16 != 0 || d.value() == 0 || d.value() > 128) {
      return absl::UnimplementedError(absl::StrCat(
          "attention with head dim ", d.ToString(), ": graft's attention kernel takes multiples "
          "of 16 up to 128"));
    }
  }
  return absl::OkStatus();
}

absl::Status CanLowerCall(const Node& node, int compute_capability) {
  const std::string& op = node.target();
  if (PointwiseFormulaOf(node).has_value() || IsAliasOp(node) || IsViewCopyOp(node) ||
      IsIndexOp(node) || IsCreateOp(node) || IsRowOp(node)) {
    // Checked below for the ops with conditions.
  } else if (IsGemmCall(node)) {
    absl::StatusOr<GemmShape> shape = GemmShapeOf(node);
    // Unknown types are checked again once the program is typed.
    if (!shape.ok() && !absl::IsFailedPrecondition(shape.status())) return shape.status();
  } else if (node.is_call("conv2d")) {
    // A product (conv_gemm.h) where it can; else a direct kernel: any
    // stride, padding, dilation and groups.
  } else if (node.is_call("pad")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    const std::string& mode = call.String("mode");
    if (mode != "constant" && mode != "reflect" && mode != "replicate") {
      return absl::UnimplementedError(absl::StrCat("pad mode '", mode, "'"));
    }
  } else if (node.is_call("split")) {
    for (const Node* user : node.users()) {
      if (!user->is_call("getitem")) {
        return absl::UnimplementedError("split whose tuple is used other than by getitem");
      }
    }
  } else if (IsCollectiveOp(op)) {
    return CanLowerCollective(node);
  } else if (IsQuantizeOp(node)) {
    // Generated kernels, per tensor or per channel.
  } else if (node.is_call(kQuantizedLinearOp)) {
    return CanLowerQuantizedLinear(node);
  } else if (node.is_call(kQuantizedConv2dOp)) {
    return CanLowerQuantizedConv2d(node);
  } else if (node.is_call(kAttentionOp)) {
    return CanLowerAttention(node, compute_capability);
  } else if (IsInt4ConstantUnpack(node)) {
    // Folded into an int8 module tensor when the program is built.
  } else {
    return absl::UnimplementedError(
        absl::StrCat("the cuda backend has no code for op '", op, "' yet"));
  }
  if (node.is_call("slice")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Int("step") <= 0) return absl::UnimplementedError("slice with a step below 1");
  }
  if (node.is_call("getitem") &&
      (node.num_args() == 0 || !node.arg(0).is_node() || !node.arg(0).node()->is_call("split"))) {
    return absl::UnimplementedError("getitem of anything but split");
  }
  if (node.is_call("dropout")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Bool("training")) return absl::UnimplementedError("dropout in training mode");
  }
  return absl::OkStatus();
}

}  // namespace

std::string CudaOptions::Key() const {
  return absl::StrCat("precision ", precision, autotune ? " autotune" : "",
                      gemm == "auto" ? "" : absl::StrCat(" gemm ", gemm));
}

absl::Status CanLower(const Node& node) { return CanLower(node, 90); }

absl::Status CanLower(const Node& node, int compute_capability) {
  switch (node.op()) {
    case OpCode::kPlaceholder:
    case OpCode::kGetAttr:
    case OpCode::kOutput:
    case OpCode::kCallModule:
      // BuildStepProgram checks that a submodule is a pointwise group.
      return absl::OkStatus();
    case OpCode::kCallFunction:
      return CanLowerCall(node, compute_capability);
  }
  return absl::UnimplementedError("unknown node kind");
}

absl::StatusOr<StepProgram> BuildCudaProgram(const Module& module,
                                             const std::vector<TensorType>& input_types,
                                             const CudaOptions& options) {
  StepTarget target{
      .can_lower = [cc = options.compute_capability](const Node& n) { return CanLower(n, cc); },
      .is_library_call = IsLibraryCall,
      // cuBLASLt's epilogues: ReLU and tanh-GELU (no exact GELU), for
      // linear layers and the convolutions it runs.
      .absorbs_activation =
          [](const Node& call, absl::string_view activation) {
            return (IsGemmCall(call) || RunsAsConvGemm(call)) &&
                   (activation == "relu" || activation == "gelu_tanh");
          },
      .absorbs_residual = [&options](const Node& call) { return AbsorbsResidual(call, options); },
      // graft's kernel for products of few rows reads f32 x and writes f32
      // y: the casts at the edges of a bf16 model cost no kernel of their own.
      .absorbs_casts = [&options](const Node& call) { return SkinnyGemmAbsorbsCasts(call, options); },
      // Written-out attention becomes one kernel where it can run it.
      // (cp.async, mma.m16n8k16 on bf16 and f16: compute capability 8.0 on).
      .accepts_attention =
          [cc = options.compute_capability](const Node& n) {
            return CanLowerAttention(n, cc).ok();
          },
      // Its kernel reads q, k and v rows 16 bytes at a time (8 elements).
      .strided_attention_operands = 8,
      // The convolutions cuBLASLt runs, as products over the output's
      // pixels (conv_gemm.h).
      .channels_last_conv = RunsAsConvGemm,
      .options_key = options.Key()};
  if (options.precision != "bf16" && options.precision != "f16") {
    return BuildStepProgram(module, input_types, target);
  }
  // Cast a copy with its input types set, so that shape propagation sees
  // the f32 inputs it casts, and its submodules inlined (as the program
  // inlines them), so that their ops and tensors are cast too.
  Module cast = module.Clone();
  std::vector<Node*> placeholders = cast.graph().placeholders();
  for (size_t i = 0; i < placeholders.size() && i < input_types.size(); ++i) {
    placeholders[i]->set_type(input_types[i]);
  }
  RETURN_IF_ERROR(InlineSubmodules(cast));
  // The cast would turn the int8 products' f32 scales and biases, and the
  // f32 they make, into mixed precisions no kernel takes.
  for (const Node* n : cast.graph().nodes()) {
    if (n->op() == OpCode::kCallFunction &&
        (IsQuantizeOp(*n) || n->is_call(kQuantizedLinearOp) || n->is_call(kQuantizedConv2dOp) ||
         n->is_call(kDynamicQuantizedLinearOp))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "%", n->name(), " (", n->target(), "): a quantized model compiles with precision f32 "
          "or tf32 (its int8 products take f32 scales), not ", options.precision));
    }
  }
  RETURN_IF_ERROR(passes::CastFloatModule(
                      cast, options.precision == "bf16" ? DType::kBF16 : DType::kF16)
                      .status());
  return BuildStepProgram(cast, input_types, target);
}

}  // namespace graft::cuda
