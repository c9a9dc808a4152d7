// Elementwise kernels against hand-worked values.

#include <cmath>
#include <limits>

#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kE = 2.718281828459045;

void ExpectUnary(absl::string_view op, std::vector<double> in,
                 std::vector<double> expected, double tol = 1e-6) {
  const int64_t n = static_cast<int64_t>(in.size());
  GRAFT_ASSERT_OK_AND_ASSIGN(out, RunUnary(op, F32({n}, in)));
  ExpectTensor(out, DType::kF32, {n}, expected, tol);
}

TEST(ElementwiseKernels, UnaryFloatMath) {
  ExpectUnary("neg", {-2, -0.5, 0, 1, 4}, {2, 0.5, 0, -1, -4});
  ExpectUnary("abs", {-2, -0.5, 0, 1, 4}, {2, 0.5, 0, 1, 4});
  ExpectUnary("relu", {-2, -0.5, 0, 1, 4}, {0, 0, 0, 1, 4});
  ExpectUnary("relu", {kNaN}, {kNaN});
  ExpectUnary("exp", {0, 1, -1}, {1, kE, 1 / kE});
  ExpectUnary("log", {1, kE, 0, -1}, {0, 1, -kInf, kNaN});
  ExpectUnary("sqrt", {0, 4, 2.25, -1}, {0, 2, 1.5, kNaN});
  ExpectUnary("rsqrt", {4, 0.25, 0}, {0.5, 2, kInf});
  ExpectUnary("sin", {0, M_PI / 2, -M_PI / 2}, {0, 1, -1});
  ExpectUnary("cos", {0, M_PI}, {1, -1});
  ExpectUnary("tanh", {0, 1, -1}, {0, 0.7615941559557649, -0.7615941559557649});
  // sigmoid(ln 3) = 1 / (1 + 1/3) = 3/4.
  ExpectUnary("sigmoid", {0, std::log(3.0), -std::log(3.0)}, {0.5, 0.75, 0.25});
  ExpectUnary("silu", {0, std::log(3.0)}, {0, 0.75 * std::log(3.0)});
  ExpectUnary("erf", {0, 1, -1}, {0, 0.8427007929497149, -0.8427007929497149});
  ExpectUnary("tan", {0, M_PI / 4, -M_PI / 4}, {0, 1, -1});
  ExpectUnary("asin", {0, 0.5, -1, 2}, {0, M_PI / 6, -M_PI / 2, kNaN});
  ExpectUnary("acos", {1, 0.5, -1, -2}, {0, M_PI / 3, M_PI, kNaN});
  ExpectUnary("atan", {0, 1, -kInf}, {0, M_PI / 4, -M_PI / 2});
  // (e - 1/e) / 2 and (e + 1/e) / 2.
  ExpectUnary("sinh", {0, 1, -1}, {0, 1.1752011936438014, -1.1752011936438014});
  ExpectUnary("cosh", {0, 1, -1}, {1, 1.5430806348152437, 1.5430806348152437});
  // ln(1 + sqrt 2), ln(2 + sqrt 3), ln(3) / 2.
  ExpectUnary("asinh", {0, 1, -1}, {0, 0.881373587019543, -0.881373587019543});
  ExpectUnary("acosh", {1, 2, 0.5}, {0, 1.3169578969248166, kNaN});
  ExpectUnary("atanh", {0, 0.5, 1, 2}, {0, 0.5493061443340549, kInf, kNaN});
  ExpectUnary("reciprocal", {2, -4, 0}, {0.5, -0.25, kInf});
}

TEST(ElementwiseKernels, Gelu) {
  // 0.5 x (1 + erf(x / sqrt 2)): erf(1/sqrt 2) = 0.6826894921.
  ExpectUnary("gelu", {0, 1, -1},
              {0, 0.8413447460685429, -0.15865525393145707});
  // tanh form at 1: 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)).
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, RunUnary("gelu", F32({2}, {0, 1}), {}, {{"approximate", "tanh"}}));
  ExpectTensor(out, DType::kF32, {2}, {0, 0.8411919906082768});
  absl::StatusOr<Tensor> bad =
      RunUnary("gelu", F32({1}, {0}), {}, {{"approximate", "fast"}});
  EXPECT_FALSE(bad.ok());
}

TEST(ElementwiseKernels, LeakyRelu) {
  GRAFT_ASSERT_OK_AND_ASSIGN(out, RunUnary("leaky_relu", F32({3}, {-2, 0, 3})));
  ExpectTensor(out, DType::kF32, {3}, {-0.02, 0, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(out2,
                             RunUnary("leaky_relu", F32({2}, {-2, 3}), {0.5}));
  ExpectTensor(out2, DType::kF32, {2}, {-1, 3});
}

TEST(ElementwiseKernels, Clamp) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      both, RunUnary("clamp", F32({4}, {-2, 0.5, 3, kNaN}), {-1.0, 1.0}));
  ExpectTensor(both, DType::kF32, {4}, {-1, 0.5, 1, kNaN});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      lo, RunUnary("clamp", F32({3}, {-2, 0.5, 3}), {}, {{"min", 0.0}}));
  ExpectTensor(lo, DType::kF32, {3}, {0, 0.5, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      hi, RunUnary("clamp", F32({3}, {-2, 0.5, 3}), {}, {{"max", 0}}));
  ExpectTensor(hi, DType::kF32, {3}, {-2, 0, 0});
  // Integer input, integer bounds: stays i32.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      ints, RunUnary("clamp", T(DType::kI32, {3}, {-5, 5, 10}), {0, 7}));
  ExpectTensor(ints, DType::kI32, {3}, {0, 5, 7});
  // A float bound promotes an integer input to f32, as in PyTorch.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      promoted,
      RunUnary("clamp", T(DType::kI32, {3}, {-5, 5, 10}), {}, {{"min", 0.5}}));
  ExpectTensor(promoted, DType::kF32, {3}, {0.5, 5, 10});
  // min > max gives max everywhere (clamp applies min, then max).
  GRAFT_ASSERT_OK_AND_ASSIGN(crossed,
                             RunUnary("clamp", F32({2}, {-9, 9}), {2.0, 1.0}));
  ExpectTensor(crossed, DType::kF32, {2}, {1, 1});
  absl::StatusOr<Tensor> none = RunUnary("clamp", F32({1}, {0}));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("min and max"));
}

TEST(ElementwiseKernels, CastTruncatesAndSaturates) {
  const Tensor x = F32({5}, {1.7, -1.7, 300, -300, kNaN});
  GRAFT_ASSERT_OK_AND_ASSIGN(i8, RunUnary("cast", x, {DType::kI8}));
  ExpectTensor(i8, DType::kI8, {5}, {1, -1, 127, -128, 0});
  GRAFT_ASSERT_OK_AND_ASSIGN(u8, RunUnary("cast", x, {DType::kU8}));
  ExpectTensor(u8, DType::kU8, {5}, {1, 0, 255, 0, 0});
  GRAFT_ASSERT_OK_AND_ASSIGN(i32, RunUnary("cast", x, {DType::kI32}));
  ExpectTensor(i32, DType::kI32, {5}, {1, -1, 300, -300, 0});
  // Integer to narrower integer wraps (two's complement), as PyTorch does.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      wrapped, RunUnary("cast", I64({3}, {300, -1, 256}), {DType::kU8}));
  ExpectTensor(wrapped, DType::kU8, {3}, {44, 255, 0});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      b, RunUnary("cast", F32({4}, {0, 0.5, -0.0, kNaN}), {DType::kBool}));
  ExpectTensor(b, DType::kBool, {4}, {0, 1, 0, 1});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      h, RunUnary("cast", T(DType::kI32, {2}, {3, 70000}), {DType::kF16}));
  ExpectTensor(h, DType::kF16, {2}, {3, kInf});
  // A large i64 keeps its exact value through an i64 -> i64 cast.
  Tensor big(DType::kI64, {1});
  big.data<int64_t>()[0] = (int64_t{1} << 62) + 1;
  GRAFT_ASSERT_OK_AND_ASSIGN(same, RunUnary("cast", big, {DType::kI64}));
  EXPECT_EQ(same.data<int64_t>()[0], (int64_t{1} << 62) + 1);
}

// A saturating cast into a narrower float: finite values past its range
// become its largest (f32's lowest, a mask's fill, stays finite in bf16),
// the values that round to the largest anyway too; infinities and NaN
// pass. Without saturate they round to infinity.
TEST(ElementwiseKernels, SaturatingCastsKeepFiniteValuesFinite) {
  const double f32_max = std::numeric_limits<float>::max();
  const double bf16_max = 3.3895313892515355e38;  // 0x7f7f
  const Tensor x = F32({7}, {-f32_max, f32_max, 3.39e38, -kInf, kInf, kNaN, 1.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(bf, RunUnary("cast", x, {DType::kBF16}, {{"saturate", true}}));
  ExpectTensor(bf, DType::kBF16, {7}, {-bf16_max, bf16_max, bf16_max, -kInf, kInf, kNaN, 1.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(plain, RunUnary("cast", x, {DType::kBF16}));
  ExpectTensor(plain, DType::kBF16, {7}, {-kInf, kInf, bf16_max, -kInf, kInf, kNaN, 1.5});
  // f16: 65519 rounds to 65504 either way; 65520 is the tie that rounds
  // to infinity.
  const Tensor y = T(DType::kF64, {6}, {65519, 65520, -1e9, 1e300, -kInf, 2.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(h, RunUnary("cast", y, {DType::kF16}, {{"saturate", true}}));
  ExpectTensor(h, DType::kF16, {6}, {65504, 65504, -65504, 65504, -kInf, 2.5});
  ExpectTensor(y, DType::kF64, {6}, {65519, 65520, -1e9, 1e300, -kInf, 2.5});  // Left as it was.
  GRAFT_ASSERT_OK_AND_ASSIGN(hp, RunUnary("cast", y, {DType::kF16}));
  ExpectTensor(hp, DType::kF16, {6}, {65504, kInf, -kInf, kInf, -kInf, 2.5});
  // Into a wider float or an integer, saturate changes nothing.
  GRAFT_ASSERT_OK_AND_ASSIGN(i8, RunUnary("cast", x, {DType::kI8}, {{"saturate", true}}));
  ExpectTensor(i8, DType::kI8, {7}, {-128, 127, 127, -128, 127, 0, 1});
}

TEST(ElementwiseKernels, IntegerUnaryOps) {
  GRAFT_ASSERT_OK_AND_ASSIGN(neg,
                             RunUnary("neg", T(DType::kI32, {2}, {3, -4})));
  ExpectTensor(neg, DType::kI32, {2}, {-3, 4});
  // -(-128) wraps in i8.
  GRAFT_ASSERT_OK_AND_ASSIGN(neg8, RunUnary("neg", T(DType::kI8, {1}, {-128})));
  ExpectTensor(neg8, DType::kI8, {1}, {-128});
  GRAFT_ASSERT_OK_AND_ASSIGN(abs, RunUnary("abs", I64({2}, {-3, 3})));
  ExpectTensor(abs, DType::kI64, {2}, {3, 3});
  GRAFT_ASSERT_OK_AND_ASSIGN(relu,
                             RunUnary("relu", T(DType::kI32, {2}, {-1, 2})));
  ExpectTensor(relu, DType::kI32, {2}, {0, 2});
  // Float ops on integers compute in f32.
  GRAFT_ASSERT_OK_AND_ASSIGN(exp, RunUnary("exp", T(DType::kI32, {2}, {0, 1})));
  ExpectTensor(exp, DType::kF32, {2}, {1, kE});
  GRAFT_ASSERT_OK_AND_ASSIGN(rec, RunUnary("reciprocal", I64({2}, {2, 0})));
  ExpectTensor(rec, DType::kF32, {2}, {0.5, kInf});
  absl::StatusOr<Tensor> neg_bool = RunUnary("neg", T(DType::kBool, {1}, {1}));
  ASSERT_FALSE(neg_bool.ok());
  EXPECT_THAT(neg_bool.status().message(), HasSubstr("node %neg (neg)"));
}

TEST(ElementwiseKernels, LogicalNot) {
  GRAFT_ASSERT_OK_AND_ASSIGN(out,
                             RunUnary("logical_not", F32({3}, {0, 2, kNaN})));
  ExpectTensor(out, DType::kBool, {3}, {1, 0, 0});
}

TEST(ElementwiseKernels, AddSameShape) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, RunBinary("add", F32({3}, {1, 2, 3}), F32({3}, {10, 20, 30})));
  ExpectTensor(out, DType::kF32, {3}, {11, 22, 33});
}

TEST(ElementwiseKernels, BroadcastingTrickyShapes) {
  // [3,1,5] + [4,1] -> [3,4,5]; a = 100 i + k, b = 10 j.
  std::vector<double> a, b, expected;
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 5; ++k) a.push_back(100 * i + k);
  }
  for (int j = 0; j < 4; ++j) b.push_back(10 * j);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 5; ++k) expected.push_back(100 * i + 10 * j + k);
    }
  }
  GRAFT_ASSERT_OK_AND_ASSIGN(
      out, RunBinary("add", F32({3, 1, 5}, a), F32({4, 1}, b)));
  ExpectTensor(out, DType::kF32, {3, 4, 5}, expected);
  // The same with the operands swapped.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      swapped, RunBinary("add", F32({4, 1}, b), F32({3, 1, 5}, a)));
  ExpectTensor(swapped, DType::kF32, {3, 4, 5}, expected);
  // A rank-0 tensor broadcasts to anything.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      scalar, RunBinary("mul", F32({}, {2}), F32({2, 2}, {1, 2, 3, 4})));
  ExpectTensor(scalar, DType::kF32, {2, 2}, {2, 4, 6, 8});
  GRAFT_ASSERT_OK_AND_ASSIGN(both0,
                             RunBinary("sub", F32({}, {5}), F32({}, {7})));
  ExpectTensor(both0, DType::kF32, {}, {-2});
  // Zero-size dims broadcast like any other size.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      z1, RunBinary("add", F32({0, 3}, {}), F32({3}, {1, 2, 3})));
  ExpectTensor(z1, DType::kF32, {0, 3}, {});
  GRAFT_ASSERT_OK_AND_ASSIGN(z2,
                             RunBinary("add", F32({2, 0}, {}), F32({1}, {1})));
  ExpectTensor(z2, DType::kF32, {2, 0}, {});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      z3, RunBinary("add", F32({0}, {}), F32({2, 1}, {1, 2})));
  ExpectTensor(z3, DType::kF32, {2, 0}, {});
  // Incompatible: 2 vs 3, and 0 vs 2.
  absl::StatusOr<Tensor> bad =
      RunBinary("add", F32({2}, {1, 2}), F32({3}, {1, 2, 3}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("node %add (add)"));
  EXPECT_THAT(bad.status().message(), HasSubstr("do not broadcast"));
  EXPECT_FALSE(RunBinary("add", F32({0}, {}), F32({2}, {1, 2})).ok());
}

TEST(ElementwiseKernels, ScalarLiteralPromotion) {
  {  // f32 tensor + int literal: f32.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("add", {r.In(F32({2}, {1, 2})), 2}));
    ExpectTensor(out, DType::kF32, {2}, {3, 4});
  }
  {  // i32 tensor + int literal: stays i32.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("add", {r.In(T(DType::kI32, {2}, {1, 2})), 2}));
    ExpectTensor(out, DType::kI32, {2}, {3, 4});
  }
  {  // i32 tensor * float literal: f32.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("mul", {r.In(T(DType::kI32, {2}, {1, 3})), 1.5}));
    ExpectTensor(out, DType::kF32, {2}, {1.5, 4.5});
  }
  {  // bool tensor + int literal: i64 (PyTorch).
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("add", {r.In(T(DType::kBool, {2}, {0, 1})), 1}));
    ExpectTensor(out, DType::kI64, {2}, {1, 2});
  }
  {  // f16 tensor + float literal: stays f16.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("add", {r.In(T(DType::kF16, {1}, {1})), 0.5}));
    ExpectTensor(out, DType::kF16, {1}, {1.5});
  }
  {  // Literal first.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(out, r.Run("sub", {10, r.In(F32({2}, {1, 2}))}));
    ExpectTensor(out, DType::kF32, {2}, {9, 8});
  }
  // A rank-0 tensor does not widen a tensor of its category: i8 + i64[] is
  // i8; a rank-0 float does win over an integer tensor.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      i8, RunBinary("add", T(DType::kI8, {2}, {1, 2}), I64({}, {3})));
  ExpectTensor(i8, DType::kI8, {2}, {4, 5});
  GRAFT_ASSERT_OK_AND_ASSIGN(f64, RunBinary("add", T(DType::kI32, {1}, {1}),
                                            T(DType::kF64, {}, {0.5})));
  ExpectTensor(f64, DType::kF64, {1}, {1.5});
  // Two tensors promote: i32 + f16 -> f16; i8 + u8 -> i32 (nearest to i16).
  GRAFT_ASSERT_OK_AND_ASSIGN(h, RunBinary("add", T(DType::kI32, {1}, {2}),
                                          T(DType::kF16, {1}, {0.5})));
  ExpectTensor(h, DType::kF16, {1}, {2.5});
  GRAFT_ASSERT_OK_AND_ASSIGN(mixed, RunBinary("add", T(DType::kI8, {1}, {-1}),
                                              T(DType::kU8, {1}, {200})));
  ExpectTensor(mixed, DType::kI32, {1}, {199});
}

TEST(ElementwiseKernels, SubMulDiv) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      sub, RunBinary("sub", F32({2}, {5, 3}), F32({2}, {1, 4})));
  ExpectTensor(sub, DType::kF32, {2}, {4, -1});
  EXPECT_FALSE(
      RunBinary("sub", T(DType::kBool, {1}, {1}), T(DType::kBool, {1}, {0}))
          .ok());
  // i32 multiplication wraps: 65536 * 65536 = 2^32 = 0 (mod 2^32).
  GRAFT_ASSERT_OK_AND_ASSIGN(mul,
                             RunBinary("mul", T(DType::kI32, {2}, {65536, -3}),
                                       T(DType::kI32, {2}, {65536, 7})));
  ExpectTensor(mul, DType::kI32, {2}, {0, -21});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      div, RunBinary("div", F32({4}, {1, -1, 0, 7}), F32({4}, {0, 0, 0, 2})));
  ExpectTensor(div, DType::kF32, {4}, {kInf, -kInf, kNaN, 3.5});
  // True division: integers divide as f32, also by zero (inf, like PyTorch).
  GRAFT_ASSERT_OK_AND_ASSIGN(
      idiv, RunBinary("div", I64({3}, {7, -7, 1}), I64({3}, {2, 2, 0})));
  ExpectTensor(idiv, DType::kF32, {3}, {3.5, -3.5, kInf});
}

TEST(ElementwiseKernels, Pow) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      f, RunBinary("pow", F32({3}, {2, 4, -8}), F32({3}, {3, 0.5, 1.0 / 3})));
  ExpectTensor(f, DType::kF32, {3}, {8, 2, kNaN});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      i, RunBinary("pow", I64({4}, {2, 3, 0, -2}), I64({4}, {10, 3, 0, 3})));
  ExpectTensor(i, DType::kI64, {4}, {1024, 27, 1, -8});
  // Integers to negative powers are refused (PyTorch raises too); the
  // error names the node.
  absl::StatusOr<Tensor> neg =
      RunBinary("pow", I64({2}, {2, 2}), I64({2}, {1, -1}));
  ASSERT_FALSE(neg.ok());
  EXPECT_THAT(neg.status().message(), HasSubstr("node %pow (pow)"));
  EXPECT_THAT(neg.status().message(), HasSubstr("negative"));
}

TEST(ElementwiseKernels, MaximumMinimumPropagateNaN) {
  GRAFT_ASSERT_OK_AND_ASSIGN(
      mx, RunBinary("maximum", F32({3}, {1, kNaN, 3}), F32({3}, {2, 1, kNaN})));
  ExpectTensor(mx, DType::kF32, {3}, {2, kNaN, kNaN});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      mn, RunBinary("minimum", F32({3}, {1, kNaN, 3}), F32({3}, {2, 1, kNaN})));
  ExpectTensor(mn, DType::kF32, {3}, {1, kNaN, kNaN});
  GRAFT_ASSERT_OK_AND_ASSIGN(mi,
                             RunBinary("maximum", T(DType::kI32, {2}, {-1, 5}),
                                       T(DType::kI32, {2}, {0, 2})));
  ExpectTensor(mi, DType::kI32, {2}, {0, 5});
}

TEST(ElementwiseKernels, Comparisons) {
  const Tensor a = F32({3}, {1, 2, 3}), b = F32({3}, {2, 2, 2});
  const std::vector<std::pair<const char*, std::vector<double>>> cases = {
      {"eq", {0, 1, 0}}, {"ne", {1, 0, 1}}, {"lt", {1, 0, 0}},
      {"le", {1, 1, 0}}, {"gt", {0, 0, 1}}, {"ge", {0, 1, 1}}};
  for (const auto& [op, expected] : cases) {
    GRAFT_ASSERT_OK_AND_ASSIGN(out, RunBinary(op, a, b));
    ExpectTensor(out, DType::kBool, {3}, expected);
  }
  // An integer tensor against a float literal compares in f32.
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      gt, r.Run("gt", {r.In(T(DType::kI32, {2}, {1, 2})), 1.5}));
  ExpectTensor(gt, DType::kBool, {2}, {0, 1});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      nan, RunBinary("eq", F32({1}, {kNaN}), F32({1}, {kNaN})));
  ExpectTensor(nan, DType::kBool, {1}, {0});
}

TEST(ElementwiseKernels, LogicalAndOr) {
  const Tensor a = F32({4}, {0, 1, 2, 0}), b = I64({4}, {0, 0, 3, 5});
  GRAFT_ASSERT_OK_AND_ASSIGN(land, RunBinary("logical_and", a, b));
  ExpectTensor(land, DType::kBool, {4}, {0, 0, 1, 0});
  GRAFT_ASSERT_OK_AND_ASSIGN(lor, RunBinary("logical_or", a, b));
  ExpectTensor(lor, DType::kBool, {4}, {0, 1, 1, 1});
}

TEST(ElementwiseKernels, Where) {
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, r.Run("where", {r.In(T(DType::kBool, {3}, {1, 0, 1})),
                             r.In(F32({3}, {1, 2, 3})), -1.0}));
    ExpectTensor(out, DType::kF32, {3}, {1, -1, 3});
  }
  {  // Three-way broadcasting: [2,1] condition, [1,3] input, [] other.
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out,
        r.Run("where", {r.In(T(DType::kBool, {2, 1}, {1, 0})),
                        r.In(F32({1, 3}, {1, 2, 3})), r.In(F32({}, {9}))}));
    ExpectTensor(out, DType::kF32, {2, 3}, {1, 2, 3, 9, 9, 9});
  }
  {
    OpRunner r;
    absl::StatusOr<Tensor> bad =
        r.Run("where",
              {r.In(F32({1}, {1})), r.In(F32({1}, {1})), r.In(F32({1}, {2}))});
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), HasSubstr("bool"));
  }
}

TEST(ElementwiseKernels, DtypeCoverageForAdd) {
  struct Case {
    DType dtype;
    std::vector<double> a, b, sum;
  };
  const std::vector<Case> cases = {
      {DType::kF32, {1.5, -2}, {0.25, 2}, {1.75, 0}},
      {DType::kF64, {0.1, 1e300}, {0.2, 1e300}, {0.1 + 0.2, 2e300}},
      {DType::kI32, {2147483647, -5}, {1, 3}, {-2147483648.0, -2}},  // Wraps.
      {DType::kI64, {1e15, -1}, {1, -1}, {1e15 + 1, -2}},
      {DType::kI8, {100, -100}, {100, -100}, {-56, 56}},  // Wraps.
      {DType::kU8, {250, 1}, {10, 2}, {4, 3}},            // Wraps.
      {DType::kBool, {0, 1, 1}, {0, 0, 1}, {0, 1, 1}},
      // f16: 1 + 2^-11 is a tie between 1 and 1 + 2^-10; even wins. 60000
      // doubled overflows.
      {DType::kF16,
       {1, 60000, 1.5},
       {0.00048828125, 60000, 0.25},
       {1, kInf, 1.75}},
      // bf16: 1 + 2^-8 ties to 1.
      {DType::kBF16, {1, 1, 256}, {0.00390625, 0.5, 1}, {1, 1.5, 256}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(DTypeName(c.dtype));
    const int64_t n = static_cast<int64_t>(c.a.size());
    GRAFT_ASSERT_OK_AND_ASSIGN(
        out, RunBinary("add", T(c.dtype, {n}, c.a), T(c.dtype, {n}, c.b)));
    ExpectTensor(out, c.dtype, {n}, c.sum, 0);
  }
}

TEST(ElementwiseKernels, HalfPrecisionUnaryRoundsOnce) {
  // exp(1) in f16 is 2.71875 (nearest half to e); in bf16 2.71875 too.
  GRAFT_ASSERT_OK_AND_ASSIGN(h, RunUnary("exp", T(DType::kF16, {1}, {1})));
  ExpectTensor(h, DType::kF16, {1}, {2.71875}, 0);
  GRAFT_ASSERT_OK_AND_ASSIGN(b, RunUnary("exp", T(DType::kBF16, {1}, {1})));
  ExpectTensor(b, DType::kBF16, {1}, {2.71875}, 0);
}

}  // namespace
}  // namespace graft::interp_test
