// Type rules of reductions and normalization (graph/core_ops_reduction.cc).

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::ErrorOf;
using op_test::HasType;
using op_test::Ints;
using op_test::Sym;
using op_test::T;
using ::testing::AllOf;
using ::testing::HasSubstr;

using ReductionTest = op_test::OpTypeTest;

TEST_F(ReductionTest, SumOverDims) {
  Node* x = Input(DType::kF32, {Sym("batch"), 3, 4});
  EXPECT_TRUE(HasType(Infer("sum", {x}), T(DType::kF32, {})));
  EXPECT_TRUE(HasType(Infer("sum", {x}, {{"keepdim", true}}),
                      T(DType::kF32, {1, 1, 1})));
  EXPECT_TRUE(HasType(Infer("sum", {x, 1}), T(DType::kF32, {Sym("batch"), 4})));
  EXPECT_TRUE(HasType(Infer("sum", {x, Ints({-1, 1})}),
                      T(DType::kF32, {Sym("batch")})));
  EXPECT_TRUE(HasType(Infer("sum", {x, Ints({0, 2}), true}),
                      T(DType::kF32, {1, 3, 1})));
  // dim=[] reduces every dim, as in PyTorch.
  EXPECT_TRUE(HasType(Infer("sum", {x, Ints({})}), T(DType::kF32, {})));
}

TEST_F(ReductionTest, SumOfBoolAndIntegersIsI64) {
  EXPECT_TRUE(
      HasType(Infer("sum", {Input(DType::kBool, {5})}), T(DType::kI64, {})));
  EXPECT_TRUE(HasType(Infer("sum", {Input(DType::kI32, {5, 2}), 0}),
                      T(DType::kI64, {2})));
  EXPECT_TRUE(HasType(Infer("sum", {Input(DType::kBF16, {5, 2}), 0}),
                      T(DType::kBF16, {2})));
}

TEST_F(ReductionTest, MeanNeedsFloat) {
  EXPECT_TRUE(HasType(Infer("mean", {Input(DType::kF16, {2, 8}), -1, true}),
                      T(DType::kF16, {2, 1})));
  EXPECT_THAT(ErrorOf(Infer("mean", {Input(DType::kI64, {2, 8})})),
              AllOf(HasSubstr("mean"), HasSubstr("i64[2,8]"),
                    HasSubstr("floating point")));
}

TEST_F(ReductionTest, DimErrors) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_THAT(ErrorOf(Infer("sum", {x, 2})),
              HasSubstr("sum: dim 2 out of range for rank 2"));
  EXPECT_THAT(ErrorOf(Infer("amax", {x, Ints({1, -1})})),
              AllOf(HasSubstr("amax"), HasSubstr("more than once")));
}

TEST_F(ReductionTest, AmaxAminKeepDTypeAndRefuseEmptyDims) {
  Node* x = Input(DType::kI32, {2, 3});
  EXPECT_TRUE(HasType(Infer("amax", {x, 1}), T(DType::kI32, {2})));
  EXPECT_TRUE(HasType(Infer("amin", {x, 0, true}), T(DType::kI32, {1, 3})));
  Node* empty = Input(DType::kF32, {2, 0});
  EXPECT_THAT(ErrorOf(Infer("amax", {empty, 1})),
              AllOf(HasSubstr("amax"), HasSubstr("size 0")));
  EXPECT_TRUE(HasType(Infer("amax", {empty, 0}), T(DType::kF32, {0})));
  // A sum over nothing is fine: zero.
  EXPECT_TRUE(HasType(Infer("sum", {empty, 1}), T(DType::kF32, {2})));
}

TEST_F(ReductionTest, ScalarInputAcceptsDimZero) {
  Node* s = Input(DType::kF32, {});
  EXPECT_TRUE(HasType(Infer("sum", {s, 0}), T(DType::kF32, {})));
  EXPECT_TRUE(HasType(Infer("amax", {s, -1, true}), T(DType::kF32, {})));
  EXPECT_THAT(ErrorOf(Infer("sum", {s, 1})), HasSubstr("out of range"));
}

TEST_F(ReductionTest, Argmax) {
  Node* x = Input(DType::kF16, {Sym("batch"), 10});
  EXPECT_TRUE(HasType(Infer("argmax", {x}), T(DType::kI64, {})));
  EXPECT_TRUE(HasType(Infer("argmax", {x}, {{"keepdim", true}}),
                      T(DType::kI64, {1, 1})));
  EXPECT_TRUE(
      HasType(Infer("argmax", {x, -1}), T(DType::kI64, {Sym("batch")})));
  EXPECT_TRUE(HasType(Infer("argmax", {x, 1, true}),
                      T(DType::kI64, {Sym("batch"), 1})));
  EXPECT_THAT(ErrorOf(Infer("argmax", {x, 2})),
              HasSubstr("argmax: dim 2 out of range for rank 2"));
  EXPECT_THAT(ErrorOf(Infer("argmax", {Input(DType::kF32, {0, 3})})),
              AllOf(HasSubstr("argmax"), HasSubstr("empty")));
}

TEST_F(ReductionTest, SoftmaxKeepsTypeAndChecksDim) {
  Node* x = Input(DType::kBF16, {Sym("batch"), 12, 64, 64});
  for (const char* op : {"softmax", "log_softmax"}) {
    EXPECT_TRUE(HasType(Infer(op, {x, -1}),
                        T(DType::kBF16, {Sym("batch"), 12, 64, 64})));
  }
  EXPECT_THAT(ErrorOf(Infer("log_softmax", {x, 4})),
              HasSubstr("log_softmax: dim 4 out of range for rank 4 "
                        "(expected -4..3)"));
  EXPECT_THAT(ErrorOf(Infer("softmax", {Input(DType::kI64, {3}), 0})),
              AllOf(HasSubstr("softmax"), HasSubstr("floating point")));
}

TEST_F(ReductionTest, LayerNorm) {
  Node* x = Input(DType::kF32, {Sym("batch"), 128, 768});
  Node* w = Input(DType::kF32, {768}, "w");
  Node* b = Input(DType::kF32, {768}, "b");
  EXPECT_TRUE(HasType(Infer("layer_norm", {x, Ints({768}), w, b}),
                      T(DType::kF32, {Sym("batch"), 128, 768})));
  EXPECT_TRUE(HasType(Infer("layer_norm", {x, Ints({128, 768})}),
                      T(DType::kF32, {Sym("batch"), 128, 768})));
  EXPECT_THAT(
      ErrorOf(Infer("layer_norm", {x, Ints({512})})),
      AllOf(HasSubstr("layer_norm"), HasSubstr("normalized_shape [512]"),
            HasSubstr("f32[batch,128,768]")));
  Node* w2 = Input(DType::kF32, {512}, "w");
  EXPECT_THAT(
      ErrorOf(Infer("layer_norm", {x, Ints({768}), w2})),
      AllOf(HasSubstr("weight f32[512]"), HasSubstr("normalized_shape [768]")));
  EXPECT_THAT(ErrorOf(Infer("layer_norm", {x, Ints({2, 128, 768, 1})})),
              HasSubstr("does not match the last 4 dims"));
}

TEST_F(ReductionTest, BatchNorm) {
  Node* x = Input(DType::kF32, {Sym("batch"), 64, 7, 7});
  Node* mean = Input(DType::kF32, {64}, "mean");
  Node* var = Input(DType::kF32, {64}, "var");
  EXPECT_TRUE(HasType(Infer("batch_norm", {x, mean, var}),
                      T(DType::kF32, {Sym("batch"), 64, 7, 7})));
  Node* w = Input(DType::kF32, {32}, "w");
  EXPECT_THAT(
      ErrorOf(Infer("batch_norm", {x, mean, var, w})),
      AllOf(HasSubstr("batch_norm: weight f32[32]"), HasSubstr("64 channels")));
  Node* flat = Input(DType::kF32, {64});
  EXPECT_THAT(ErrorOf(Infer("batch_norm", {flat, mean, var})),
              AllOf(HasSubstr("batch_norm"), HasSubstr("at least 2 dims")));
}

}  // namespace
}  // namespace graft
