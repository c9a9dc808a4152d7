#include "backends/orc/library_call_specs.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/strided_view.h"
#include "graph/op_registry.h"
#include "graph/quant_ops.h"
#include "support/status_macros.h"

namespace graft::orc {
namespace {

using runtime::LibraryCallKind;
using runtime::LibraryCallSpec;

int64_t Volume(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int OperandOf(const Step& step, const Node* node) {
  auto it = std::find(step.inputs.begin(), step.inputs.end(), node);
  return static_cast<int>(it - step.inputs.begin());
}

// The state slot of operand `operand` when it is a module tensor, else -1.
int StateSlotOf(const Step& step, int operand) {
  const BufferRef& ref = step.operands[operand];
  return ref.where == BufferRef::Where::kState ? ref.index : -1;
}

const Tensor* ConstantOf(const Program& program, const Node* node) {
  return node->op() == OpCode::kGetAttr ? program.module->FindTensor(node->target())
                                        : nullptr;
}

void LinearSpec(const Step& step, const OpCall& call, bool weight_in_out,
                LibraryCallSpec& spec) {
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  std::vector<int64_t> in = DimsOf(*input);
  std::vector<int64_t> w = DimsOf(*weight);
  const int64_t k = in.back();
  const int64_t n = weight_in_out ? w[1] : w[0];
  int64_t m = 1;
  for (size_t i = 0; i + 1 < in.size(); ++i) m *= in[i];
  spec.src = {m, k};
  spec.weights = {k, n};
  spec.dst = {m, n};
  spec.weights_transposed = !weight_in_out;
  spec.src_operand = OperandOf(step, input);
  spec.weights_operand = OperandOf(step, weight);
  spec.weights_state = StateSlotOf(step, spec.weights_operand);
  if (!call.IsNone("bias")) spec.bias_operand = OperandOf(step, call.TensorNode("bias"));
}

// torch.matmul's shapes: a 1-D operand gains a dim of 1 that the result
// drops (the bytes are the same), batch dims broadcast.
void BatchedMatmulSpec(const Step& step, const OpCall& call, LibraryCallSpec& spec) {
  const Node* a = call.TensorNode("input");
  const Node* b = call.TensorNode("other");
  std::vector<int64_t> ad = DimsOf(*a), bd = DimsOf(*b);
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const size_t rank = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), rank - ad.size(), 1);
  bd.insert(bd.begin(), rank - bd.size(), 1);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i + 2 < rank; ++i) out[i] = std::max(ad[i], bd[i]);
  out[rank - 2] = ad[rank - 2];
  out[rank - 1] = bd[rank - 1];
  spec.src = ad;
  spec.weights = bd;
  spec.dst = out;
  spec.src_operand = OperandOf(step, a);
  spec.weights_operand = OperandOf(step, b);
  // Only plain 2-D products prepack constant weights.
  spec.weights_state = rank == 2 ? StateSlotOf(step, spec.weights_operand) : -1;
}

std::vector<int64_t> Pair(const OpCall& call, absl::string_view name) {
  std::vector<int64_t> v = call.Ints(name);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

void Conv2dSpec(const Step& step, const OpCall& call, LibraryCallSpec& spec) {
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  std::vector<int64_t> in = DimsOf(*input), out = DimsOf(*step.node);
  if (in.size() == 3) in.insert(in.begin(), 1);  // Unbatched.
  if (out.size() == 3) out.insert(out.begin(), 1);
  spec.kind = LibraryCallKind::kConv;
  spec.src = in;
  spec.dst = out;
  spec.weights = DimsOf(*weight);
  spec.stride = Pair(call, "stride");
  spec.padding = Pair(call, "padding");
  spec.dilation = Pair(call, "dilation");
  spec.groups = call.Int("groups");
  spec.src_operand = OperandOf(step, input);
  spec.weights_operand = OperandOf(step, weight);
  spec.weights_state = StateSlotOf(step, spec.weights_operand);
  if (!call.IsNone("bias")) spec.bias_operand = OperandOf(step, call.TensorNode("bias"));
  spec.src_channels_last = step.operand_channels_last[spec.src_operand];
  spec.dst_channels_last = step.channels_last;
}

// An int8 linear layer's product: src [M, K] (the input's rows), weights
// [K, N] (stored [N, K]), dst [M, N]; returns N.
int64_t Int8LinearShape(const OpCall& call, LibraryCallSpec& spec) {
  std::vector<int64_t> in = DimsOf(*call.TensorNode("input"));
  const int64_t k = in.back(), n = DimsOf(*call.TensorNode("weight"))[0];
  int64_t m = 1;
  for (size_t i = 0; i + 1 < in.size(); ++i) m *= in[i];
  spec.src = {m, k};
  spec.weights = {k, n};
  spec.dst = {m, n};
  return n;
}

// An int8 product's bias, an f32 constant read once (its state slot), if
// it has one.
absl::Status Int8Bias(const Program& program, const Step& step, const OpCall& call,
                      LibraryCallSpec& spec) {
  spec.bias_operand = -1;
  if (call.IsNone("bias")) return absl::OkStatus();
  const Node* bias = call.TensorNode("bias");
  const Tensor* constant = ConstantOf(program, bias);
  spec.bias_state = StateSlotOf(step, OperandOf(step, bias));
  if (constant == nullptr || constant->dtype() != DType::kF32 || spec.bias_state < 0) {
    return absl::UnimplementedError("an int8 product with a bias that is not an f32 constant");
  }
  return absl::OkStatus();
}

// What the int8 products (quantized_linear, quantized_conv2d) share: the
// weight and its scales as constants, one scale per output channel for the
// int32 sums, the zero points, a result quantized again or not, a constant
// bias, the activation.
absl::Status Int8ProductSpec(const Program& program, const Step& step, const OpCall& call,
                             int64_t outputs, LibraryCallSpec& spec) {
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  const Tensor* scales = ConstantOf(program, call.TensorNode("weight_scales"));
  spec.weights_operand = OperandOf(step, weight);
  spec.weights_state = StateSlotOf(step, spec.weights_operand);
  if (ConstantOf(program, weight) == nullptr || scales == nullptr || spec.weights_state < 0 ||
      scales->NumElements() != outputs) {
    return absl::UnimplementedError("an int8 product whose weight or scales are not constants");
  }
  spec.src_dtype = input->type()->dtype == DType::kU8 ? DType::kU8 : DType::kI8;
  spec.src_operand = OperandOf(step, input);
  const double input_scale = call.Float("input_scale");
  for (int64_t j = 0; j < outputs; ++j) {
    const float s = static_cast<float>(input_scale * scales->data<float>()[j]);
    // The bias is divided by it (oneDNN 2's order): no zero, no sign flip.
    if (!(s > 0) || !std::isfinite(s)) {
      return absl::UnimplementedError(absl::StrCat("an int8 product whose output ", j,
                                                   " has scale ", s));
    }
    spec.scales.push_back(s);
  }
  spec.src_zero_point = static_cast<int32_t>(call.Int("input_zero_point"));
  const DType out = call.GetDType("output_dtype");
  if (out != DType::kF32) {
    spec.dst_dtype = out == DType::kU8 ? DType::kU8 : DType::kI8;
    spec.dst_scale = static_cast<float>(call.Float("output_scale"));
    spec.dst_zero_point = static_cast<int32_t>(call.Int("output_zero_point"));
  }
  RETURN_IF_ERROR(Int8Bias(program, step, call, spec));
  // The op's own ReLU, or one the step absorbed after an f32 result.
  spec.activation = call.String("activation") == "relu" ? "relu" : step.activation;
  if (Volume(spec.src) == 0 || Volume(spec.dst) == 0) {
    return absl::UnimplementedError("an empty int8 product");
  }
  return absl::OkStatus();
}

absl::Status QuantizedLinearSpec(const Program& program, const Step& step,
                                 const OpCall& call, LibraryCallSpec& spec) {
  spec.kind = LibraryCallKind::kQuantizedMatmul;
  const int64_t n = Int8LinearShape(call, spec);
  return Int8ProductSpec(program, step, call, n, spec);
}

// graft::dynamic_quantized_linear: f32 rows quantized as the call runs,
// times constant s8 weights with one scale per output.
absl::Status DynamicQuantizedLinearSpec(const Program& program, const Step& step,
                                        const OpCall& call, LibraryCallSpec& spec) {
  const Node* input = call.TensorNode("input");
  const Node* weight = call.TensorNode("weight");
  const Tensor* scales = ConstantOf(program, call.TensorNode("weight_scales"));
  spec.kind = LibraryCallKind::kDynamicQuantizedMatmul;
  const int64_t n = Int8LinearShape(call, spec);
  if (spec.src[1] > kMaxInt8SumTerms) {
    return absl::UnimplementedError("a dynamic int8 product whose int32 sums could overflow");
  }
  spec.src_operand = OperandOf(step, input);
  spec.weights_operand = OperandOf(step, weight);
  spec.weights_state = StateSlotOf(step, spec.weights_operand);
  if (ConstantOf(program, weight) == nullptr || scales == nullptr || spec.weights_state < 0 ||
      scales->NumElements() != n) {
    return absl::UnimplementedError("a dynamic int8 product whose weight or scales are not constants");
  }
  spec.scales.assign(scales->data<float>(), scales->data<float>() + n);
  RETURN_IF_ERROR(Int8Bias(program, step, call, spec));
  if (Volume(spec.src) == 0 || Volume(spec.dst) == 0) {
    return absl::UnimplementedError("an empty int8 product");
  }
  return absl::OkStatus();
}

absl::Status QuantizedConvSpec(const Program& program, const Step& step, const OpCall& call,
                               LibraryCallSpec& spec) {
  Conv2dSpec(step, call, spec);
  spec.kind = LibraryCallKind::kQuantizedConv;
  return Int8ProductSpec(program, step, call, spec.dst[1], spec);
}

absl::Status CheckF32(const Step& step) {
  auto check = [](const Node* n) {
    return n->type()->dtype == DType::kF32
               ? absl::OkStatus()
               : absl::UnimplementedError(absl::StrCat(
                     "oneDNN calls take f32 tensors; %", n->name(), " is ",
                     DTypeName(n->type()->dtype)));
  };
  RETURN_IF_ERROR(check(step.node));
  for (const Node* n : step.inputs) RETURN_IF_ERROR(check(n));
  return absl::OkStatus();
}

// A product with nothing to add up or nothing to write becomes an empty
// product call: the bias (of `bias_elements` values, each repeated
// `repeat` times) through the activation.
void MakeEmptyProduct(LibraryCallSpec& spec, int64_t bias_elements, int64_t repeat) {
  spec.kind = LibraryCallKind::kEmptyProduct;
  spec.elements = Volume(spec.dst);
  spec.bias_buffer = spec.bias_operand >= 0 ? 1 + spec.bias_operand : -1;
  spec.period = bias_elements;
  spec.repeat = repeat == 0 ? 1 : repeat;
}

absl::Status FloatSpec(const Program& program, const Step& step, const OpCall& call,
                       LibraryCallSpec& spec) {
  const Node& node = *step.node;
  RETURN_IF_ERROR(CheckF32(step));
  if (node.is_call("conv2d")) {
    Conv2dSpec(step, call, spec);
    if (Volume(spec.src) == 0 || Volume(spec.weights) == 0) {
      MakeEmptyProduct(spec, spec.dst[1], spec.dst[2] * spec.dst[3]);
    }
    return absl::OkStatus();
  }
  if (node.is_call("linear")) {
    LinearSpec(step, call, false, spec);
  } else if (node.is_call("graft::linear_activation")) {
    LinearSpec(step, call, call.String("weight_layout") == "in_out", spec);
    spec.activation = call.String("activation");
    if (spec.activation != "relu" && spec.activation != "gelu" &&
        spec.activation != "gelu_tanh") {
      return absl::UnimplementedError(
          absl::StrCat("linear_activation with activation '", spec.activation, "'"));
    }
  } else if (node.is_call("matmul")) {
    BatchedMatmulSpec(step, call, spec);
  } else {
    return absl::UnimplementedError(absl::StrCat("no library call for op '", node.target(), "'"));
  }
  spec.bf16 = program.options.bf16_matmuls;
  if (Volume(spec.src) == 0 || Volume(spec.weights) == 0) {
    const Node* bias = node.is_call("matmul") || call.IsNone("bias")
                           ? nullptr
                           : call.TensorNode("bias");
    MakeEmptyProduct(spec, bias != nullptr ? Volume(DimsOf(*bias)) : 1, 1);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LibraryCallSpec> LibraryCallSpecOf(const Program& program, const Step& step) {
  const Node& node = *step.node;
  ASSIGN_OR_RETURN(OpCall call, OpCall::Bind(node));
  LibraryCallSpec spec;
  spec.label = absl::StrCat("%", node.name(), " (", node.target(), ")");
  spec.operand_count = static_cast<int32_t>(step.inputs.size());
  spec.activation = step.activation;
  if (node.is_call(kQuantizedLinearOp)) {
    RETURN_IF_ERROR(QuantizedLinearSpec(program, step, call, spec));
  } else if (node.is_call(kQuantizedConv2dOp)) {
    RETURN_IF_ERROR(QuantizedConvSpec(program, step, call, spec));
  } else if (node.is_call(kDynamicQuantizedLinearOp)) {
    RETURN_IF_ERROR(DynamicQuantizedLinearSpec(program, step, call, spec));
  } else {
    RETURN_IF_ERROR(FloatSpec(program, step, call, spec));
  }
  return spec;
}

}  // namespace graft::orc
