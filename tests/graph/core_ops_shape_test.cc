// Type rules of the shape and data movement ops (graph/core_ops_shape.cc).

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::ErrorOf;
using op_test::HasType;
using op_test::HasTypes;
using op_test::Ints;
using op_test::Sym;
using op_test::T;
using ::testing::AllOf;
using ::testing::HasSubstr;

using ReshapeTest = op_test::OpTypeTest;

// from, from + step, ... before `to`, for steps of either sign up to
// +-2^63 (whose arithmetic once overflowed).
TEST(SliceLength, CountsEveryStepWithoutOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(SliceLength(0, 10, 3), 4);  // 0 3 6 9
  EXPECT_EQ(SliceLength(9, -1, -3), 4);  // 9 6 3 0
  EXPECT_EQ(SliceLength(2, 2, 1), 0);
  EXPECT_EQ(SliceLength(5, 0, 1), 0);
  EXPECT_EQ(SliceLength(0, 5, kMax), 1);
  EXPECT_EQ(SliceLength(4, -1, kMin), 1);
}

TEST_F(ReshapeTest, StaticShapes) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_TRUE(
      HasType(Infer("reshape", {x, Ints({3, 2})}), T(DType::kF32, {3, 2})));
  EXPECT_TRUE(
      HasType(Infer("reshape", {x, Ints({3, -1})}), T(DType::kF32, {3, 2})));
  EXPECT_TRUE(HasType(Infer("reshape", {x, Ints({-1})}), T(DType::kF32, {6})));
  EXPECT_TRUE(HasType(Infer("reshape", {x, Ints({1, 6, 1})}),
                      T(DType::kF32, {1, 6, 1})));
  Node* s = Input(DType::kI64, {});
  EXPECT_TRUE(
      HasType(Infer("reshape", {s, Ints({1, -1})}), T(DType::kI64, {1, 1})));
}

TEST_F(ReshapeTest, Errors) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_THAT(ErrorOf(Infer("reshape", {x, Ints({4, 2})})),
              HasSubstr("reshape: cannot reshape f32[2,3] (6 elements) to "
                        "[4,2]"));
  EXPECT_THAT(ErrorOf(Infer("reshape", {x, Ints({4, -1})})),
              AllOf(HasSubstr("cannot reshape f32[2,3] (6 elements) to [4,-1]"),
                    HasSubstr("not a multiple of 4")));
  EXPECT_THAT(ErrorOf(Infer("reshape", {x, Ints({-1, -1})})),
              HasSubstr("only one -1"));
  EXPECT_THAT(ErrorOf(Infer("reshape", {x, Ints({-2, 3})})),
              HasSubstr("invalid size -2"));
  Node* empty = Input(DType::kF32, {0, 3});
  EXPECT_THAT(ErrorOf(Infer("reshape", {empty, Ints({0, -1})})),
              HasSubstr("cannot infer the -1"));
}

TEST_F(ReshapeTest, SymbolicRoundTrip) {
  Node* x = Input(DType::kF32, {Sym("batch"), 128, 768});
  ASSERT_TRUE(HasType(Infer("reshape", {x, Ints({-1, 768})}),
                      T(DType::kF32, {Sym("128*batch"), 768})));
  Node* flat = last();
  // [128*batch, 3072] back to [-1, 128, 3072]: the 128 cancels.
  Node* w = Input(DType::kF32, {3072, 768}, "w");
  ASSERT_TRUE(HasType(Infer("linear", {flat, w}),
                      T(DType::kF32, {Sym("128*batch"), 3072})));
  EXPECT_TRUE(HasType(Infer("reshape", {last(), Ints({-1, 128, 3072})}),
                      T(DType::kF32, {Sym("batch"), 128, 3072})));
  // Splitting heads: [batch, 128, 768] -> [batch, 128, 12, 64] with -1 first.
  EXPECT_TRUE(HasType(Infer("reshape", {x, Ints({-1, 128, 12, 64})}),
                      T(DType::kF32, {Sym("batch"), 128, 12, 64})));
}

TEST_F(ReshapeTest, UnresolvableMinusOneIsAFreshSymbol) {
  Node* x = Input(DType::kF32, {Sym("batch"), 6});
  absl::StatusOr<TensorType> t = Infer("reshape", {x, Ints({-1, 4})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, T(DType::kF32, {Sym(last()->name() + "_d0"), 4}));
  // Without -1 the element count is a run-time check.
  EXPECT_TRUE(HasType(Infer("reshape", {x, Ints({12})}), T(DType::kF32, {12})));
}

using LayoutTest = op_test::OpTypeTest;

TEST_F(LayoutTest, Permute) {
  Node* x = Input(DType::kF32, {2, 3, Sym("n")});
  EXPECT_TRUE(HasType(Infer("permute", {x, Ints({2, 0, 1})}),
                      T(DType::kF32, {Sym("n"), 2, 3})));
  EXPECT_TRUE(HasType(Infer("permute", {x, Ints({-1, -2, -3})}),
                      T(DType::kF32, {Sym("n"), 3, 2})));
  EXPECT_THAT(ErrorOf(Infer("permute", {x, Ints({0, 0, 1})})),
              AllOf(HasSubstr("permute"), HasSubstr("more than once")));
  EXPECT_THAT(ErrorOf(Infer("permute", {x, Ints({1, 0})})),
              AllOf(HasSubstr("permute: dims [1,0] has 2 entries"),
                    HasSubstr("3 dims")));
  EXPECT_THAT(ErrorOf(Infer("permute", {x, Ints({0, 1, 3})})),
              HasSubstr("permute: dim 3 out of range for rank 3"));
}

TEST_F(LayoutTest, Transpose) {
  Node* x = Input(DType::kF32, {Sym("batch"), 3, 4});
  EXPECT_TRUE(HasType(Infer("transpose", {x, 0, -1}),
                      T(DType::kF32, {4, 3, Sym("batch")})));
  EXPECT_TRUE(HasType(Infer("transpose", {x, 1, 1}),
                      T(DType::kF32, {Sym("batch"), 3, 4})));
  EXPECT_THAT(ErrorOf(Infer("transpose", {x, 0, 3})),
              HasSubstr("transpose: dim1 3 out of range for rank 3"));
}

TEST_F(LayoutTest, Flatten) {
  Node* x = Input(DType::kF32, {2, 3, 4, 5});
  EXPECT_TRUE(HasType(Infer("flatten", {x}), T(DType::kF32, {120})));
  EXPECT_TRUE(HasType(Infer("flatten", {x, 1}), T(DType::kF32, {2, 60})));
  EXPECT_TRUE(HasType(Infer("flatten", {x, 1, 2}), T(DType::kF32, {2, 12, 5})));
  EXPECT_TRUE(
      HasType(Infer("flatten", {x, -2, -1}), T(DType::kF32, {2, 3, 20})));
  EXPECT_TRUE(
      HasType(Infer("flatten", {x, 2, 2}), T(DType::kF32, {2, 3, 4, 5})));
  Node* s = Input(DType::kF32, {Sym("batch"), 3, 4});
  EXPECT_TRUE(
      HasType(Infer("flatten", {s, 1}), T(DType::kF32, {Sym("batch"), 12})));
  EXPECT_TRUE(HasType(Infer("flatten", {s, 0, 1}),
                      T(DType::kF32, {Sym("3*batch"), 4})));
  Node* scalar = Input(DType::kF32, {});
  EXPECT_TRUE(HasType(Infer("flatten", {scalar}), T(DType::kF32, {1})));
  EXPECT_THAT(ErrorOf(Infer("flatten", {x, 2, 1})),
              HasSubstr("flatten: start_dim 2 comes after end_dim 1"));
  EXPECT_THAT(ErrorOf(Infer("flatten", {x, 4})),
              HasSubstr("flatten: start_dim 4 out of range for rank 4"));
}

TEST_F(LayoutTest, Squeeze) {
  Node* x = Input(DType::kF32, {1, 3, 1, Sym("batch")});
  // None drops every size-1 dim; a symbol is kept (it may not be 1).
  EXPECT_TRUE(
      HasType(Infer("squeeze", {x}), T(DType::kF32, {3, Sym("batch")})));
  EXPECT_TRUE(
      HasType(Infer("squeeze", {x, 0}), T(DType::kF32, {3, 1, Sym("batch")})));
  EXPECT_TRUE(HasType(Infer("squeeze", {x, Ints({0, -2})}),
                      T(DType::kF32, {3, Sym("batch")})));
  // A dim that is not 1 stays, as in PyTorch.
  EXPECT_TRUE(HasType(Infer("squeeze", {x, 1}),
                      T(DType::kF32, {1, 3, 1, Sym("batch")})));
  EXPECT_THAT(ErrorOf(Infer("squeeze", {x, 4})),
              HasSubstr("squeeze: dim 4 out of range for rank 4"));
  EXPECT_THAT(ErrorOf(Infer("squeeze", {x, Ints({0, 0})})),
              HasSubstr("more than once"));
}

TEST_F(LayoutTest, Unsqueeze) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_TRUE(HasType(Infer("unsqueeze", {x, 0}), T(DType::kF32, {1, 2, 3})));
  EXPECT_TRUE(HasType(Infer("unsqueeze", {x, 2}), T(DType::kF32, {2, 3, 1})));
  EXPECT_TRUE(HasType(Infer("unsqueeze", {x, -1}), T(DType::kF32, {2, 3, 1})));
  EXPECT_TRUE(HasType(Infer("unsqueeze", {x, -3}), T(DType::kF32, {1, 2, 3})));
  EXPECT_THAT(ErrorOf(Infer("unsqueeze", {x, 3})),
              HasSubstr("unsqueeze: dim 3 out of range for rank 3"));
}

TEST_F(LayoutTest, Expand) {
  Node* x = Input(DType::kF32, {3, 1});
  EXPECT_TRUE(HasType(Infer("expand", {x, Ints({2, 3, 4})}),
                      T(DType::kF32, {2, 3, 4})));
  EXPECT_TRUE(
      HasType(Infer("expand", {x, Ints({-1, 4})}), T(DType::kF32, {3, 4})));
  Node* s = Input(DType::kF32, {Sym("batch"), 1});
  EXPECT_TRUE(HasType(Infer("expand", {s, Ints({-1, 8})}),
                      T(DType::kF32, {Sym("batch"), 8})));
  EXPECT_THAT(ErrorOf(Infer("expand", {x, Ints({4, 4})})),
              AllOf(HasSubstr("expand: cannot expand dim 0"),
                    HasSubstr("from 3 to 4")));
  EXPECT_THAT(ErrorOf(Infer("expand", {x, Ints({-1, 3, 4})})),
              HasSubstr("new leading dim 0"));
  EXPECT_THAT(ErrorOf(Infer("expand", {x, Ints({4})})),
              HasSubstr("expand: size [4] has 1 entries"));
}

using JoinSplitTest = op_test::OpTypeTest;

TEST_F(JoinSplitTest, Concat) {
  Node* a = Input(DType::kF32, {2, 3});
  Node* b = Input(DType::kF32, {4, 3});
  Node* c = Input(DType::kI32, {2, 5});
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{a, b})}),
                      T(DType::kF32, {6, 3})));
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{a, c}), -1}),
                      T(DType::kF32, {2, 8})));
  EXPECT_THAT(
      ErrorOf(Infer("concat", {Argument(ArgumentList{a, c})})),
      AllOf(HasSubstr("concat: tensor 1 i32[2,5]"), HasSubstr("in dim 1")));
  Node* v = Input(DType::kF32, {6});
  EXPECT_THAT(ErrorOf(Infer("concat", {Argument(ArgumentList{a, v})})),
              HasSubstr("has 1 dims but tensor 0 f32[2,3] has 2"));
  EXPECT_THAT(ErrorOf(Infer("concat", {Argument(ArgumentList{a, b}), 2})),
              HasSubstr("concat: dim 2 out of range for rank 2"));
}

TEST_F(JoinSplitTest, ConcatSymbolic) {
  Node* a = Input(DType::kF32, {Sym("batch"), 4});
  Node* b = Input(DType::kF32, {3, 4});
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{a, a})}),
                      T(DType::kF32, {Sym("2*batch"), 4})));
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{a, a}), 1}),
                      T(DType::kF32, {Sym("batch"), 8})));
  absl::StatusOr<TensorType> t =
      Infer("concat", {Argument(ArgumentList{a, b})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, T(DType::kF32, {Sym(last()->name() + "_d0"), 4}));
  // Along dim 1, batch meets 3: the constant wins.
  Node* c = Input(DType::kF32, {3, 2});
  EXPECT_TRUE(HasType(Infer("concat", {Argument(ArgumentList{a, c}), 1}),
                      T(DType::kF32, {3, 6})));
}

TEST_F(JoinSplitTest, SplitSizes) {
  Node* x = Input(DType::kF32, {10, Sym("batch")});
  EXPECT_TRUE(HasTypes(
      InferAll("split", {x, 3}),
      {T(DType::kF32, {3, Sym("batch")}), T(DType::kF32, {3, Sym("batch")}),
       T(DType::kF32, {3, Sym("batch")}), T(DType::kF32, {1, Sym("batch")})}));
  EXPECT_TRUE(HasTypes(
      InferAll("split", {x, 5}),
      {T(DType::kF32, {5, Sym("batch")}), T(DType::kF32, {5, Sym("batch")})}));
  EXPECT_TRUE(HasTypes(InferAll("split", {x, 20}),
                       {T(DType::kF32, {10, Sym("batch")})}));
  EXPECT_TRUE(HasTypes(
      InferAll("split", {x, Ints({2, 8})}),
      {T(DType::kF32, {2, Sym("batch")}), T(DType::kF32, {8, Sym("batch")})}));
  // A list of one entry is sections, not a chunk size.
  EXPECT_TRUE(HasTypes(InferAll("split", {x, Ints({10})}),
                       {T(DType::kF32, {10, Sym("batch")})}));
  // Sections of a symbolic dim are taken as given.
  EXPECT_TRUE(HasTypes(InferAll("split", {x, Ints({1, 2}), 1}),
                       {T(DType::kF32, {10, 1}), T(DType::kF32, {10, 2})}));
}

TEST_F(JoinSplitTest, SplitErrors) {
  Node* x = Input(DType::kF32, {10, Sym("batch")});
  EXPECT_THAT(ErrorOf(InferAll("split", {x, Ints({2, 3})})),
              AllOf(HasSubstr("split: sections [2,3] sum to 5"),
                    HasSubstr("has size 10")));
  EXPECT_THAT(ErrorOf(InferAll("split", {x, 2, 1})),
              AllOf(HasSubstr("split: cannot split dim 1"),
                    HasSubstr("depends on batch")));
  EXPECT_THAT(ErrorOf(InferAll("split", {x, 0})),
              HasSubstr("split size must be positive"));
  EXPECT_THAT(ErrorOf(InferAll("split", {x, 2}, {{"dim", 2}})),
              HasSubstr("split: dim 2 out of range for rank 2"));
  // Sections from a file whose sum would overflow (an ONNX fuzzer's find).
  EXPECT_THAT(ErrorOf(InferAll("split", {x, Ints({9151314442816848000, 72057594037927935})})),
              HasSubstr("sum past the largest size"));
}

TEST_F(JoinSplitTest, GetitemReadsSplitResults) {
  Node* x = Input(DType::kF16, {7, 4});
  ASSERT_TRUE(InferAll("split", {x, Ints({3, 4})}).ok());
  Node* parts = last();
  EXPECT_TRUE(HasType(Infer("getitem", {parts, 0}), T(DType::kF16, {3, 4})));
  EXPECT_TRUE(HasType(Infer("getitem", {parts, 1}), T(DType::kF16, {4, 4})));
  EXPECT_TRUE(HasType(Infer("getitem", {parts, -1}), T(DType::kF16, {4, 4})));
  EXPECT_THAT(ErrorOf(Infer("getitem", {parts, 2})),
              AllOf(HasSubstr("getitem: index 2 out of range"),
                    HasSubstr("2 results of %split")));
  EXPECT_THAT(ErrorOf(Infer("getitem", {x, 0})),
              AllOf(HasSubstr("getitem: input %x"), HasSubstr("not a tuple")));
}

using SliceTest = op_test::OpTypeTest;

TEST_F(SliceTest, PythonBounds) {
  Node* x = Input(DType::kF32, {4, 10});
  EXPECT_TRUE(HasType(Infer("slice", {x, 1, 2, 8}), T(DType::kF32, {4, 6})));
  // Indices 2, 5: ceil((8 - 2) / 3) = 2.
  EXPECT_TRUE(HasType(Infer("slice", {x, 1, 2, 8, 3}), T(DType::kF32, {4, 2})));
  EXPECT_TRUE(HasType(Infer("slice", {x, -1, -3}), T(DType::kF32, {4, 3})));
  EXPECT_TRUE(
      HasType(Infer("slice", {x, 1, Argument(), -1}), T(DType::kF32, {4, 9})));
  EXPECT_TRUE(
      HasType(Infer("slice", {x, 1, 1, std::numeric_limits<int64_t>::max()}),
              T(DType::kF32, {4, 9})));
  EXPECT_TRUE(HasType(Infer("slice", {x, 1, 20, 30}), T(DType::kF32, {4, 0})));
  EXPECT_TRUE(HasType(Infer("slice", {x, 1, 7, 3}), T(DType::kF32, {4, 0})));
  EXPECT_TRUE(
      HasType(Infer("slice", {x, 0, -100, 100}), T(DType::kF32, {4, 10})));
  EXPECT_TRUE(HasType(Infer("slice", {x}), T(DType::kF32, {4, 10})));
}

TEST_F(SliceTest, SymbolicDims) {
  Node* x = Input(DType::kF32, {Sym("batch"), Sym("seq")});
  EXPECT_TRUE(HasType(Infer("slice", {x, 1, 0}, {{"step", 1}}),
                      T(DType::kF32, {Sym("batch"), Sym("seq")})));
  absl::StatusOr<TensorType> t = Infer("slice", {x, 1, 1});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, T(DType::kF32, {Sym("batch"), Sym(last()->name() + "_d1")}));
}

TEST_F(SliceTest, Errors) {
  Node* x = Input(DType::kF32, {4});
  EXPECT_THAT(ErrorOf(Infer("slice", {x, 0, 0, 4, 0})),
              HasSubstr("slice: step must be positive, got 0"));
  EXPECT_THAT(ErrorOf(Infer("slice", {x, 1})),
              HasSubstr("slice: dim 1 out of range for rank 1"));
  EXPECT_THAT(ErrorOf(Infer("slice", {Input(DType::kF32, {})})),
              HasSubstr("no dims to slice"));
}

using IndexingTest = op_test::OpTypeTest;

TEST_F(IndexingTest, Gather) {
  Node* x = Input(DType::kF32, {3, 4});
  Node* idx = Input(DType::kI64, {3, 2}, "idx");
  EXPECT_TRUE(HasType(Infer("gather", {x, 1, idx}), T(DType::kF32, {3, 2})));
  Node* big = Input(DType::kI64, {5, 2}, "big");
  EXPECT_THAT(ErrorOf(Infer("gather", {x, 1, big})),
              AllOf(HasSubstr("gather: index i64[5,2] is larger than input"),
                    HasSubstr("dim 0")));
  // Along dim 0 the index may be longer than the input.
  EXPECT_TRUE(HasType(Infer("gather", {x, 0, Input(DType::kI64, {6, 4}, "i")}),
                      T(DType::kF32, {6, 4})));
  Node* flat = Input(DType::kI64, {3}, "flat");
  EXPECT_THAT(ErrorOf(Infer("gather", {x, 1, flat})),
              HasSubstr("gather: index i64[3] must have as many dims"));
  Node* fidx = Input(DType::kF32, {3, 2}, "fidx");
  EXPECT_THAT(ErrorOf(Infer("gather", {x, 1, fidx})),
              AllOf(HasSubstr("gather: index f32[3,2]"), HasSubstr("integer")));
}

TEST_F(IndexingTest, IndexSelect) {
  Node* x = Input(DType::kBF16, {5, 4});
  Node* idx = Input(DType::kI32, {Sym("n")}, "idx");
  EXPECT_TRUE(HasType(Infer("index_select", {x, 0, idx}),
                      T(DType::kBF16, {Sym("n"), 4})));
  EXPECT_TRUE(
      HasType(Infer("index_select", {x, -1, Input(DType::kI64, {}, "i")}),
              T(DType::kBF16, {5, 1})));
  EXPECT_THAT(
      ErrorOf(Infer("index_select", {x, 0, Input(DType::kI64, {2, 2}, "i2")})),
      HasSubstr("index_select: index i64[2,2] must be 1-D"));
}

TEST_F(IndexingTest, Embedding) {
  Node* ids = Input(DType::kI64, {Sym("batch"), Sym("seq")}, "ids");
  Node* table = Input(DType::kF16, {50257, 768}, "table");
  EXPECT_TRUE(HasType(Infer("embedding", {ids, table}),
                      T(DType::kF16, {Sym("batch"), Sym("seq"), 768})));
  EXPECT_TRUE(
      HasType(Infer("embedding", {Input(DType::kI32, {}, "one"), table}),
              T(DType::kF16, {768})));
  Node* f = Input(DType::kF32, {4}, "f");
  EXPECT_THAT(
      ErrorOf(Infer("embedding", {f, table})),
      AllOf(HasSubstr("embedding: input f32[4]"), HasSubstr("indices")));
  Node* flat = Input(DType::kF32, {10}, "flat");
  EXPECT_THAT(ErrorOf(Infer("embedding", {ids, flat})),
              AllOf(HasSubstr("embedding: weight f32[10]"), HasSubstr("2-D")));
}

using PadTest = op_test::OpTypeTest;

TEST_F(PadTest, PairsFromTheLastDim) {
  Node* x = Input(DType::kF32, {1, 3, 4, 5});
  EXPECT_TRUE(
      HasType(Infer("pad", {x, Ints({1, 2})}), T(DType::kF32, {1, 3, 4, 8})));
  EXPECT_TRUE(HasType(Infer("pad", {x, Ints({1, 1, 2, 2})}),
                      T(DType::kF32, {1, 3, 8, 7})));
  EXPECT_TRUE(HasType(Infer("pad", {x, Ints({0, 0, 0, 0, 1, 0})}),
                      T(DType::kF32, {1, 4, 4, 5})));
  // Negative constant padding crops.
  EXPECT_TRUE(
      HasType(Infer("pad", {x, Ints({-1, -1})}), T(DType::kF32, {1, 3, 4, 3})));
  EXPECT_TRUE(HasType(Infer("pad", {x, Ints({2, 2}), "reflect"}),
                      T(DType::kF32, {1, 3, 4, 9})));
  EXPECT_TRUE(HasType(Infer("pad", {x, Ints({3, 3}), "replicate"}),
                      T(DType::kF32, {1, 3, 4, 11})));
}

TEST_F(PadTest, SymbolicDims) {
  Node* x = Input(DType::kF32, {Sym("batch"), Sym("seq")});
  absl::StatusOr<TensorType> t = Infer("pad", {x, Ints({0, 0, 1, 1})});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, T(DType::kF32, {Sym(last()->name() + "_d0"), Sym("seq")}));
}

TEST_F(PadTest, Errors) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_THAT(ErrorOf(Infer("pad", {x, Ints({1, 2, 3})})),
              HasSubstr("pad: pad [1,2,3] must have an even number"));
  EXPECT_THAT(ErrorOf(Infer("pad", {x, Ints({1, 1, 1, 1, 1, 1})})),
              HasSubstr("pads 3 dims but input f32[2,3] has 2"));
  EXPECT_THAT(ErrorOf(Infer("pad", {x, Ints({3, 0}), "reflect"})),
              HasSubstr("reflect padding 3 must be less than the size 3"));
  EXPECT_THAT(ErrorOf(Infer("pad", {x, Ints({1, 1}), "circular"})),
              HasSubstr("pad: mode must be"));
  EXPECT_THAT(ErrorOf(Infer("pad", {x, Ints({-2, -2})})),
              HasSubstr("negative"));
}

}  // namespace
}  // namespace graft
