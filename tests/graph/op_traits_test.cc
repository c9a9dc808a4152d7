#include "graph/op_traits.h"

#include "gtest/gtest.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/op_registry.h"
#include "graph/scalar_formula.h"

namespace graft {
namespace {

TEST(OpTraits, EveryPointwiseCoreOpHasAFormulaThatParses) {
  int pointwise = 0;
  for (const OpSchema* schema : OpRegistry::Global().All()) {
    if (schema->traits.kind != OpKind::kPointwise) continue;
    ++pointwise;
    SCOPED_TRACE(schema->name);
    ASSERT_TRUE(schema->traits.formula) << "no formula";
    // Every call of the op: a default call binds.
    Module m;
    std::vector<Argument> args;
    for (const ParamSpec& p : schema->params) {
      if (p.kind == ParamKind::kTensor ||
          p.kind == ParamKind::kTensorOrScalar) {
        args.push_back(m.graph().Placeholder(p.name));
      }
    }
    Kwargs kwargs;
    if (schema->name == "cast") kwargs = {{"dtype", Argument(DType::kF32)}};
    if (schema->name == "clamp") kwargs = {{"min", 0.0}};
    Node* node = m.graph().CallFunction(schema->name, args, kwargs);
    std::optional<std::string> formula = PointwiseFormulaOf(*node);
    ASSERT_TRUE(formula.has_value());
    EXPECT_TRUE(ParseScalarFormula(*formula).ok()) << *formula;
  }
  // The elementwise tables of docs/ops.md: 20 with one input, 16 more.
  EXPECT_GE(pointwise, 36);
}

TEST(OpTraits, KindsOfCoreOps) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4, 8}});
  Node* w = g.Placeholder("w", TensorType{DType::kF32, {16, 8}});
  EXPECT_EQ(KindOf(*g.CallFunction("relu", {x})), OpKind::kPointwise);
  EXPECT_EQ(KindOf(*g.CallFunction("linear", {x, w})), OpKind::kContraction);
  EXPECT_EQ(KindOf(*g.CallFunction("softmax", {x, -1})), OpKind::kReduction);
  EXPECT_EQ(KindOf(*g.CallFunction("permute", {x, Argument::IntList({1, 0})})),
            OpKind::kView);
  EXPECT_EQ(KindOf(*g.CallFunction("graft::linear_activation", {x, w})),
            OpKind::kContraction);
  EXPECT_EQ(KindOf(*g.CallFunction("my::op", {x})), OpKind::kOther);
  EXPECT_EQ(KindOf(*x), OpKind::kOther);
}

TEST(OpTraits, CostsFromStaticTypes) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4, 8}});
  Node* w = g.Placeholder("w", TensorType{DType::kF32, {16, 8}});
  Node* fc = g.CallFunction("linear", {x, w});
  fc->set_type(TensorType{DType::kF32, {4, 16}});
  std::optional<OpCost> cost = CostOf(*fc);
  ASSERT_TRUE(cost.has_value());
  EXPECT_EQ(cost->flops, 2 * 4 * 16 * 8);
  EXPECT_EQ(cost->bytes, 4 * (4 * 8 + 16 * 8 + 4 * 16));
  // sigmoid: 1 / (1 + exp(-x)) is four operations per element.
  Node* s = g.CallFunction("sigmoid", {fc});
  s->set_type(TensorType{DType::kF32, {4, 16}});
  EXPECT_EQ(CostOf(*s)->flops, 4 * 64);
  // A symbolic dim: unknown.
  Node* y = g.Placeholder("y", TensorType{DType::kF32, {Dim::Symbol("b"), 8}});
  Node* r = g.CallFunction("relu", {y});
  r->set_type(*y->type());
  EXPECT_FALSE(CostOf(*r).has_value());
}

TEST(OpTraits, OneDefinitionOfPurity) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  EXPECT_FALSE(IsPureNode(*x));
  EXPECT_TRUE(IsPureNode(*g.GetAttr("w")));
  EXPECT_TRUE(IsPureNode(*g.CallFunction("relu", {x})));
  // An op nobody registered may have effects.
  EXPECT_FALSE(IsPureNode(*g.CallFunction("my::print", {x})));
  EXPECT_TRUE(IsPureNode(*g.CallModule("block", {x})));
}

TEST(OpTraits, GeluAndClampFormulasFollowTheirAttributes) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {4}});
  EXPECT_EQ(*PointwiseFormulaOf(*g.CallFunction("clamp", {x}, {{"min", 0}})),
            "max(input, min)");
  EXPECT_EQ(*PointwiseFormulaOf(*g.CallFunction("clamp", {x}, {{"max", 1}})),
            "min(input, max)");
  EXPECT_NE(*PointwiseFormulaOf(*g.CallFunction("gelu", {x})),
            *PointwiseFormulaOf(
                *g.CallFunction("gelu", {x}, {{"approximate", "tanh"}})));
  EXPECT_FALSE(PointwiseFormulaOf(*g.CallFunction("sum", {x})).has_value());
}

}  // namespace
}  // namespace graft
