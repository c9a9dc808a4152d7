// Quantization kernels.

#include <cmath>

#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

using ::testing::HasSubstr;

TEST(QuantKernels, QuantizePerTensorRoundsHalfToEven) {
  // q = clamp(round(x / 0.5) + 10): -1 -> 8, 0 -> 10, 0.25 -> round(0.5) = 0
  // -> 10, 0.75 -> round(1.5) = 2 -> 12, 1.25 -> round(2.5) = 2 -> 12,
  // 100 -> 210 -> 127, -100 -> -190 -> -128.
  GRAFT_ASSERT_OK_AND_ASSIGN(
      q, RunUnary("quantize_per_tensor",
                  F32({7}, {-1, 0, 0.25, 0.75, 1.25, 100, -100}),
                  {0.5, 10, DType::kI8}));
  ExpectTensor(q, DType::kI8, {7}, {8, 10, 10, 12, 12, 127, -128});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      u, RunUnary("quantize_per_tensor", F32({3}, {-1, 1, 1000}),
                  {0.1, 0, DType::kU8}));
  ExpectTensor(u, DType::kU8, {3}, {0, 10, 255});
}

// f8e4m3: x / scale clamped to +-448, then the nearest e4m3 value (ties to
// even); NaN stays NaN; dequantize multiplies back. With scale 0.5: 1 -> 2,
// 300 -> 600 -> 448, -1000 -> -448, 0.0013 -> 0.0026 (1.33 subnormal steps
// of 2^-9) -> 2^-9, 2.3 -> 4.6 -> 4.5 (1.125 * 4), 2.6 -> 5.2 -> 5.0
// (halfway between 5 and 5.5 lies at 5.25: down).
TEST(QuantKernels, Float8QuantizesToTheNearestE4M3Value) {
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      q, r.Run("quantize_per_tensor",
               {r.In(F32({7}, {1, 300, -1000, NAN, 0.0013f, 2.3f, 2.6f})), 0.5, 0,
                DType::kF8E4M3}));
  ASSERT_EQ(q.dtype(), DType::kF8E4M3);
  const std::vector<double> want = {2, 448, -448, NAN, 0x1p-9, 4.5, 5};
  for (int i = 0; i < 7; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(q.GetAsDouble(i)));
    } else {
      EXPECT_EQ(q.GetAsDouble(i), want[i]) << i;
    }
  }
  OpRunner d;
  GRAFT_ASSERT_OK_AND_ASSIGN(x, d.Run("dequantize", {d.In(q), 0.5, 0}));
  EXPECT_EQ(x.GetAsDouble(1), 224);
  EXPECT_EQ(x.GetAsDouble(5), 2.25);
  EXPECT_TRUE(std::isnan(x.GetAsDouble(3)));
}

TEST(QuantKernels, Dequantize) {
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      x, r.Run("dequantize",
               {r.In(T(DType::kI8, {4}, {8, 10, 11, 12})), 0.5, 10}));
  ExpectTensor(x, DType::kF32, {4}, {-1, 0, 0.5, 1});
  // Tensor scale and zero point (single values), f64 output.
  OpRunner r2;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      y, r2.Run("dequantize",
                {r2.In(T(DType::kU8, {2}, {0, 255})), r2.In(F32({}, {0.25})),
                 r2.In(I64({1}, {128}))},
                {{"dtype", DType::kF64}}));
  ExpectTensor(y, DType::kF64, {2}, {-32, 31.75});
}

TEST(QuantKernels, PerChannel) {
  // Row 0: scale 1, zero point 0; row 1: scale 0.5, zero point 1.
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      q,
      r.Run("quantize_per_channel",
            {r.In(F32({2, 3}, {1.4, -2.6, 3, 1.4, -2.6, 3})),
             r.In(F32({2}, {1, 0.5})), r.In(I64({2}, {0, 1})), 0, DType::kI8}));
  ExpectTensor(q, DType::kI8, {2, 3}, {1, -3, 3, 4, -4, 7});
  OpRunner d;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      x, d.Run("dequantize",
               {d.In(T(DType::kI8, {2, 3}, {1, -3, 3, 4, -4, 7})),
                d.In(F32({2}, {1, 0.5})), d.In(I64({2}, {0, 1}))},
               {{"axis", 0}}));
  ExpectTensor(x, DType::kF32, {2, 3}, {1, -3, 3, 1.5, -2.5, 3});
  // Per-channel along the last axis.
  OpRunner r2;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      q2, r2.Run("quantize_per_channel",
                 {r2.In(F32({2, 2}, {1, 1, 2, 2})), r2.In(F32({2}, {1, 0.25})),
                  r2.In(I64({2}, {0, 0})), -1, DType::kU8}));
  ExpectTensor(q2, DType::kU8, {2, 2}, {1, 4, 2, 8});
}

TEST(QuantKernels, RoundTripErrorIsAtMostHalfAScale) {
  const uint32_t seed = FreshSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  const double scale = 0.07;
  const int64_t zp = -3;
  // In range for i8: (q - zp) * scale covers [-8.75, 9.1].
  Tensor x = Random(DType::kF32, {1000}, seed, -8.5, 8.5);
  Module m;
  Node* in = m.graph().Placeholder("x", x.type());
  Node* q = m.graph().CallFunction("quantize_per_tensor",
                                   {in, scale, zp, DType::kI8});
  Node* dq = m.graph().CallFunction("dequantize", {q, scale, zp});
  m.graph().Output(dq);
  interp::Interpreter interpreter(m);
  GRAFT_ASSERT_OK_AND_ASSIGN(out, interpreter.Run({x}));
  ASSERT_EQ(out.size(), 1u);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    EXPECT_LE(std::fabs(out[0].GetAsDouble(i) - x.GetAsDouble(i)),
              scale / 2 + 1e-6)
        << "x = " << x.GetAsDouble(i);
  }
}

// Two 4-bit values a byte, low nibble first, two's complement: 0x12 ->
// (2, 1), 0x7f -> (-1, 7), 0x80 -> (0, -8), 0xf8 -> (-8, -1), 0x00 -> (0, 0).
TEST(QuantKernels, UnpackInt4) {
  OpRunner r;
  GRAFT_ASSERT_OK_AND_ASSIGN(
      x, r.Run("graft::unpack_int4", {r.In(T(DType::kU8, {1, 5}, {0x12, 0x7f, 0x80, 0xf8, 0x00}))}));
  ExpectTensor(x, DType::kI8, {1, 10}, {2, 1, -1, 7, 0, -8, -8, -1, 0, 0});
  OpRunner wrong;  // Only bytes.
  absl::StatusOr<Tensor> i8 = wrong.Run("graft::unpack_int4", {wrong.In(T(DType::kI8, {2}, {1, 2}))});
  ASSERT_FALSE(i8.ok());
  EXPECT_THAT(i8.status().message(), HasSubstr("must be u8"));
}

TEST(QuantKernels, Errors) {
  absl::StatusOr<Tensor> scale0 =
      RunUnary("quantize_per_tensor", F32({1}, {1}), {0.0, 0, DType::kI8});
  ASSERT_FALSE(scale0.ok());
  EXPECT_THAT(scale0.status().message(),
              HasSubstr("node %quantize_per_tensor (quantize_per_tensor)"));
  EXPECT_THAT(scale0.status().message(), HasSubstr("scale"));
  EXPECT_FALSE(
      RunUnary("quantize_per_tensor", F32({1}, {1}), {1.0, 300, DType::kU8})
          .ok());
  EXPECT_FALSE(
      RunUnary("quantize_per_tensor", F32({1}, {1}), {1.0, 0, DType::kF32})
          .ok());
  EXPECT_FALSE(
      RunUnary("quantize_per_tensor", F32({1}, {1}), {1.0, 0, DType::kI32})
          .ok());
  OpRunner r;
  EXPECT_FALSE(r.Run("dequantize", {r.In(F32({1}, {1})), 1.0, 0}).ok());
  OpRunner r2;  // Two scales without an axis.
  EXPECT_FALSE(r2.Run("dequantize", {r2.In(T(DType::kI8, {2}, {1, 2})),
                                     r2.In(F32({2}, {1, 2})), 0})
                   .ok());
  OpRunner r3;  // Wrong number of channel scales.
  EXPECT_FALSE(
      r3.Run("quantize_per_channel",
             {r3.In(F32({2, 2}, {1, 1, 1, 1})), r3.In(F32({3}, {1, 1, 1})),
              r3.In(I64({3}, {0, 0, 0})), 0, DType::kI8})
          .ok());
}

}  // namespace
}  // namespace graft::interp_test
