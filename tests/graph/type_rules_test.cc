#include "graph/type_rules.h"

#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/graph/op_type_test_util.h"

namespace graft {
namespace {

using op_test::Sym;
using ::testing::HasSubstr;

// The broadcast of `a` and `b`; a failure naming the error (and an empty
// shape) when they do not broadcast.
Shape Broadcast(const Shape& a, const Shape& b) {
  absl::StatusOr<Shape> s = rules::BroadcastShapes(a, b);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : Shape();
}

TEST(BroadcastShapesTest, NumPyRules) {
  EXPECT_EQ(Broadcast({3, 1, 5}, {4, 1}), (Shape{3, 4, 5}));
  EXPECT_EQ(Broadcast({}, {2, 3}), (Shape{2, 3}));
  EXPECT_EQ(Broadcast({0, 1}, {1, 7}), (Shape{0, 7}));
  EXPECT_EQ(Broadcast({2, 3}, {2, 3}), (Shape{2, 3}));
}

TEST(BroadcastShapesTest, SymbolicDims) {
  Dim b = Sym("batch");
  EXPECT_EQ(Broadcast({b, 1, 5}, {4, 1}), (Shape{b, 4, 5}));
  EXPECT_EQ(Broadcast({b, 5}, {1, 5}), (Shape{b, 5}));
  // Only 7 can be valid for the symbol.
  EXPECT_EQ(Broadcast({b}, {7}), (Shape{7}));
  EXPECT_EQ(Broadcast({b, 2}, {b, 1}), (Shape{b, 2}));
}

TEST(BroadcastShapesTest, MismatchNamesBothShapes) {
  absl::StatusOr<Shape> s = rules::BroadcastShapes({3, 4}, {5});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("[3,4]"));
  EXPECT_THAT(s.status().message(), HasSubstr("4 vs 5"));
  EXPECT_FALSE(rules::BroadcastShapes({Sym("batch")}, {Sym("seq")}).ok());
}

TEST(DimsConflictTest, OnlyKnownDifferencesConflict) {
  EXPECT_TRUE(rules::DimsConflict(3, 4));
  EXPECT_TRUE(rules::DimsConflict(Sym("batch"), Sym("seq")));
  EXPECT_FALSE(rules::DimsConflict(Sym("batch"), 4));
  EXPECT_FALSE(rules::DimsConflict(4, 4));
  EXPECT_FALSE(rules::DimsConflict(Sym("batch"), Sym("batch")));
}

TEST(DimArithmeticTest, ProductsAreCanonicalSymbols) {
  Dim b = Sym("batch");
  Dim s = Sym("seq");
  EXPECT_EQ(*rules::MulDims(6, 7), Dim(42));
  EXPECT_EQ(*rules::MulDims(b, 1), b);
  EXPECT_EQ(*rules::MulDims(b, 0), Dim(0));
  EXPECT_EQ(*rules::MulDims(b, 128), Sym("128*batch"));
  EXPECT_EQ(*rules::MulDims(128, b), Sym("128*batch"));
  // Symbol order does not matter: both spell "batch*seq".
  EXPECT_EQ(*rules::MulDims(s, b), Sym("batch*seq"));
  EXPECT_EQ(*rules::MulDims(b, s), Sym("batch*seq"));
  EXPECT_EQ(*rules::MulDims(*rules::MulDims(b, 2), *rules::MulDims(s, 3)),
            Sym("6*batch*seq"));
  EXPECT_FALSE(rules::MulDims(int64_t{1} << 40, int64_t{1} << 40).has_value());
}

TEST(DimArithmeticTest, DivisionCancelsExactly) {
  Dim b = Sym("batch");
  EXPECT_EQ(*rules::DivDims(42, 6), Dim(7));
  EXPECT_EQ(*rules::DivDims(Sym("128*batch"), 128), b);
  EXPECT_EQ(*rules::DivDims(Sym("128*batch"), 64), Sym("2*batch"));
  EXPECT_EQ(*rules::DivDims(Sym("batch*seq"), Sym("seq")), b);
  EXPECT_EQ(*rules::DivDims(b, b), Dim(1));
  EXPECT_EQ(*rules::DivDims(0, b), Dim(0));
  EXPECT_FALSE(rules::DivDims(7, 2).has_value());
  EXPECT_FALSE(rules::DivDims(b, 2).has_value());
  EXPECT_FALSE(rules::DivDims(12, b).has_value());
  EXPECT_FALSE(rules::DivDims(12, 0).has_value());
}

TEST(DimArithmeticTest, SumsOfLikeTerms) {
  Dim b = Sym("batch");
  EXPECT_EQ(*rules::AddDims(3, 4), Dim(7));
  EXPECT_EQ(*rules::AddDims(b, b), Sym("2*batch"));
  EXPECT_EQ(*rules::AddDims(Sym("2*batch"), b), Sym("3*batch"));
  EXPECT_EQ(*rules::AddDims(b, 0), b);
  EXPECT_FALSE(rules::AddDims(b, 1).has_value());
  EXPECT_FALSE(rules::AddDims(b, Sym("seq")).has_value());
}

TEST(DimArithmeticTest, NumElementsAndEvaluation) {
  Dim b = Sym("batch");
  EXPECT_EQ(*rules::NumElementsDim({}), Dim(1));
  EXPECT_EQ(*rules::NumElementsDim({2, 3, 4}), Dim(24));
  EXPECT_EQ(*rules::NumElementsDim({b, 3, 4}), Sym("12*batch"));
  absl::flat_hash_map<std::string, int64_t> bindings = {{"batch", 4},
                                                        {"seq", 10}};
  EXPECT_EQ(rules::EvaluateDim(Sym("12*batch"), bindings), 48);
  EXPECT_EQ(rules::EvaluateDim(Sym("batch*seq"), bindings), 40);
  EXPECT_EQ(rules::EvaluateDim(5, bindings), 5);
  EXPECT_EQ(rules::EvaluateDim(Sym("heads"), bindings), std::nullopt);
}

TEST(FloatResultTest, IntegersComputeInF32) {
  EXPECT_EQ(rules::FloatResult(DType::kI64), DType::kF32);
  EXPECT_EQ(rules::FloatResult(DType::kBool), DType::kF32);
  EXPECT_EQ(rules::FloatResult(DType::kBF16), DType::kBF16);
  EXPECT_EQ(rules::FloatResult(DType::kF64), DType::kF64);
}

// ResultType is PyTorch's torch.result_type; each case below is what
// PyTorch gives for the same operands.
class ResultTypeTest : public op_test::OpTypeTest {
 protected:
  DType AddType(Argument a, Argument b) {
    absl::StatusOr<TensorType> t = Infer("add", {a, b});
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? t->dtype : DType::kBool;
  }
};

TEST_F(ResultTypeTest, ScalarLiteralsOnlyRaiseTheCategory) {
  Node* b = Input(DType::kBool, {3});
  Node* i32 = Input(DType::kI32, {3});
  Node* u8 = Input(DType::kU8, {3});
  Node* f16 = Input(DType::kF16, {3});
  EXPECT_EQ(AddType(b, 1), DType::kI64);
  EXPECT_EQ(AddType(b, 1.5), DType::kF32);
  EXPECT_EQ(AddType(b, true), DType::kBool);
  EXPECT_EQ(AddType(i32, 1), DType::kI32);
  EXPECT_EQ(AddType(i32, 1.5), DType::kF32);
  EXPECT_EQ(AddType(u8, 300), DType::kU8);
  EXPECT_EQ(AddType(f16, 1.5), DType::kF16);
  EXPECT_EQ(AddType(2.5, f16), DType::kF16);
  EXPECT_EQ(AddType(1, 2), DType::kI64);
  EXPECT_EQ(AddType(1, 2.5), DType::kF32);
}

TEST_F(ResultTypeTest, ZeroDimTensorsKeepTheirDType) {
  Node* i32 = Input(DType::kI32, {3});
  Node* f16 = Input(DType::kF16, {3});
  Node* f64_scalar = Input(DType::kF64, {});
  Node* i64_scalar = Input(DType::kI64, {});
  EXPECT_EQ(AddType(i32, i64_scalar), DType::kI32);
  EXPECT_EQ(AddType(i32, f64_scalar), DType::kF64);
  EXPECT_EQ(AddType(f16, f64_scalar), DType::kF16);
  EXPECT_EQ(AddType(i64_scalar, f64_scalar), DType::kF64);
}

TEST_F(ResultTypeTest, DimensionedTensorsPromote) {
  EXPECT_EQ(AddType(Input(DType::kI8, {2}), Input(DType::kU8, {2})),
            DType::kI32);
  EXPECT_EQ(AddType(Input(DType::kF16, {2}), Input(DType::kBF16, {2})),
            DType::kF32);
  EXPECT_EQ(AddType(Input(DType::kI64, {2}), Input(DType::kF16, {2})),
            DType::kF16);
}

// The rules also serve ops that plugins register; run them on a schema of
// their own, bound without a node.
TEST(BroadcastBinaryTest, WorksForAnyTwoOperandSchema) {
  OpSchema schema{.name = "test::plus",
                  .params = {{"input", ParamKind::kTensorOrScalar},
                             {"other", ParamKind::kTensorOrScalar}},
                  .infer = rules::BroadcastBinary};
  Graph g;
  Node* b = g.Placeholder("b", op_test::T(DType::kBool, {3, 1}));
  Node* h = g.Placeholder("h", op_test::T(DType::kF16, {4}));
  std::vector<Argument> args = {b, 1};
  absl::StatusOr<OpCall> call = OpCall::Bind(schema, args, {});
  ASSERT_TRUE(call.ok()) << call.status();
  absl::StatusOr<std::vector<TensorType>> t =
      rules::BroadcastBinary(InferContext(*call, nullptr));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<TensorType>{op_test::T(DType::kI64, {3, 1})}));
  args = {b, h};
  call = OpCall::Bind(schema, args, {});
  ASSERT_TRUE(call.ok()) << call.status();
  t = rules::BroadcastBinary(InferContext(*call, nullptr));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<TensorType>{op_test::T(DType::kF16, {3, 4})}));
  Node* v = g.Placeholder("v", op_test::T(DType::kF32, {5}));
  args = {h, v};
  call = OpCall::Bind(schema, args, {});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(
      op_test::ErrorOf(rules::BroadcastBinary(InferContext(*call, nullptr))),
      HasSubstr("test::plus: shapes [4] and [5] do not broadcast"));
}

// Keyword, positional and defaulted arguments land in parameter order.
TEST(OpCallTest, GetAtReadsParametersInSchemaOrder) {
  OpSchema schema{.name = "test::three",
                  .params = {{"input", ParamKind::kTensor},
                             {"alpha", ParamKind::kFloat},
                             {.name = "beta",
                              .kind = ParamKind::kFloat,
                              .default_value = Argument(0.5)}}};
  Graph g;
  Node* x = g.Placeholder("x", op_test::T(DType::kF32, {2}));
  // The call points into its arguments: they must outlive it.
  std::vector<Argument> args = {x};
  Kwargs kwargs = {{"alpha", Argument(2.0)}};
  absl::StatusOr<OpCall> call = OpCall::Bind(schema, args, kwargs);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->GetAt(0), Argument(x));
  EXPECT_EQ(call->GetAt(1), Argument(2.0));
  EXPECT_EQ(call->GetAt(2), Argument(0.5));
  EXPECT_EQ(&call->GetAt(1), &call->Get("alpha"));
}

TEST(UnknownDimTest, DistinctWithoutANode) {
  OpSchema schema{.name = "test::unknown"};
  absl::StatusOr<OpCall> call = OpCall::Bind(schema, {}, {});
  ASSERT_TRUE(call.ok());
  InferContext ctx(*call, nullptr);
  Dim a = rules::UnknownDim(ctx, 0);
  Dim b = rules::UnknownDim(ctx, 0);
  EXPECT_TRUE(a.is_symbolic());
  EXPECT_NE(a, b);
}

using NormalizeDimTest = op_test::OpTypeTest;

TEST_F(NormalizeDimTest, RangeChecksNameTheOp) {
  Node* x = Input(DType::kF32, {2, 3});
  EXPECT_THAT(op_test::ErrorOf(Infer("softmax", {x, 3})),
              HasSubstr("softmax: dim 3 out of range for rank 2"));
  EXPECT_THAT(op_test::ErrorOf(Infer("softmax", {x, -3})),
              HasSubstr("expected -2..1"));
  EXPECT_TRUE(Infer("softmax", {x, -2}).ok());
}

}  // namespace
}  // namespace graft
