// Type rules of matmul, linear, conv2d and pooling (graph/core_ops_nn.cc).
// Expected sizes are worked out by hand from PyTorch's formulas:
// out = floor((in + 2p - d(k-1) - 1) / s) + 1 (ceil with ceil_mode).

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

using MatmulTest = op_test::OpTypeTest;

TEST_F(MatmulTest, OneDimensionalRules) {
  Node* v = Input(DType::kF32, {3}, "v");
  Node* m = Input(DType::kF32, {3, 4}, "m");
  Node* n = Input(DType::kF32, {2, 3}, "n");
  EXPECT_TRUE(HasType(Infer("matmul", {v, v}), T(DType::kF32, {})));
  EXPECT_TRUE(HasType(Infer("matmul", {v, m}), T(DType::kF32, {4})));
  EXPECT_TRUE(HasType(Infer("matmul", {n, v}), T(DType::kF32, {2})));
  Node* batched = Input(DType::kF32, {5, 2, 3});
  EXPECT_TRUE(HasType(Infer("matmul", {batched, v}), T(DType::kF32, {5, 2})));
  Node* w = Input(DType::kF32, {5, 3, 7}, "w");
  EXPECT_TRUE(HasType(Infer("matmul", {v, w}), T(DType::kF32, {5, 7})));
}

TEST_F(MatmulTest, BatchDimsBroadcast) {
  Node* a = Input(DType::kF32, {5, 1, 2, 3});
  Node* b = Input(DType::kF32, {4, 3, 6}, "b");
  EXPECT_TRUE(HasType(Infer("matmul", {a, b}), T(DType::kF32, {5, 4, 2, 6})));
  Node* q = Input(DType::kBF16, {Sym("batch"), 12, Sym("seq"), 64}, "q");
  Node* k = Input(DType::kBF16, {Sym("batch"), 12, 64, Sym("seq")}, "k");
  EXPECT_TRUE(
      HasType(Infer("matmul", {q, k}),
              T(DType::kBF16, {Sym("batch"), 12, Sym("seq"), Sym("seq")})));
  Node* c = Input(DType::kF32, {2, 3, 3, 4}, "c");
  EXPECT_THAT(ErrorOf(Infer("matmul", {a, c})),
              AllOf(HasSubstr("matmul"), HasSubstr("batch dims"),
                    HasSubstr("do not broadcast")));
}

TEST_F(MatmulTest, Errors) {
  Node* a = Input(DType::kF32, {2, 3});
  Node* b = Input(DType::kF32, {4, 5}, "b");
  EXPECT_THAT(ErrorOf(Infer("matmul", {a, b})),
              AllOf(HasSubstr("matmul: input f32[2,3] has 3 columns"),
                    HasSubstr("other f32[4,5] has 4 rows")));
  Node* s = Input(DType::kF32, {}, "s");
  EXPECT_THAT(ErrorOf(Infer("matmul", {s, a})),
              AllOf(HasSubstr("matmul"), HasSubstr("at least one dim")));
  Node* h = Input(DType::kF16, {3, 2}, "h");
  EXPECT_THAT(ErrorOf(Infer("matmul", {a, h})),
              AllOf(HasSubstr("matmul"), HasSubstr("f16[3,2]"),
                    HasSubstr("dtypes match")));
}

using LinearTest = op_test::OpTypeTest;

TEST_F(LinearTest, SymbolicBatchDimsFlowThrough) {
  Node* x = Input(DType::kF32, {Sym("batch"), Sym("seq"), 1024});
  Node* w1 = Input(DType::kF32, {4096, 1024}, "w1");
  Node* b1 = Input(DType::kF32, {4096}, "b1");
  Node* w2 = Input(DType::kF32, {1024, 4096}, "w2");
  ASSERT_TRUE(HasType(Infer("linear", {x, w1, b1}),
                      T(DType::kF32, {Sym("batch"), Sym("seq"), 4096})));
  Node* h = last();
  ASSERT_TRUE(HasType(Infer("relu", {h}),
                      T(DType::kF32, {Sym("batch"), Sym("seq"), 4096})));
  EXPECT_TRUE(HasType(Infer("linear", {last(), w2}),
                      T(DType::kF32, {Sym("batch"), Sym("seq"), 1024})));
}

TEST_F(LinearTest, VectorInputAndVectorWeight) {
  Node* v = Input(DType::kF32, {8});
  Node* w = Input(DType::kF32, {3, 8}, "w");
  EXPECT_TRUE(HasType(Infer("linear", {v, w}), T(DType::kF32, {3})));
  Node* x = Input(DType::kF32, {5, 8});
  Node* w1 = Input(DType::kF32, {8}, "w1");
  EXPECT_TRUE(HasType(Infer("linear", {x, w1}), T(DType::kF32, {5})));
}

TEST_F(LinearTest, Errors) {
  Node* x = Input(DType::kF32, {32, 512});
  Node* w = Input(DType::kF32, {4096, 1024}, "w");
  EXPECT_THAT(ErrorOf(Infer("linear", {x, w})),
              HasSubstr("linear: input has 512 features but weight expects "
                        "1024 (weight f32[4096,1024]"));
  Node* x2 = Input(DType::kF32, {32, 1024});
  Node* bias = Input(DType::kF32, {10}, "bias");
  EXPECT_THAT(ErrorOf(Infer("linear", {x2, w, bias})),
              AllOf(HasSubstr("linear: bias f32[10]"),
                    HasSubstr("4096 output features")));
  Node* wh = Input(DType::kF16, {4096, 1024}, "wh");
  EXPECT_THAT(ErrorOf(Infer("linear", {x2, wh})),
              AllOf(HasSubstr("linear"), HasSubstr("weight is f16"),
                    HasSubstr("dtypes match")));
}

using Conv2dTest = op_test::OpTypeTest;

TEST_F(Conv2dTest, StridePadding) {
  // ResNet stem: (224 + 2*3 - 7) / 2 + 1 = 112.
  Node* x = Input(DType::kF32, {Sym("batch"), 3, 224, 224});
  Node* w = Input(DType::kF32, {64, 3, 7, 7}, "w");
  Node* b = Input(DType::kF32, {64}, "b");
  EXPECT_TRUE(HasType(Infer("conv2d", {x, w, b, 2, 3}),
                      T(DType::kF32, {Sym("batch"), 64, 112, 112})));
  // 3x3, stride 1, padding 1 keeps 56x56.
  Node* y = Input(DType::kF32, {8, 64, 56, 56});
  Node* w3 = Input(DType::kF32, {64, 64, 3, 3}, "w3");
  EXPECT_TRUE(HasType(Infer("conv2d", {y, w3}, {{"padding", 1}}),
                      T(DType::kF32, {8, 64, 56, 56})));
  // No padding: 56 - 3 + 1 = 54.
  EXPECT_TRUE(
      HasType(Infer("conv2d", {y, w3}), T(DType::kF32, {8, 64, 54, 54})));
}

TEST_F(Conv2dTest, DilationAndPerAxisLists) {
  // Dilation 2 spans 2*(3-1)+1 = 5: 32 - 5 + 1 = 28.
  Node* x = Input(DType::kF32, {1, 16, 32, 32});
  Node* w = Input(DType::kF32, {16, 16, 3, 3}, "w");
  EXPECT_TRUE(HasType(Infer("conv2d", {x, w}, {{"dilation", 2}}),
                      T(DType::kF32, {1, 16, 28, 28})));
  // H: (10 + 2 - 3) / 1 + 1 = 10; W: (12 + 4 - 5) / 2 + 1 = 6.
  Node* y = Input(DType::kF32, {2, 64, 10, 12});
  Node* wg = Input(DType::kF32, {128, 16, 3, 5}, "wg");
  EXPECT_TRUE(HasType(
      Infer(
          "conv2d", {y, wg},
          {{"stride", Ints({1, 2})}, {"padding", Ints({1, 2})}, {"groups", 4}}),
      T(DType::kF32, {2, 128, 10, 6})));
  // Unbatched CHW input.
  Node* chw = Input(DType::kF32, {16, 9, 9});
  EXPECT_TRUE(HasType(Infer("conv2d", {chw, w}, {{"stride", 2}}),
                      T(DType::kF32, {16, 4, 4})));
}

TEST_F(Conv2dTest, Depthwise) {
  Node* x = Input(DType::kF32, {4, 64, 15, 15});
  Node* w = Input(DType::kF32, {64, 1, 3, 3}, "w");
  // (15 + 2 - 3) / 2 + 1 = 8.
  EXPECT_TRUE(HasType(
      Infer("conv2d", {x, w}, {{"stride", 2}, {"padding", 1}, {"groups", 64}}),
      T(DType::kF32, {4, 64, 8, 8})));
}

TEST_F(Conv2dTest, GroupAndChannelErrors) {
  Node* x = Input(DType::kF32, {1, 64, 8, 8});
  Node* w = Input(DType::kF32, {63, 21, 3, 3}, "w");
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w}, {{"groups", 3}})),
              HasSubstr("conv2d: groups=3 does not divide 64 input channels"));
  Node* w2 = Input(DType::kF32, {64, 32, 3, 3}, "w2");
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w2})),
              AllOf(HasSubstr("conv2d: input f32[1,64,8,8] has 64 channels"),
                    HasSubstr("expects 32")));
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w2}, {{"groups", 0}})),
              HasSubstr("groups must be positive"));
  Node* b = Input(DType::kF32, {32}, "b");
  EXPECT_THAT(
      ErrorOf(Infer("conv2d", {x, w2, b}, {{"groups", 2}})),
      AllOf(HasSubstr("bias f32[32]"), HasSubstr("64 output channels")));
}

TEST_F(Conv2dTest, ShapeErrors) {
  Node* x = Input(DType::kF32, {1, 3, 4, 4});
  Node* w = Input(DType::kF32, {8, 3, 5, 5}, "w");
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w})),
              AllOf(HasSubstr("conv2d: input height 4"),
                    HasSubstr("smaller than the kernel height 5")));
  EXPECT_TRUE(HasType(Infer("conv2d", {x, w}, {{"padding", 1}}),
                      T(DType::kF32, {1, 8, 2, 2})));
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w}, {{"stride", Ints({1, 1, 1})}})),
              HasSubstr("conv2d: stride must have 1 or 2 entries"));
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w}, {{"stride", 0}})),
              HasSubstr("stride entries must be positive"));
  Node* flat = Input(DType::kF32, {3, 16});
  EXPECT_THAT(ErrorOf(Infer("conv2d", {flat, w})),
              AllOf(HasSubstr("conv2d: input f32[3,16]"), HasSubstr("4-D")));
  Node* w3 = Input(DType::kF32, {8, 3, 5}, "w3");
  EXPECT_THAT(ErrorOf(Infer("conv2d", {x, w3})),
              AllOf(HasSubstr("weight f32[8,3,5]"), HasSubstr("4-D")));
}

TEST_F(Conv2dTest, SymbolicSpatialDims) {
  Node* x = Input(DType::kF32, {1, 3, Sym("h"), Sym("w")});
  Node* w = Input(DType::kF32, {8, 3, 3, 3}, "w");
  // Stride 1 with "same" padding keeps the symbols.
  EXPECT_TRUE(HasType(Infer("conv2d", {x, w}, {{"padding", 1}}),
                      T(DType::kF32, {1, 8, Sym("h"), Sym("w")})));
  // Otherwise the size is a fresh symbol named after the node.
  absl::StatusOr<TensorType> t = Infer("conv2d", {x, w}, {{"stride", 2}});
  ASSERT_TRUE(t.ok()) << t.status();
  std::string node = last()->name();
  EXPECT_EQ(*t, T(DType::kF32, {1, 8, Sym(node + "_d2"), Sym(node + "_d3")}));
  EXPECT_NE(t->shape[2], Sym("h"));
}

using PoolTest = op_test::OpTypeTest;

TEST_F(PoolTest, MaxPoolFloorAndCeil) {
  Node* x = Input(DType::kF32, {1, 1, 5, 5});
  // Stride defaults to the kernel: floor((5 - 2) / 2) + 1 = 2.
  EXPECT_TRUE(
      HasType(Infer("max_pool2d", {x, 2}), T(DType::kF32, {1, 1, 2, 2})));
  // ceil((5 - 2) / 2) + 1 = 3.
  EXPECT_TRUE(HasType(Infer("max_pool2d", {x, 2}, {{"ceil_mode", true}}),
                      T(DType::kF32, {1, 1, 3, 3})));
  // k=3, s=3: floor(2 / 3) + 1 = 1; ceil gives 2.
  EXPECT_TRUE(
      HasType(Infer("max_pool2d", {x, 3}), T(DType::kF32, {1, 1, 1, 1})));
  EXPECT_TRUE(HasType(Infer("max_pool2d", {x, 3}, {{"ceil_mode", true}}),
                      T(DType::kF32, {1, 1, 2, 2})));
  // k=3, s=3, p=1, ceil: ceil((5 + 2 - 3) / 3) + 1 = 3, but the third window
  // would start at 6 - 1 = 5, in the right padding, so it is dropped: 2.
  EXPECT_TRUE(HasType(
      Infer("max_pool2d", {x, 3}, {{"padding", 1}, {"ceil_mode", true}}),
      T(DType::kF32, {1, 1, 2, 2})));
}

TEST_F(PoolTest, MaxPoolStridePaddingDilation) {
  // ResNet: k=3, s=2, p=1 on 112: (112 + 2 - 3) / 2 + 1 = 56.
  Node* x = Input(DType::kF16, {Sym("batch"), 64, 112, 112});
  EXPECT_TRUE(HasType(Infer("max_pool2d", {x, 3, 2, 1}),
                      T(DType::kF16, {Sym("batch"), 64, 56, 56})));
  // Dilation 2, k=3 spans 5: (10 - 5) / 3 + 1 = 2 (stride = kernel = 3).
  Node* y = Input(DType::kF32, {1, 1, 10, 10});
  EXPECT_TRUE(HasType(Infer("max_pool2d", {y, 3}, {{"dilation", 2}}),
                      T(DType::kF32, {1, 1, 2, 2})));
  // Per-axis kernel and stride on a CHW input: H (10-2)/2+1 = 5,
  // W (10-4)/1+1 = 7.
  Node* chw = Input(DType::kF32, {3, 10, 10});
  EXPECT_TRUE(HasType(Infer("max_pool2d", {chw, Ints({2, 4}), Ints({2, 1})}),
                      T(DType::kF32, {3, 5, 7})));
}

TEST_F(PoolTest, MaxPoolErrors) {
  Node* x = Input(DType::kF32, {1, 1, 5, 5});
  EXPECT_THAT(
      ErrorOf(Infer("max_pool2d", {x, 3}, {{"padding", 2}})),
      AllOf(HasSubstr("max_pool2d: padding 2"), HasSubstr("half the kernel")));
  EXPECT_THAT(ErrorOf(Infer("max_pool2d", {x, 6})),
              AllOf(HasSubstr("max_pool2d: input height 5"),
                    HasSubstr("kernel height 6")));
  EXPECT_THAT(ErrorOf(Infer("max_pool2d", {x, 0})),
              HasSubstr("kernel_size entries must be positive"));
}

TEST_F(PoolTest, AvgPool) {
  Node* x = Input(DType::kF32, {2, 8, 7, 7});
  // (7 + 2 - 3) / 2 + 1 = 4 either way; count_include_pad does not matter.
  EXPECT_TRUE(
      HasType(Infer("avg_pool2d", {x, 3, 2, 1}, {{"count_include_pad", false}}),
              T(DType::kF32, {2, 8, 4, 4})));
  // (7 - 2) / 2 + 1 = 3; ceil: ceil(5 / 2) + 1 = 4, last window starts at 6
  // < 7.
  EXPECT_TRUE(
      HasType(Infer("avg_pool2d", {x, 2}), T(DType::kF32, {2, 8, 3, 3})));
  EXPECT_TRUE(HasType(Infer("avg_pool2d", {x, 2}, {{"ceil_mode", true}}),
                      T(DType::kF32, {2, 8, 4, 4})));
  // Stride 1 and same padding keep a symbolic size.
  Node* s = Input(DType::kF32, {2, 8, Sym("h"), 7});
  EXPECT_TRUE(HasType(Infer("avg_pool2d", {s, 3, 1, 1}),
                      T(DType::kF32, {2, 8, Sym("h"), 7})));
  EXPECT_THAT(
      ErrorOf(Infer("avg_pool2d", {Input(DType::kI32, {1, 1, 4, 4}), 2})),
      AllOf(HasSubstr("avg_pool2d"), HasSubstr("floating point")));
}

TEST_F(PoolTest, AdaptiveAvgPool) {
  Node* x = Input(DType::kF32, {Sym("batch"), 512, 7, 7});
  EXPECT_TRUE(HasType(Infer("adaptive_avg_pool2d", {x, 1}),
                      T(DType::kF32, {Sym("batch"), 512, 1, 1})));
  Node* y = Input(DType::kF32, {3, Sym("h"), Sym("w")});
  EXPECT_TRUE(HasType(Infer("adaptive_avg_pool2d", {y, Ints({2, 4})}),
                      T(DType::kF32, {3, 2, 4})));
  EXPECT_THAT(ErrorOf(Infer("adaptive_avg_pool2d", {x, Ints({1, 2, 3})})),
              HasSubstr("adaptive_avg_pool2d: output_size must have 1 or 2"));
}

}  // namespace
}  // namespace graft
