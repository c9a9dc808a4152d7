#include "backends/cuda/conv_gemm.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "support/status_macros.h"

namespace graft::cuda {
namespace {

std::vector<int64_t> Pair(const OpCall& call, absl::string_view name) {
  std::vector<int64_t> v = call.Ints(name);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

}  // namespace

absl::StatusOr<ConvGemm> ConvGemmOf(const Node& conv) {
  if (!conv.is_call("conv2d")) return absl::InvalidArgumentError("not a conv2d");
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(conv));
  const Node* x = call.TensorNode("input");
  const Node* w = call.TensorNode("weight");
  const Node* bias = call.IsNone("bias") ? nullptr : call.TensorNode("bias");
  for (const Node* n : {&conv, x, w, bias}) {
    if (n == nullptr) continue;
    if (!n->type().has_value()) return absl::FailedPreconditionError("operand types unknown");
    for (Dim d : n->type()->shape) {
      if (d.is_symbolic()) return absl::FailedPreconditionError("symbolic operand dims");
    }
  }
  const DType t = x->type()->dtype;
  if (t != DType::kF32 && t != DType::kF16 && t != DType::kBF16) {
    return absl::UnimplementedError(absl::StrCat("a convolution in ", DTypeName(t)));
  }
  if (w->type()->dtype != t || conv.type()->dtype != t) {
    return absl::UnimplementedError("a convolution of mixed dtypes");
  }
  if (call.Int("groups") != 1) return absl::UnimplementedError("a grouped convolution");
  // One buffer cannot be both the NHWC input and the [Cout, K] weight.
  if (w == x) return absl::UnimplementedError("a convolution whose weight is its input");
  const std::vector<int64_t> in = DimsOf(*x), wd = DimsOf(*w), out = DimsOf(conv);
  if (in.size() != 4 || wd.size() != 4 || out.size() != 4 || wd[1] != in[1]) {
    return absl::UnimplementedError("a convolution that is not 2-D over NCHW");
  }
  ConvGemm c;
  const std::vector<int64_t> stride = Pair(call, "stride"), pad = Pair(call, "padding"),
                             dil = Pair(call, "dilation");
  if (stride.size() != 2 || pad.size() != 2 || dil.size() != 2) {
    return absl::UnimplementedError("a convolution with other than two strides, pads, dilations");
  }
  c.batch = in[0];
  c.in_channels = in[1];
  c.height = in[2];
  c.width = in[3];
  c.out_height = out[2];
  c.out_width = out[3];
  c.kernel_h = wd[2];
  c.kernel_w = wd[3];
  c.stride_h = stride[0];
  c.stride_w = stride[1];
  c.pad_h = pad[0];
  c.pad_w = pad[1];
  c.dilation_h = dil[0];
  c.dilation_w = dil[1];
  GemmShape& g = c.gemm;
  g.m = out[0] * out[2] * out[3];
  g.n = out[1];
  g.k = wd[1] * wd[2] * wd[3];
  g.b_is_nk = true;
  g.dtype = t;
  if (g.m == 0 || g.n == 0 || g.k == 0) return absl::UnimplementedError("an empty convolution");
  if (bias != nullptr) {
    if (bias->type()->rank() != 1 || bias->type()->shape[0].value() != g.n ||
        (bias->type()->dtype != t && bias->type()->dtype != DType::kF32)) {
      return absl::UnimplementedError("a convolution bias that is not one value per output channel");
    }
    g.has_bias = true;
    g.bias_dtype = bias->type()->dtype;
  }
  c.needs_columns = !(c.kernel_h == 1 && c.kernel_w == 1 && c.stride_h == 1 && c.stride_w == 1 &&
                      c.pad_h == 0 && c.pad_w == 0 && c.out_height == c.height &&
                      c.out_width == c.width);
  c.column_bytes = c.needs_columns ? g.m * g.k * static_cast<int64_t>(DTypeSize(t)) : 0;
  // Checked with K as ConvGemmFor may pad it (by taps, to rows of 16
  // bytes), so that a convolution accepted here is one it accepts.
  const int64_t align = 16 / static_cast<int64_t>(DTypeSize(t));
  const int64_t padded_k = c.kernel_h * c.kernel_w > 1 ? (g.k + align - 1) / align * align : g.k;
  const int64_t most_bytes = g.m * padded_k * static_cast<int64_t>(DTypeSize(t));
  if (c.needs_columns && most_bytes > kMaxConvColumnBytes) {
    return absl::UnimplementedError(absl::StrCat("a convolution whose columns take ",
                                                 most_bytes >> 20, " MB"));
  }
  return c;
}

bool RunsAsConvGemm(const Node& node) { return ConvGemmOf(node).ok(); }

bool IsConvGemmStep(const Step& step) {
  return step.kind == StepKind::kLibrary && step.node->is_call("conv2d") && step.channels_last &&
         RunsAsConvGemm(*step.node);
}

namespace {

// The state slot of the product's weight where it is a module tensor read
// as it is (a get_attr of the weight's own shape), and its kernel is
// larger than 1x1.
std::optional<int> TapsWeightSlot(const Step& step) {
  if (!IsConvGemmStep(step)) return std::nullopt;
  absl::StatusOr<OpCall> call = OpCall::Bind(*step.node);
  if (!call.ok()) return std::nullopt;
  const Node* weight = call->TensorNode("weight");
  if (weight->op() != OpCode::kGetAttr || weight == call->TensorNode("input") ||
      (!call->IsNone("bias") && weight == call->TensorNode("bias"))) {
    return std::nullopt;
  }
  const std::vector<int64_t> dims = DimsOf(*weight);
  if (dims.size() != 4 || dims[2] * dims[3] == 1) return std::nullopt;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] == weight && step.operands[i].where == BufferRef::Where::kState) {
      return step.operands[i].index;
    }
  }
  return std::nullopt;
}

}  // namespace

bool ConvTapsOuter(const Step& step, const StepProgram& program) {
  const std::optional<int> slot = TapsWeightSlot(step);
  if (!slot.has_value()) return false;
  for (const Step& other : program.steps) {
    for (size_t i = 0; i < other.operands.size(); ++i) {
      const BufferRef& ref = other.operands[i];
      if (ref.where != BufferRef::Where::kState || ref.index != *slot) continue;
      if (TapsWeightSlot(other) != slot ||
          other.inputs[i] != OpCall::Bind(*other.node)->TensorNode("weight")) {
        return false;
      }
    }
  }
  return true;
}

absl::StatusOr<ConvGemm> ConvGemmFor(const Step& step, const StepProgram& program) {
  ASSIGN_OR_RETURN(ConvGemm c, ConvGemmOf(*step.node));
  c.taps_k = c.gemm.k;
  // A 1x1 kernel's one tap: both orders are the weight's own, unpadded.
  const bool permuted = ConvTapsOuter(step, program);
  c.taps_outer = c.kernel_h * c.kernel_w == 1 || permuted;
  if (!permuted) return c;
  const int64_t size = static_cast<int64_t>(DTypeSize(c.gemm.dtype));
  const int64_t align = 16 / size;
  c.gemm.k = (c.gemm.k + align - 1) / align * align;
  c.column_bytes = c.gemm.m * c.gemm.k * size;
  if (c.column_bytes > kMaxConvColumnBytes) {
    return absl::UnimplementedError(absl::StrCat("a convolution whose columns take ",
                                                 c.column_bytes >> 20, " MB"));
  }
  return c;
}

std::map<int, int64_t> TapsOuterWeightSlots(const StepProgram& program) {
  std::map<int, int64_t> slots;
  for (const Step& step : program.steps) {
    if (!ConvTapsOuter(step, program)) continue;
    absl::StatusOr<ConvGemm> c = ConvGemmFor(step, program);
    if (c.ok()) slots[*TapsWeightSlot(step)] = c->gemm.k;
  }
  return slots;
}

Tensor TapsOuterWeights(const Tensor& weight, int64_t padded_k) {
  const std::vector<int64_t>& d = weight.dims();
  const int64_t out = d[0], in = d[1], taps = d[2] * d[3];
  const size_t size = DTypeSize(weight.dtype());
  Tensor permuted(weight.dtype(), {out, padded_k});  // Zeros past each row's taps.
  const char* src = static_cast<const char*>(weight.raw_data());
  char* dst = static_cast<char*>(permuted.raw_data());
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t c = 0; c < in; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        std::memcpy(dst + (o * padded_k + t * in + c) * size,
                    src + ((o * in + c) * taps + t) * size, size);
      }
    }
  }
  return permuted;
}

}  // namespace graft::cuda
