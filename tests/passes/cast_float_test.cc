#include "passes/cast_float.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "graph/tensor.h"
#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Weights at bf16's rounding edges, each with the bits it must become:
// ties to even both ways, a carry into the exponent, the largest and
// lowest floats (saturate to bf16's, where rounding would give infinity:
// a mask's torch.finfo(f32).min stays finite), infinities, signed zero,
// subnormals, and NaNs
// (kept NaN, made quiet, sign kept).
struct Case {
  float value;
  uint16_t bf16;
};
const std::vector<Case>& BFloat16Cases() {
  static const std::vector<Case> cases = {
      {1.0f, 0x3f80},
      {FromBits(0x3f808000), 0x3f80},  // 1 + 2^-8: a tie, to even (down).
      {FromBits(0x3f818000), 0x3f82},  // A tie, to even (up).
      {FromBits(0x3f808001), 0x3f81},  // Just above the tie.
      {FromBits(0x3fffffff), 0x4000},  // Carries into the exponent.
      {-2.5f, 0xc020},
      {std::numeric_limits<float>::max(), 0x7f7f},
      {std::numeric_limits<float>::lowest(), 0xff7f},
      {FromBits(0x7f7f7fff), 0x7f7f},  // Just below the tie: rounds down anyway.
      {FromBits(0x7f7f8000), 0x7f7f},  // The tie, which rounds to infinity: saturates.
      {FromBits(0xff7f8000), 0xff7f},
      {std::numeric_limits<float>::infinity(), 0x7f80},
      {-std::numeric_limits<float>::infinity(), 0xff80},
      {-0.0f, 0x8000},
      {FromBits(0x00018000), 0x0002},  // A subnormal tie, to even (up).
      {FromBits(0x7f800001), 0x7fc0},  // Signalling NaN: quiet, not infinity.
      {FromBits(0xffa00000), 0xffe0},  // Negative NaN keeps its sign.
  };
  return cases;
}

// Casts `m` to bf16; it must stay a valid module.
void CastToBFloat16(Module& m) {
  absl::StatusOr<bool> changed = CastFloatModule(m, DType::kBF16);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(Verify(m).ok());
}

Module WeightedAdd(int64_t n) {
  Module m = Parse(absl::StrCat(R"(
tensor w : f32[)", n, R"(] = zeros
graph():
    %x : f32[)", n, R"(] = placeholder[target=x]
    %w : f32[)", n, R"(] = get_attr[target=w]
    %y = call_function[target=add](args = (%x, %w), kwargs = {})
    return y
)"));
  return m;
}

TEST(CastFloatTest, WeightsRoundToNearestEvenInBFloat16) {
  const std::vector<Case>& cases = BFloat16Cases();
  const int64_t n = static_cast<int64_t>(cases.size());
  Module m = WeightedAdd(n);
  Tensor w(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) w.data<float>()[i] = cases[i].value;
  m.SetTensor("w", w, m.tensors().at("w").init);
  absl::StatusOr<bool> changed = CastFloatModule(m, DType::kBF16);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  const Tensor& narrowed = m.tensors().at("w").value;
  ASSERT_EQ(narrowed.dtype(), DType::kBF16);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(narrowed.data<uint16_t>()[i], cases[i].bf16) << "weight " << i;
    EXPECT_EQ(narrowed.data<uint16_t>()[i], SaturatedBFloat16(cases[i].value)) << "weight " << i;
  }
  // The f32 input is cast where it enters, the output back to f32.
  EXPECT_EQ(Ops(m.graph()), "cast add cast");
  EXPECT_EQ(m.graph().output()->inputs()[0]->type()->dtype, DType::kF32);
  EXPECT_TRUE(Verify(m).ok());
}

// `m`'s weight w set to `w` and the module cast to `dtype`: every value is
// `scalar` of the weight it was cast from (the first few that differ are
// reported).
void ExpectCastAsScalar(Module& m, const Tensor& w, DType dtype, uint16_t (*scalar)(float)) {
  m.SetTensor("w", w, m.tensors().at("w").init);
  ASSERT_TRUE(CastFloatModule(m, dtype).ok());
  const Tensor& narrowed = m.tensors().at("w").value;
  ASSERT_EQ(narrowed.dtype(), dtype);
  int wrong = 0;
  for (int64_t i = 0; i < w.NumElements(); ++i) {
    const uint16_t want = scalar(w.data<float>()[i]);
    if (narrowed.data<uint16_t>()[i] != want && ++wrong <= 5) {
      ADD_FAILURE() << "weight " << i << " (bits " << std::hex << w.data<uint32_t>()[i]
                    << "): " << narrowed.data<uint16_t>()[i] << ", want " << want;
    }
  }
  EXPECT_EQ(wrong, 0);
}

// The cast runs vectorized for the widest vectors the CPU has: every bit
// pattern class (ties, NaNs, infinities, subnormals) over enough weights
// for the vector loop and its tail, against the scalar rounding.
TEST(CastFloatTest, TheVectorizedBFloat16CastRoundsAsTheScalarOne) {
  const int64_t n = (int64_t{1} << 17) + 13;
  Module m = WeightedAdd(n);
  Tensor w(DType::kF32, {n});
  std::mt19937 rng(7);
  const std::vector<Case>& cases = BFloat16Cases();
  uint32_t* bits = w.data<uint32_t>();
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: bits[i] = static_cast<uint32_t>(rng()); break;  // Any pattern, NaNs included.
      case 1: bits[i] = (static_cast<uint32_t>(rng()) & 0xffff0000u) | 0x8000u; break;  // A tie.
      case 2: bits[i] = static_cast<uint32_t>(rng()) & 0x807fffffu; break;  // Subnormal.
      default: w.data<float>()[i] = cases[i % cases.size()].value; break;
    }
  }
  ExpectCastAsScalar(m, w, DType::kBF16, SaturatedBFloat16);
}

// The same for f16 (the CPU's own conversion where it has one).
TEST(CastFloatTest, TheVectorizedHalfCastRoundsAsTheScalarOne) {
  const int64_t n = (int64_t{1} << 17) + 13;
  Module m = WeightedAdd(n);
  Tensor w(DType::kF32, {n});
  std::mt19937 rng(8);
  uint32_t* bits = w.data<uint32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = static_cast<uint32_t>(rng());
    switch (i % 5) {
      case 0: bits[i] = r; break;  // Any pattern, NaNs included.
      // Ties and near-ties of f16's normal range, and its overflow edge.
      case 1: bits[i] = (((r % 31) + 112) << 23) | (r & 0x807fe000u) | 0x1000u; break;
      case 2: bits[i] = ((r % 12 + 102) << 23) | (r & 0x807fffffu); break;  // f16 subnormals.
      case 3: bits[i] = 0x477fe000u + (r % 0x4000u); break;  // 65504 .. past 65520.
      default: bits[i] = r & 0x807fffffu; break;  // f32 subnormals.
    }
  }
  ExpectCastAsScalar(m, w, DType::kF16, SaturatedHalf);
}

// Past f16's range a finite weight saturates (a mask's -1e9 stays finite,
// so that 0 times it is 0), an infinite one stays infinite.
TEST(CastFloatTest, WeightsBecomeHalf) {
  Module m = WeightedAdd(6);
  Tensor w(DType::kF32, {6});
  const float values[6] = {1.0f, -65504.0f, 1e6f, -1e9f, std::numeric_limits<float>::infinity(),
                           -65520.0f};
  for (int i = 0; i < 6; ++i) w.data<float>()[i] = values[i];
  m.SetTensor("w", w, m.tensors().at("w").init);
  ASSERT_TRUE(CastFloatModule(m, DType::kF16).ok());
  const Tensor& narrowed = m.tensors().at("w").value;
  ASSERT_EQ(narrowed.dtype(), DType::kF16);
  const uint16_t want[6] = {0x3c00, 0xfbff, 0x7bff, 0xfbff, 0x7c00, 0xfbff};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(narrowed.data<uint16_t>()[i], want[i]) << values[i];
}

// Weight-only quantization's cast(q) * scales (both module tensors) casts
// to the new float type, so the product sees one dtype; a cast of
// positions (arange) stays f32: bf16 holds integers exactly only to 256.
TEST(CastFloatTest, DequantizationCastsToTheNewFloatType) {
  Module m = Parse(R"(
tensor q : i8[300] = zeros
tensor s : f32[300] = zeros
graph():
    %x : f32[300] = placeholder[target=x]
    %q = get_attr[target=q]
    %s = get_attr[target=s]
    %c = call_function[target=cast](args = (%q, f32), kwargs = {})
    %w = call_function[target=mul](args = (%c, %s), kwargs = {})
    %y = call_function[target=add](args = (%x, %w), kwargs = {})
    %i = call_function[target=arange](args = (0, 300), kwargs = {})
    %p = call_function[target=cast](args = (%i, f32), kwargs = {})
    return (y, p)
)");
  absl::StatusOr<bool> changed = CastFloatModule(m, DType::kBF16);
  ASSERT_TRUE(changed.ok()) << changed.status();
  int seen = 0;
  for (const Node* n : m.graph().nodes()) {
    if (n->name() == "c" || n->name() == "w") {
      EXPECT_EQ(n->type()->dtype, DType::kBF16) << n->name();
      ++seen;
    }
    if (n->name() == "p") {
      EXPECT_EQ(n->type()->dtype, DType::kF32);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
  EXPECT_TRUE(Verify(m).ok());
}

// f32 values the model makes itself (an LSTM's zero state as a `full` of
// dtype f32, positions cast to f32 and scaled) stay f32 where they are
// computed, and are cast to the new type at the op where they meet its
// values: the products take one dtype, and the add would promote the
// scores back to f32 for the rest of the model.
TEST(CastFloatTest, F32ValuesTheModelMakesAreNarrowedWhereTheyMeetTheModel) {
  Module m = Parse(R"(
tensor w : f32[4,8] = zeros
tensor v : f32[4,8] = zeros
graph():
    %x : f32[2,8] = placeholder[target=x]
    %w = get_attr[target=w]
    %v = get_attr[target=v]
    %h = call_function[target=full](args = ([2, 8], 0.0), kwargs = {dtype: f32})
    %a = call_function[target=linear](args = (%h, %w), kwargs = {})
    %b = call_function[target=linear](args = (%x, %w), kwargs = {})
    %i = call_function[target=arange](args = (0, 4), kwargs = {})
    %p = call_function[target=cast](args = (%i, f32), kwargs = {})
    %q = call_function[target=mul](args = (%p, 0.5), kwargs = {})
    %s = call_function[target=add](args = (%a, %q), kwargs = {})
    %t = call_function[target=add](args = (%s, %b), kwargs = {})
    %y = call_function[target=matmul](args = (%t, %v), kwargs = {})
    return y
)");
  ASSERT_NO_FATAL_FAILURE(CastToBFloat16(m));
  // The input's cast, then the two f32 values each cast where they meet
  // bf16 ones (the state at its product, the positions at the add), and
  // the output's cast back to f32.
  EXPECT_EQ(Ops(m.graph()),
            "cast full cast linear linear arange cast mul cast add add matmul cast");
  for (const Node* n : m.graph().nodes()) {
    if (!n->type().has_value()) continue;
    const DType want = n->name() == "h" || n->name() == "p" || n->name() == "q" ? DType::kF32
                       : n->name() == "i"                                      ? DType::kI64
                       : n->op() == OpCode::kPlaceholder || n->users().empty() ||
                               n->users()[0]->op() == OpCode::kOutput
                           ? DType::kF32
                           : DType::kBF16;
    EXPECT_EQ(n->type()->dtype, want) << n->name();
  }
}

// An f32 value met by two float ops is cast once, right after it is made;
// a comparison with a narrowed value takes it as it is (positions past
// 256 compare exactly, which bf16 would not hold).
TEST(CastFloatTest, AnF32ValueIsCastOnceAndComparedAsItIs) {
  Module m = Parse(R"(
graph():
    %x : f32[300] = placeholder[target=x]
    %i = call_function[target=arange](args = (0, 300), kwargs = {})
    %p = call_function[target=cast](args = (%i, f32), kwargs = {})
    %a = call_function[target=add](args = (%x, %p), kwargs = {})
    %b = call_function[target=mul](args = (%p, %x), kwargs = {})
    %c = call_function[target=lt](args = (%p, %x), kwargs = {})
    return (a, b, c)
)");
  ASSERT_NO_FATAL_FAILURE(CastToBFloat16(m));
  EXPECT_EQ(Ops(m.graph()), "cast arange cast cast add mul lt cast cast");
  for (const Node* n : m.graph().nodes()) {
    if (n->name() == "c") {
      EXPECT_EQ(n->inputs()[0]->name(), "p");  // The f32 positions, not their cast.
      EXPECT_EQ(n->type()->dtype, DType::kBool);
    }
    if (n->name() == "a" || n->name() == "b") {
      EXPECT_EQ(n->type()->dtype, DType::kBF16) << n->name();
    }
  }
}

// Values cast from module tensors (dequantized int8 weights by scales
// through a view) are no positions: the product of a weight and its
// scales stays narrow, as the linear layer that reads it.
TEST(CastFloatTest, DequantizedWeightsStayNarrowThroughAViewOfTheirScales) {
  Module m = Parse(R"(
tensor q : i8[4,8] = zeros
tensor s : f32[4] = zeros
graph():
    %x : f32[2,8] = placeholder[target=x]
    %q = get_attr[target=q]
    %s = get_attr[target=s]
    %c = call_function[target=cast](args = (%q, f32), kwargs = {})
    %u = call_function[target=unsqueeze](args = (%s, 1), kwargs = {})
    %w = call_function[target=mul](args = (%c, %u), kwargs = {})
    %y = call_function[target=linear](args = (%x, %w), kwargs = {})
    return y
)");
  ASSERT_NO_FATAL_FAILURE(CastToBFloat16(m));
  for (const Node* n : m.graph().nodes()) {
    if (n->name() == "w" || n->name() == "y") {
      EXPECT_EQ(n->type()->dtype, DType::kBF16) << n->name();
    }
  }
  EXPECT_EQ(m.tensors().count("s_f32"), 0u);  // No f32 copy of the scales.
}

TEST(CastFloatTest, OnlyToHalfOrBFloat16) {
  Module m = WeightedAdd(2);
  absl::StatusOr<bool> changed = CastFloatModule(m, DType::kI8);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("f16 or bf16, not i8"), std::string::npos)
      << changed.status();
}

}  // namespace
}  // namespace graft::passes
