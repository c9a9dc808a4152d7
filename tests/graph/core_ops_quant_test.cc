// Type rules of the quantization ops (graph/core_ops_quant.cc).

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::ErrorOf;
using op_test::HasType;
using op_test::Sym;
using op_test::T;
using ::testing::AllOf;
using ::testing::HasSubstr;

using QuantTest = op_test::OpTypeTest;

TEST_F(QuantTest, QuantizePerTensor) {
  Node* x = Input(DType::kF32, {Sym("batch"), 8});
  EXPECT_TRUE(HasType(Infer("quantize_per_tensor", {x, 0.1, 0, DType::kI8}),
                      T(DType::kI8, {Sym("batch"), 8})));
  EXPECT_TRUE(HasType(Infer("quantize_per_tensor", {x, 0.1, 128, DType::kU8}),
                      T(DType::kU8, {Sym("batch"), 8})));
  EXPECT_THAT(
      ErrorOf(Infer("quantize_per_tensor", {x, 0.1, 0, DType::kI32})),
      HasSubstr("quantize_per_tensor: dtype must be i8, u8 or f8e4m3, got i32"));
  EXPECT_THAT(ErrorOf(Infer("quantize_per_tensor", {x, 0.1, 300, DType::kU8})),
              HasSubstr("zero_point 300 is out of range for u8 [0, 255]"));
  EXPECT_THAT(ErrorOf(Infer("quantize_per_tensor", {x, 0.1, -129, DType::kI8})),
              HasSubstr("out of range for i8 [-128, 127]"));
  EXPECT_THAT(ErrorOf(Infer("quantize_per_tensor", {x, 0.0, 0, DType::kI8})),
              HasSubstr("scale must be positive"));
  Node* q = Input(DType::kI8, {4}, "q");
  EXPECT_THAT(ErrorOf(Infer("quantize_per_tensor", {q, 0.1, 0, DType::kI8})),
              AllOf(HasSubstr("input i8[4]"), HasSubstr("floating point")));
}

// f8e4m3 is symmetric (zero point 0), and a storage type: views move it
// and dequantize reads it, nothing else.
TEST_F(QuantTest, Float8) {
  Node* x = Input(DType::kF32, {Sym("batch"), 8});
  EXPECT_TRUE(HasType(Infer("quantize_per_tensor", {x, 0.1, 0, DType::kF8E4M3}),
                      T(DType::kF8E4M3, {Sym("batch"), 8})));
  EXPECT_THAT(ErrorOf(Infer("quantize_per_tensor", {x, 0.1, 3, DType::kF8E4M3})),
              HasSubstr("zero_point must be 0 for f8e4m3, got 3"));
  Node* f8 = Input(DType::kF8E4M3, {4, 8}, "f8");
  EXPECT_TRUE(HasType(Infer("dequantize", {f8, 0.1, 0}), T(DType::kF32, {4, 8})));
  EXPECT_TRUE(HasType(Infer("transpose", {f8, 0, 1}), T(DType::kF8E4M3, {8, 4})));
  EXPECT_THAT(ErrorOf(Infer("add", {f8, f8})),
              AllOf(HasSubstr("add: %f8 is f8e4m3[4,8]"),
                    HasSubstr("only moved (views) and read by dequantize")));
  EXPECT_THAT(ErrorOf(Infer("cast", {f8, DType::kF32})), HasSubstr("f8e4m3"));
  // Views move bytes: never into another dtype, and pad fills with 0 only.
  Node* f32 = Input(DType::kF32, {4, 8}, "y");
  Node* i8 = Input(DType::kI8, {4, 8}, "z");
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{f8, f8}), 0}),
                      T(DType::kF8E4M3, {8, 8})));
  EXPECT_THAT(ErrorOf(Infer("concat", {Argument(ArgumentList{f8, f32}), 0})),
              HasSubstr("a view moves f8e4m3 values only with f8e4m3 values"));
  EXPECT_THAT(ErrorOf(Infer("concat", {Argument(ArgumentList{i8, f8}), 0})),
              HasSubstr("only with f8e4m3 values"));
  EXPECT_TRUE(HasType(Infer("pad", {f8, Argument::IntList({1, 1})}), T(DType::kF8E4M3, {4, 10})));
  EXPECT_THAT(ErrorOf(Infer("pad", {f8, Argument::IntList({1, 1})}, {{"value", 1.0}})),
              HasSubstr("an f8e4m3 pad fills with 0 only"));
  Node* ids = Input(DType::kI64, {3}, "ids");
  EXPECT_TRUE(HasType(Infer("index_select", {f8, 0, ids}), T(DType::kF8E4M3, {3, 8})));
  // Only quantizing makes f8e4m3 values: not a creation op, not a cast.
  EXPECT_THAT(ErrorOf(Infer("full", {Argument::IntList({2}), -1.0}, {{"dtype", DType::kF8E4M3}})),
              HasSubstr("made only by quantize_per_tensor and quantize_per_channel"));
  EXPECT_THAT(ErrorOf(Infer("cast", {f32, DType::kF8E4M3})), HasSubstr("made only by quantize"));
}

TEST_F(QuantTest, QuantizePerChannel) {
  Node* w = Input(DType::kF32, {64, 3, 3, 3}, "w");
  Node* scales = Input(DType::kF32, {64}, "scales");
  Node* zps = Input(DType::kI64, {64}, "zps");
  EXPECT_TRUE(
      HasType(Infer("quantize_per_channel", {w, scales, zps, 0, DType::kI8}),
              T(DType::kI8, {64, 3, 3, 3})));
  EXPECT_THAT(
      ErrorOf(Infer("quantize_per_channel", {w, scales, zps, 1, DType::kI8})),
      AllOf(HasSubstr("quantize_per_channel: scales f32[64]"),
            HasSubstr("3 entries, one per channel of axis 1")));
  EXPECT_THAT(
      ErrorOf(Infer("quantize_per_channel", {w, scales, zps, 4, DType::kU8})),
      HasSubstr("axis 4 out of range for rank 4"));
  Node* fzp = Input(DType::kF32, {64}, "fzp");
  EXPECT_THAT(
      ErrorOf(Infer("quantize_per_channel", {w, scales, fzp, 0, DType::kI8})),
      AllOf(HasSubstr("zero_points f32[64]"), HasSubstr("integers")));
}

TEST_F(QuantTest, Dequantize) {
  Node* q = Input(DType::kI8, {Sym("batch"), 8}, "q");
  EXPECT_TRUE(HasType(Infer("dequantize", {q, 0.1, 0}),
                      T(DType::kF32, {Sym("batch"), 8})));
  EXPECT_TRUE(
      HasType(Infer("dequantize", {q, 0.1, 0}, {{"dtype", DType::kF16}}),
              T(DType::kF16, {Sym("batch"), 8})));
  Node* scale = Input(DType::kF32, {8}, "scale");
  Node* zp = Input(DType::kI32, {8}, "zp");
  EXPECT_TRUE(HasType(Infer("dequantize", {q, scale, zp, 1}),
                      T(DType::kF32, {Sym("batch"), 8})));
  EXPECT_TRUE(HasType(Infer("dequantize", {q, scale, 0, -1}),
                      T(DType::kF32, {Sym("batch"), 8})));
  Node* one = Input(DType::kF32, {}, "one");
  EXPECT_TRUE(HasType(Infer("dequantize", {q, one, 0}),
                      T(DType::kF32, {Sym("batch"), 8})));
}

TEST_F(QuantTest, DequantizeErrors) {
  Node* q = Input(DType::kU8, {4, 8}, "q");
  Node* scale = Input(DType::kF32, {8}, "scale");
  EXPECT_THAT(ErrorOf(Infer("dequantize", {q, scale, 0})),
              AllOf(HasSubstr("dequantize: scale f32[8] has 8 values"),
                    HasSubstr("axis")));
  EXPECT_THAT(ErrorOf(Infer("dequantize", {q, scale, 0, 0})),
              HasSubstr("scale f32[8] must be 1-D with 4 entries, one per "
                        "channel of axis 0"));
  EXPECT_THAT(
      ErrorOf(Infer("dequantize", {q, 0.1, 0}, {{"dtype", DType::kI32}})),
      HasSubstr("dequantize: dtype must be a floating-point type"));
  Node* f = Input(DType::kF32, {4}, "f");
  EXPECT_THAT(ErrorOf(Infer("dequantize", {f, 0.1, 0})),
              AllOf(HasSubstr("input f32[4]"), HasSubstr("integer")));
  Node* iscale = Input(DType::kI32, {8}, "iscale");
  EXPECT_THAT(ErrorOf(Infer("dequantize", {q, iscale, 0, 1})),
              AllOf(HasSubstr("scale i32[8]"), HasSubstr("floating point")));
}

}  // namespace
}  // namespace graft
