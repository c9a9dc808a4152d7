// Type rules of the elementwise ops (graph/core_ops_elementwise.cc).

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

using ElementwiseTest = op_test::OpTypeTest;

TEST_F(ElementwiseTest, FloatOpsComputeIntegersInF32) {
  Node* i = Input(DType::kI32, {2, 3});
  Node* h = Input(DType::kF16, {Sym("batch"), 3});
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                         "sigmoid", "silu", "erf", "reciprocal", "tan", "asin",
                         "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"}) {
    SCOPED_TRACE(op);
    EXPECT_TRUE(HasType(Infer(op, {i}), T(DType::kF32, {2, 3})));
    EXPECT_TRUE(HasType(Infer(op, {h}), T(DType::kF16, {Sym("batch"), 3})));
  }
  EXPECT_TRUE(HasType(Infer("gelu", {i}), T(DType::kF32, {2, 3})));
  EXPECT_TRUE(HasType(Infer("leaky_relu", {h}, {{"negative_slope", 0.2}}),
                      T(DType::kF16, {Sym("batch"), 3})));
}

TEST_F(ElementwiseTest, IntegerPreservingOps) {
  Node* i = Input(DType::kI64, {4});
  for (const char* op : {"neg", "abs", "relu"}) {
    EXPECT_TRUE(HasType(Infer(op, {i}), T(DType::kI64, {4}))) << op;
  }
  EXPECT_TRUE(HasType(Infer("logical_not", {i}), T(DType::kBool, {4})));
  Node* b = Input(DType::kBool, {4});
  EXPECT_THAT(
      ErrorOf(Infer("neg", {b})),
      AllOf(HasSubstr("neg"), HasSubstr("bool"), HasSubstr("logical_not")));
}

TEST_F(ElementwiseTest, GeluApproximateMustBeKnown) {
  Node* x = Input(DType::kF32, {4});
  EXPECT_TRUE(HasType(Infer("gelu", {x}, {{"approximate", "tanh"}}),
                      T(DType::kF32, {4})));
  EXPECT_THAT(
      ErrorOf(Infer("gelu", {x}, {{"approximate", "fast"}})),
      AllOf(HasSubstr("gelu"), HasSubstr("\"fast\""), HasSubstr("\"tanh\"")));
}

TEST_F(ElementwiseTest, ClampPromotesWithItsBounds) {
  Node* i = Input(DType::kI32, {2, 2});
  EXPECT_TRUE(
      HasType(Infer("clamp", {i}, {{"min", 0}}), T(DType::kI32, {2, 2})));
  EXPECT_TRUE(
      HasType(Infer("clamp", {i}, {{"max", 6.5}}), T(DType::kF32, {2, 2})));
  EXPECT_TRUE(HasType(Infer("clamp", {i, 0, 6}), T(DType::kI32, {2, 2})));
  EXPECT_THAT(ErrorOf(Infer("clamp", {i})),
              AllOf(HasSubstr("clamp"), HasSubstr("min"), HasSubstr("max")));
}

TEST_F(ElementwiseTest, CastGivesTheDType) {
  Node* x = Input(DType::kF32, {Sym("batch"), 8});
  EXPECT_TRUE(HasType(Infer("cast", {x, DType::kBF16}),
                      T(DType::kBF16, {Sym("batch"), 8})));
}

TEST_F(ElementwiseTest, BinaryBroadcasting) {
  Node* a = Input(DType::kF32, {3, 1, 5});
  Node* b = Input(DType::kF32, {4, 1});
  for (const char* op :
       {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}) {
    EXPECT_TRUE(HasType(Infer(op, {a, b}), T(DType::kF32, {3, 4, 5}))) << op;
  }
  Node* s = Input(DType::kF32, {Sym("batch"), 1, 5});
  EXPECT_TRUE(
      HasType(Infer("add", {s, b}), T(DType::kF32, {Sym("batch"), 4, 5})));
  EXPECT_TRUE(
      HasType(Infer("mul", {2.0, s}), T(DType::kF32, {Sym("batch"), 1, 5})));
}

TEST_F(ElementwiseTest, BroadcastErrorNamesOpAndTypes) {
  Node* a = Input(DType::kF32, {3, 4});
  Node* b = Input(DType::kF32, {5});
  EXPECT_THAT(ErrorOf(Infer("add", {a, b})),
              AllOf(HasSubstr("add: cannot broadcast"), HasSubstr("f32[3,4]"),
                    HasSubstr("f32[5]"), HasSubstr("4 vs 5")));
}

TEST_F(ElementwiseTest, TrueDivision) {
  Node* i = Input(DType::kI64, {2});
  Node* h = Input(DType::kF16, {2});
  EXPECT_TRUE(HasType(Infer("div", {i, i}), T(DType::kF32, {2})));
  EXPECT_TRUE(HasType(Infer("div", {i, 2}), T(DType::kF32, {2})));
  EXPECT_TRUE(HasType(Infer("div", {h, 2}), T(DType::kF16, {2})));
  EXPECT_TRUE(HasType(Infer("mul", {i, 2}), T(DType::kI64, {2})));
}

TEST_F(ElementwiseTest, BoolArithmetic) {
  Node* b = Input(DType::kBool, {2});
  EXPECT_TRUE(HasType(Infer("add", {b, b}), T(DType::kBool, {2})));
  EXPECT_TRUE(HasType(Infer("add", {b, 1}), T(DType::kI64, {2})));
  EXPECT_THAT(ErrorOf(Infer("sub", {b, b})),
              AllOf(HasSubstr("sub"), HasSubstr("bool")));
  EXPECT_TRUE(HasType(Infer("sub", {b, 1}), T(DType::kI64, {2})));
}

TEST_F(ElementwiseTest, ComparisonsAndLogicGiveBool) {
  Node* a = Input(DType::kF32, {Sym("batch"), 1});
  Node* b = Input(DType::kI32, {7});
  for (const char* op :
       {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or"}) {
    EXPECT_TRUE(HasType(Infer(op, {a, b}), T(DType::kBool, {Sym("batch"), 7})))
        << op;
    EXPECT_TRUE(
        HasType(Infer(op, {a, 0.5}), T(DType::kBool, {Sym("batch"), 1})))
        << op;
  }
}

TEST_F(ElementwiseTest, WhereBroadcastsThreeWaysAndPromotes) {
  Node* c = Input(DType::kBool, {4, 1}, "c");
  Node* x = Input(DType::kI64, {1, 5});
  Node* y = Input(DType::kF16, {4, 1});
  EXPECT_TRUE(HasType(Infer("where", {c, x, y}), T(DType::kF16, {4, 5})));
  EXPECT_TRUE(HasType(Infer("where", {c, x, 0.0}), T(DType::kF32, {4, 5})));
  EXPECT_TRUE(HasType(Infer("where", {c, x, 0}), T(DType::kI64, {4, 5})));
  EXPECT_TRUE(HasType(Infer("where", {c, 1.0, 0.0}), T(DType::kF32, {4, 1})));
}

TEST_F(ElementwiseTest, WhereErrors) {
  Node* c = Input(DType::kF32, {4}, "c");
  Node* x = Input(DType::kF32, {4});
  EXPECT_THAT(ErrorOf(Infer("where", {c, x, x})),
              AllOf(HasSubstr("where"), HasSubstr("condition"),
                    HasSubstr("bool"), HasSubstr("f32[4]")));
  Node* m = Input(DType::kBool, {3}, "m");
  EXPECT_THAT(ErrorOf(Infer("where", {m, x, x})),
              AllOf(HasSubstr("where: cannot broadcast"),
                    HasSubstr("condition bool[3]")));
}

}  // namespace
}  // namespace graft
