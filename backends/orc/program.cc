#include "backends/orc/program.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/dtype.h"
#include "graph/int4_ops.h"
#include "graph/op_registry.h"
#include "graph/op_traits.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"

namespace graft::orc {

#ifdef GRAFT_ORC_WITH_DNNL
constexpr bool kWithDnnl = true;
#else
constexpr bool kWithDnnl = false;
#endif
namespace {

// The products whose int8 sums oneDNN makes (with VNNI).
bool IsInt8Product(const Node& node) {
  return node.is_call(kQuantizedLinearOp) || node.is_call(kQuantizedConv2dOp) ||
         node.is_call(kDynamicQuantizedLinearOp);
}

// oneDNN's channels-last convolutions are 1.5 to 2.5 times faster than its
// NCHW ones; grouped f32 convolutions stay NCHW. int8 convolutions are
// channels-last whatever their groups: oneDNN 2 has no fast NCHW int8
// kernel (its reference one is 50 times slower on a depthwise 3x3).
bool ConvRunsChannelsLast(const Node& conv) {
  absl::StatusOr<OpCall> call = OpCall::Bind(conv);
  return call.ok() && (call->Int("groups") == 1 || conv.is_call(kQuantizedConv2dOp));
}

// Up to this many multiply-adds, an f32 matmul of two computed values
// (attention's scores and mixing over a short sequence) runs as generated
// loops: a oneDNN call costs about 0.6 us more than its work there.
constexpr int64_t kGeneratedMatmulMacs = int64_t{1} << 17;

// A linear layer this small (multiply-adds) runs as generated loops even
// with a constant weight that oneDNN would pack: at a few thousand
// multiply-adds the call's overhead is most of its time (the layers of an
// unrolled LSTM, a classifier head).
constexpr int64_t kGeneratedLinearMacs = int64_t{1} << 14;

// linear, or linear_activation with ReLU, of static f32 operands and at
// most kGeneratedLinearMacs multiply-adds.
bool IsGeneratedLinear(const Node& node) {
  const bool fused = node.is_call("graft::linear_activation");
  if ((!node.is_call("linear") && !fused) || !node.type().has_value() ||
      !IsStatic(node.type()->shape) || node.type()->dtype != DType::kF32) {
    return false;
  }
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok() || (fused && call->String("activation") != "relu")) return false;
  const Node* input = call->TensorNode("input");
  const Node* weight = call->TensorNode("weight");
  const Node* bias = call->TensorNode("bias");
  for (const Node* n : {input, weight, bias}) {
    if (n == nullptr && n != bias) return false;
    if (n != nullptr && (!n->type().has_value() || !IsStatic(n->type()->shape) ||
                         n->type()->dtype != DType::kF32)) {
      return false;
    }
  }
  // A bias other than [N] (linear's type rule lets a scalar through) is
  // the library call's to refuse.
  if (weight->type()->shape.size() != 2 || input->type()->shape.empty() ||
      (bias != nullptr && bias->type()->shape.size() != 1)) {
    return false;
  }
  const int64_t k = input->type()->shape.back().value();
  return NumElements(node.type()->shape) * k <= kGeneratedLinearMacs;
}

// A matmul the backend generates code for: a small f32 one, or any f64
// one (oneDNN's products are f32); and small linear layers.
bool IsGeneratedMatmul(const Node& node) {
  if (IsGeneratedLinear(node)) return true;
  if (!node.is_call("matmul") || !node.type().has_value() || !IsStatic(node.type()->shape)) {
    return false;
  }
  // Operands by name: they may be given as keyword arguments.
  absl::StatusOr<OpCall> call = OpCall::Bind(node);
  if (!call.ok()) return false;
  const Node* a = call->TensorNode("input");
  const Node* b = call->TensorNode("other");
  for (const Node* n : {a, b}) {
    if (n == nullptr || !n->type().has_value() || !IsStatic(n->type()->shape) ||
        n->type()->dtype != node.type()->dtype) {
      return false;
    }
  }
  if (node.type()->dtype == DType::kF64) return true;
  // A constant f32 operand goes to oneDNN, which packs it once.
  if (node.type()->dtype != DType::kF32 || a->op() == OpCode::kGetAttr ||
      b->op() == OpCode::kGetAttr) {
    return false;
  }
  const int64_t k = a->type()->shape.back().value();
  return NumElements(node.type()->shape) * k <= kGeneratedMatmulMacs;
}

bool IsLibraryCall(const Node& node) {
  if (IsGeneratedMatmul(node)) return false;
  return node.is_call("linear") || node.is_call("matmul") ||
         node.is_call("graft::linear_activation") || node.is_call("conv2d") ||
         IsInt8Product(node);
}

absl::Status CheckDType(const Node& node, DType dtype) {
  switch (dtype) {
    case DType::kF16:
    case DType::kBF16:
      return absl::UnimplementedError(
          absl::StrCat(DTypeName(dtype), " tensors are not supported yet"));
    default:
      return absl::OkStatus();
  }
}

absl::Status CheckTypes(const Node& node) {
  if (node.type().has_value()) {
    RETURN_IF_ERROR(CheckDType(node, node.type()->dtype));
  }
  for (const Node* input : node.inputs()) {
    if (input->type().has_value()) {
      RETURN_IF_ERROR(CheckDType(*input, input->type()->dtype));
    }
  }
  return absl::OkStatus();
}

absl::Status CanLowerCall(const Node& node) {
  const std::string& op = node.target();
  if (PointwiseFormulaOf(node).has_value() || IsAliasOp(node) ||
      node.is_call("permute") || node.is_call("transpose") ||
      node.is_call("expand") || node.is_call("concat") ||
      node.is_call("sum") || node.is_call("mean") || node.is_call("amax") ||
      node.is_call("amin") || node.is_call("softmax") ||
      node.is_call("log_softmax") || node.is_call("layer_norm") ||
      node.is_call("batch_norm") || node.is_call("max_pool2d") ||
      node.is_call("avg_pool2d") || node.is_call("adaptive_avg_pool2d") ||
      IsQuantizeOp(node) || IsIndexOp(node) || IsCreateOp(node) ||
      node.is_call("argmax") || node.is_call("cumsum") || IsGeneratedMatmul(node)) {
    // Checked below for the ops with conditions.
  } else if (IsLibraryCall(node)) {
    if (IsInt8Product(node)) {
      // Without VNNI, oneDNN sums u8 x s8 pairs through saturating int16
      // (255 * 127 * 2 > 32767): the interpreter's exact sums instead.
      if (!__builtin_cpu_supports("avx512vnni") && !__builtin_cpu_supports("avxvnni")) {
        return absl::UnimplementedError(
            "int8 products need a CPU with VNNI (oneDNN saturates without it)");
      }
      ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
      for (const char* param : {"input", "weight"}) {
        const Node* n = call.TensorNode(param);
        if (n != nullptr && n->type().has_value() && IsStatic(n->type()->shape) &&
            NumElements(n->type()->shape) == 0) {
          return absl::UnimplementedError("an empty int8 product");
        }
      }
      // oneDNN 2 has no fast int8 convolution on NCHW data, and an
      // unbatched input cannot run channels-last here.
      if (node.is_call(kQuantizedConv2dOp)) {
        ASSIGN_OR_RETURN(OpCall conv, OpCall::Bind(node));
        const Node* input = conv.TensorNode("input");
        if (input != nullptr && input->type().has_value() && input->type()->rank() != 4) {
          return absl::UnimplementedError(
              "an unbatched int8 convolution (give the input a batch dim of 1)");
        }
      }
      // The int8 call packs its weight, scales and bias once: constants.
      for (const char* param : {"weight", "weight_scales", "bias"}) {
        const Node* n = call.TensorNode(param);
        if (n != nullptr && n->op() != OpCode::kGetAttr) {
          return absl::UnimplementedError(
              absl::StrCat(op, " whose ", param, " is not a constant"));
        }
      }
    }
#ifndef GRAFT_ORC_WITH_DNNL
    return absl::UnimplementedError(absl::StrCat(
        op, " needs oneDNN, which this graft was built without"));
#endif
    // oneDNN's bias is one per output feature: a scalar one (which
    // linear's type rule lets through) runs on the interpreter.
    if (node.is_call("linear") || node.is_call("graft::linear_activation")) {
      ASSIGN_OR_RETURN(OpCall linear, OpCall::Bind(node));
      const Node* bias = linear.TensorNode("bias");
      if (bias != nullptr && bias->type().has_value() && bias->type()->rank() != 1) {
        return absl::UnimplementedError(absl::StrCat(op, " with a bias of rank ", bias->type()->rank()));
      }
    }
    // The oneDNN calls take f32 only (library_calls.cc), but for the int8
    // product: refuse the rest here, so that they fall back instead of
    // failing the compile.
    for (const Node* n : IsInt8Product(node) ? std::vector<Node*>{} : node.inputs()) {
      if (n->type().has_value() && n->type()->dtype != DType::kF32) {
        return absl::UnimplementedError(absl::StrCat(
            op, " on ", DTypeName(n->type()->dtype), " tensors (oneDNN calls take f32)"));
      }
    }
  } else if (node.is_call("slice")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Int("step") <= 0) {
      return absl::UnimplementedError("slice with a step below 1");
    }
  } else if (node.is_call("pad")) {
    // Every mode (constant, reflect, replicate).
  } else if (node.is_call("split")) {
    for (const Node* user : node.users()) {
      if (!user->is_call("getitem")) {
        return absl::UnimplementedError(
            "split whose tuple is used other than by getitem");
      }
    }
  } else if (node.is_call("getitem")) {
    if (node.num_args() == 0 || !node.arg(0).is_node() ||
        !node.arg(0).node()->is_call("split")) {
      return absl::UnimplementedError("getitem of anything but split");
    }
  } else if (IsInt4ConstantUnpack(node)) {
    // Folded into an int8 module tensor when the program is built.
  } else {
    return absl::UnimplementedError(
        absl::StrCat("the orc backend has no code for op '", op, "' yet"));
  }
  if (node.is_call("dropout")) {
    ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
    if (call.Bool("training")) {
      return absl::UnimplementedError("dropout in training mode");
    }
  }
  return CheckTypes(node);
}

}  // namespace

absl::Status CanLower(const Node& node) {
  switch (node.op()) {
    case OpCode::kPlaceholder:
    case OpCode::kGetAttr:
    case OpCode::kOutput:
      return CheckTypes(node);
    case OpCode::kCallModule:
      // Only the node is known here; BuildProgram checks that the
      // submodule is a pointwise group (fused groups always are).
      return CheckTypes(node);
    case OpCode::kCallFunction:
      return CanLowerCall(node);
  }
  return absl::UnimplementedError("unknown node kind");
}


absl::StatusOr<Program> BuildProgram(const Module& module,
                                     const std::vector<TensorType>& input_types,
                                     const ProgramOptions& options) {
  StepTarget target{
      .can_lower = CanLower,
      .is_library_call = IsLibraryCall,
      // oneDNN's post-ops work on f32 results.
      // ReLU only: oneDNN's GELU post-ops (erf and tanh) cost more than
      // the product they follow at small sizes (4.6 us on a 32x64x256
      // linear taking 10.3 us, where a separate GELU step takes 3.4).
      .absorbs_activation =
          [](const Node& call, absl::string_view activation) {
            if (activation != "relu") return false;
            // The dynamic product scales its sums itself, with no
            // activation; an int8 product with its own activation applies
            // only that.
            if (call.is_call(kDynamicQuantizedLinearOp)) return false;
            if (IsInt8Product(call)) {
              absl::StatusOr<OpCall> bound = OpCall::Bind(call);
              if (!bound.ok() || bound->String("activation") != "none") return false;
            }
            return call.type()->dtype == DType::kF32;
          },
      .channels_last_conv = ConvRunsChannelsLast,
      // oneDNN prepacks constant weights; with its convolutions over
      // computed ones, ResNet-50's reference int8 graph took 14 s a run
      // instead of 89 ms. Without oneDNN nothing is prepacked, and a small
      // matmul the partitioner gave orc as generated loops (two computed
      // operands) must stay one.
      .fold_dequantized_weights = kWithDnnl,
      .options_key = absl::StrCat(options.bf16_matmuls ? "bf16 matmuls\n" : "",
                                  "threads ", options.threads,
                                  options.target_cpu.empty() ? "" : "\ntarget cpu ",
                                  options.target_cpu)};
  ASSIGN_OR_RETURN(StepProgram steps, BuildStepProgram(module, input_types, target));
  Program program;
  static_cast<StepProgram&>(program) = std::move(steps);
  program.options = options;
  return program;
}

}  // namespace graft::orc
