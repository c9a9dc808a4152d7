// ONNX Runtime's MatMulNBits (com.microsoft): a product by weights stored
// as 4- or 8-bit integers in blocks along K, each block with a scale and a
// zero point. What ONNX Runtime's weight-only quantizers
// (matmul_nbits_quantizer) and its generative-AI model builder write for
// large language models.
//
//   W[n, k] = (q[n, k] - zero_point[n, k / block]) * scale[n, k / block]
//   Y = A @ W^T (+ bias)
//
// B is u8 [N, blocks, block * bits / 8], 4-bit values two to a byte, the
// low nibble first; zero points default to 2^(bits - 1), and are packed the
// same way when u8 ([N, ceil(blocks * bits / 8)]) or given as floats
// ([N, blocks]).
//
// It imports as graft's weight-only form (passes/quantize/weight_only.h):
// the integers stay packed in the module, read through graft::unpack_int4
// for 4 bits (its values are two's complement; q - 8 is q with the top bit
// flipped, so B is stored with each nibble's top bit flipped), cast to f32,
// less the zero points' difference from the default where they differ,
// times the scales, as linear's [N, K] weight.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/int4_ops.h"
#include "onnx/onnx_ops.h"
#include "onnx/onnx_ops_util.h"
#include "support/status_macros.h"

namespace graft::onnx_import {
namespace {

struct NBitsShape {
  int64_t k = 0, n = 0, bits = 0, block = 0, blocks = 0;
};

absl::StatusOr<NBitsShape> ReadShape(NodeContext& ctx) {
  NBitsShape s;
  ASSIGN_OR_RETURN(std::optional<int64_t> k, ctx.attrs().OptionalInt("K"));
  ASSIGN_OR_RETURN(std::optional<int64_t> n, ctx.attrs().OptionalInt("N"));
  ASSIGN_OR_RETURN(s.bits, ctx.attrs().Int("bits", 4));
  ASSIGN_OR_RETURN(std::optional<int64_t> block, ctx.attrs().OptionalInt("block_size"));
  ctx.attrs().Ignore("accuracy_level");  // A precision hint for ONNX Runtime's kernels.
  if (!k.has_value() || !n.has_value() || !block.has_value() || *k < 1 || *n < 1 || *block < 1) {
    return NodeContext::Invalid("needs K, N and block_size attributes, each at least 1");
  }
  if (s.bits != 4 && s.bits != 8) {
    return NodeContext::Unsupported(absl::StrCat("bits=", s.bits, " is not supported (4 or 8)"));
  }
  // Far above any real layer, and low enough that no size below overflows.
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  if (*k > kMaxDim || *n > kMaxDim || *block > kMaxDim) {
    return NodeContext::Invalid(absl::StrCat("K, N and block_size must be at most ", kMaxDim));
  }
  s.k = *k;
  s.n = *n;
  s.block = *block;
  if (s.bits == 4 && s.block % 2 != 0) {
    return NodeContext::Invalid(absl::StrCat("block_size ", s.block, " is odd, which 4-bit blocks cannot be"));
  }
  s.blocks = (s.k + s.block - 1) / s.block;
  return s;
}

// Input i, which must be known at import (a weight, its scales or zero
// points) and hold `count` elements.
absl::StatusOr<const Tensor*> KnownInput(NodeContext& ctx, int i, const char* what, int64_t count) {
  const Tensor* t = ctx.Constant(i);
  if (t == nullptr) return NodeContext::Unsupported(absl::StrCat(what, " must be known at import (an initializer)"));
  if (t->NumElements() != count) {
    return NodeContext::Invalid(
        absl::StrCat(what, " has ", t->NumElements(), " elements, but K, N and block_size make ", count));
  }
  return t;
}

// Each block's zero point less the default 2^(bits - 1), [N, blocks, 1];
// empty when every one is the default.
absl::StatusOr<Tensor> ZeroPointOffsets(NodeContext& ctx, const NBitsShape& s) {
  if (!ctx.HasInput(3)) return Tensor();
  const Tensor* z = ctx.Constant(3);
  if (z == nullptr) return NodeContext::Unsupported("zero_points must be known at import (an initializer)");
  const double center = s.bits == 4 ? 8 : 128;
  Tensor offsets(DType::kF32, {s.n, s.blocks, 1});
  float* out = offsets.data<float>();
  bool any = false;
  if (z->dtype() == DType::kU8) {
    const int64_t row = (s.blocks * s.bits + 7) / 8;  // Bytes per N.
    RETURN_IF_ERROR(KnownInput(ctx, 3, "zero_points", s.n * row).status());
    const uint8_t* bytes = z->data<uint8_t>();
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t b = 0; b < s.blocks; ++b) {
        const uint8_t byte = s.bits == 4 ? bytes[n * row + b / 2] : bytes[n * row + b];
        const int value = s.bits == 4 ? (b % 2 == 0 ? byte & 0x0f : byte >> 4) : byte;
        out[n * s.blocks + b] = static_cast<float>(value - center);
        any |= value != center;
      }
    }
  } else if (IsFloatingPoint(z->dtype())) {
    RETURN_IF_ERROR(KnownInput(ctx, 3, "zero_points", s.n * s.blocks).status());
    for (int64_t i = 0; i < s.n * s.blocks; ++i) {
      out[i] = static_cast<float>(z->GetAsDouble(i) - center);
      any |= out[i] != 0;
    }
  } else {
    return NodeContext::Invalid(absl::StrCat("zero_points of ", DTypeName(z->dtype()), " (u8 or floats)"));
  }
  return any ? offsets : Tensor();
}

// The stored integers as f32 values less the default zero point: for 4
// bits each nibble's top bit flipped, then graft::unpack_int4.
absl::StatusOr<Node*> CenteredValues(NodeContext& ctx, const NBitsShape& s, const Tensor& b) {
  const int64_t blob = s.block * s.bits / 8;
  Tensor stored(DType::kU8, {s.n, s.blocks, blob});
  const uint8_t* from = b.data<uint8_t>();
  uint8_t* to = stored.data<uint8_t>();
  const uint8_t flip = s.bits == 4 ? 0x88 : 0x80;  // 8-bit: q - 128 as two's complement.
  for (int64_t i = 0; i < stored.NumElements(); ++i) to[i] = from[i] ^ flip;
  if (s.bits == 8) stored = Tensor(DType::kI8, stored.dims(), stored.storage());
  ASSIGN_OR_RETURN(Node * ints, ctx.ConstantNode(stored, "_q"));
  if (s.bits == 4) {
    ASSIGN_OR_RETURN(ints, ctx.Call(std::string(kUnpackInt4Op), {ints}));
  }
  return ctx.Call("cast", {ints, DType::kF32});
}

absl::Status ConvertMatMulNBits(NodeContext& ctx) {
  ASSIGN_OR_RETURN(NBitsShape s, ReadShape(ctx));
  if (ctx.HasInput(4)) {
    return NodeContext::Unsupported("g_idx (a permuted order of K) is not supported");
  }
  ASSIGN_OR_RETURN(TensorType ta, ctx.InputType(0));
  if (ta.rank() < 1 || !ta.shape.back().is_constant() || ta.shape.back().value() != s.k) {
    return NodeContext::Invalid(absl::StrCat("A ", ta.ToString(), " must end in K = ", s.k));
  }
  ASSIGN_OR_RETURN(const Tensor* b, KnownInput(ctx, 1, "B", s.n * s.blocks * (s.block * s.bits / 8)));
  if (b->dtype() != DType::kU8) return NodeContext::Invalid(absl::StrCat("B is ", DTypeName(b->dtype()), ", not u8"));
  ASSIGN_OR_RETURN(const Tensor* scales, KnownInput(ctx, 2, "scales", s.n * s.blocks));
  Tensor scale_f32(DType::kF32, {s.n, s.blocks, 1});
  for (int64_t i = 0; i < s.n * s.blocks; ++i) scale_f32.data<float>()[i] = static_cast<float>(scales->GetAsDouble(i));
  ASSIGN_OR_RETURN(Tensor offsets, ZeroPointOffsets(ctx, s));

  ASSIGN_OR_RETURN(Node * w, CenteredValues(ctx, s, *b));
  if (offsets.defined()) {
    ASSIGN_OR_RETURN(Node * o, ctx.ConstantNode(offsets, "_zero_points"));
    ASSIGN_OR_RETURN(w, ctx.Call("sub", {w, o}));
  }
  ASSIGN_OR_RETURN(Node * scale_node, ctx.ConstantNode(scale_f32, "_scales"));
  ASSIGN_OR_RETURN(w, ctx.Call("mul", {w, scale_node}));
  ASSIGN_OR_RETURN(w, ctx.Call("reshape", {w, Argument::IntList({s.n, s.blocks * s.block})}));
  if (s.blocks * s.block != s.k) {  // The last block's padding.
    ASSIGN_OR_RETURN(w, ctx.Call("slice", {w, int64_t{1}, int64_t{0}, s.k}));
  }
  if (ta.dtype != DType::kF32) {
    ASSIGN_OR_RETURN(w, ctx.Call("cast", {w, ta.dtype}));
  }
  ASSIGN_OR_RETURN(Node * a, ctx.Input(0, "A"));
  Argument bias;
  if (ctx.HasInput(5)) {
    ASSIGN_OR_RETURN(Node * c, ctx.Input(5, "bias"));
    bias = c;
  }
  ASSIGN_OR_RETURN(Node * y, ctx.Call("linear", {a, w, bias}));
  return ctx.SetOutput(0, y);
}

}  // namespace

void AddMatMulNBitsConverters(std::vector<OpConverter>& table) {
  table.push_back({.op_type = "com.microsoft.MatMulNBits", .convert = ConvertMatMulNBits});
}

}  // namespace graft::onnx_import
