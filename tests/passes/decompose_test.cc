#include "passes/decompose.h"

#include <cmath>

#include "graph/printer.h"
#include "graph/verifier.h"
#include "passes/pipeline.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;
using ::testing::HasSubstr;

// Runs a pipeline string, checks it verifies, returns whether it changed.
bool RunPipeline(Module& m, absl::string_view pipeline) {
  absl::StatusOr<Pipeline> p = Pipeline::FromString(pipeline);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return false;
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  return changed.ok() && *changed;
}

// The types every node has now, and what shape-prop computes afresh: a
// decomposition must keep them equal.
void ExpectTypesAgreeWithShapeProp(const Module& m) {
  Module fresh = m.Clone();
  for (Node* n : fresh.graph().nodes()) {
    if (n->op() == OpCode::kCallFunction) n->meta().type.reset();
  }
  ASSERT_TRUE(RunPipeline(fresh, "shape-prop"));
  EXPECT_EQ(PrintModule(fresh), PrintModule(m));
}

TEST(DecomposeTest, GeluExact) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3] = placeholder[target=x]
    %g : f32[2,3] = call_function[target=gelu](args = (%x,), kwargs = {})
    return g
)");
  ASSERT_TRUE(RunPipeline(m, "decompose"));
  // 0.5 * x * (1 + erf(x * (1 / sqrt(2)))).
  EXPECT_EQ(Ops(m.graph()), "mul erf mul add mul");
  Node* scaled = m.graph().FindNode("x")->users()[0];
  EXPECT_TRUE(scaled->is_call("mul"));
  EXPECT_DOUBLE_EQ(scaled->arg(1).double_value(), 1 / std::sqrt(2.0));
  Node* out = m.graph().output()->arg(0).node();
  EXPECT_EQ(*out->type(), (TensorType{DType::kF32, {2, 3}}));
  EXPECT_TRUE(out->arg(0).node()->is_call("mul"));
  EXPECT_EQ(out->arg(0).node()->arg(1).double_value(), 0.5);
  EXPECT_TRUE(out->arg(1).node()->is_call("add"));
  EXPECT_EQ(out->arg(1).node()->arg(1).double_value(), 1.0);
  ASSERT_TRUE(out->meta().provenance.has_value());
  EXPECT_EQ(out->meta().provenance->pass, "decompose");
  EXPECT_EQ(out->meta().provenance->from, (std::vector<std::string>{"g"}));
  ExpectTypesAgreeWithShapeProp(m);
}

TEST(DecomposeTest, GeluTanh) {
  Module m = Parse(R"(
graph():
    %x : f16[4] = placeholder[target=x]
    %g : f16[4] = call_function[target=gelu](args = (%x,), kwargs = {approximate: "tanh"})
    return g
)");
  ASSERT_TRUE(RunPipeline(m, "decompose{ops=gelu}"));
  EXPECT_EQ(Ops(m.graph()), "mul mul mul add mul tanh mul add mul");
  Node* tanh = m.graph().FindNode("tanh");
  ASSERT_NE(tanh, nullptr);
  EXPECT_DOUBLE_EQ(tanh->arg(0).node()->arg(1).double_value(),
                   std::sqrt(2 / M_PI));
  EXPECT_EQ(m.graph().output()->arg(0).node()->type()->dtype, DType::kF16);
  ExpectTypesAgreeWithShapeProp(m);
}

TEST(DecomposeTest, LayerNormWithWeightAndBias) {
  Module m = Parse(R"(
tensor w : f32[3,4] = random(seed=1)
tensor b : f32[3,4] = random(seed=2)
graph():
    %x : f32[2,3,4] = placeholder[target=x]
    %w : f32[3,4] = get_attr[target=w]
    %b : f32[3,4] = get_attr[target=b]
    %ln : f32[2,3,4] = call_function[target=layer_norm](args = (%x, [3, 4], %w, %b), kwargs = {eps: 0.001})
    return ln
)");
  ASSERT_TRUE(RunPipeline(m, "decompose"));
  EXPECT_EQ(Ops(m.graph()), "mean sub mul mean add rsqrt mul mul add");
  Node* mean = m.graph().FindNode("mean");
  EXPECT_EQ(mean->arg(1).int_list(), (std::vector<int64_t>{-2, -1}));
  EXPECT_EQ(mean->arg(2), Argument(true));
  Node* eps = m.graph().FindNode("rsqrt")->arg(0).node();
  EXPECT_EQ(eps->arg(1).double_value(), 0.001);
  Node* out = m.graph().output()->arg(0).node();
  EXPECT_TRUE(out->is_call("add"));
  EXPECT_EQ(out->arg(1).node()->name(), "b");
  ExpectTypesAgreeWithShapeProp(m);
}

TEST(DecomposeTest, LayerNormWithoutAffine) {
  Module m = Parse(R"(
graph():
    %x : f32[2,4] = placeholder[target=x]
    %ln : f32[2,4] = call_function[target=layer_norm](args = (%x, [4]), kwargs = {})
    return ln
)");
  ASSERT_TRUE(RunPipeline(m, "decompose{ops=layer_norm}"));
  EXPECT_EQ(Ops(m.graph()), "mean sub mul mean add rsqrt mul");
  EXPECT_EQ(m.graph().FindNode("rsqrt")->arg(0).node()->arg(1).double_value(),
            1e-5);
}

TEST(DecomposeTest, LinearBecomesMatmulWithTransposedWeight) {
  Module ok = Parse(R"(
tensor w : f32[5,3] = random(seed=1)
tensor b : f32[5] = random(seed=2)
tensor v : f32[4,5] = random(seed=3)
graph():
    %x : f32[2,3] = placeholder[target=x]
    %w : f32[5,3] = get_attr[target=w]
    %b : f32[5] = get_attr[target=b]
    %v : f32[4,5] = get_attr[target=v]
    %y : f32[2,5] = call_function[target=linear](args = (%x, %w, %b), kwargs = {})
    %z : f32[2,4] = call_function[target=linear](args = (%y, %v), kwargs = {bias: None})
    return z
)");
  ASSERT_TRUE(RunPipeline(ok, "decompose{ops=linear}"));
  EXPECT_EQ(Ops(ok.graph()), "transpose matmul add transpose matmul");
  Node* t = ok.graph().FindNode("transpose");
  EXPECT_EQ(t->arg(0).node()->name(), "w");
  EXPECT_EQ(t->arg(1).int_value(), 0);
  EXPECT_EQ(t->arg(2).int_value(), 1);
  Node* out = ok.graph().output()->arg(0).node();
  EXPECT_TRUE(out->is_call("matmul"));
  EXPECT_EQ(*out->type(), (TensorType{DType::kF32, {2, 4}}));
  ExpectTypesAgreeWithShapeProp(ok);
}

TEST(DecomposeTest, SiluSoftmaxLogSoftmax) {
  Module m = Parse(R"(
graph():
    %x : f32[2,6] = placeholder[target=x]
    %s : f32[2,6] = call_function[target=silu](args = (%x,), kwargs = {})
    %p : f32[2,6] = call_function[target=softmax](args = (%s, -1), kwargs = {})
    %l : f32[2,6] = call_function[target=log_softmax](args = (%p,), kwargs = {dim: 0})
    return l
)");
  ASSERT_TRUE(RunPipeline(m, "decompose{ops=silu;softmax;log_softmax}"));
  EXPECT_EQ(Ops(m.graph()),
            "sigmoid mul amax sub exp sum div amax sub exp sum log sub");
  Node* amax = m.graph().FindNode("amax");
  EXPECT_EQ(amax->arg(1).int_list(), (std::vector<int64_t>{-1}));
  EXPECT_EQ(amax->arg(2), Argument(true));
  Node* amax1 = m.graph().FindNode("amax_1");
  EXPECT_EQ(amax1->arg(1).int_list(), (std::vector<int64_t>{0}));
  ExpectTypesAgreeWithShapeProp(m);
}

TEST(DecomposeTest, SubsetLeavesOtherOpsAndIntegerInputsAlone) {
  Module m = Parse(R"(
graph():
    %x : f32[2,6] = placeholder[target=x]
    %i : i32[2,6] = placeholder[target=i]
    %a : f32[2,6] = call_function[target=gelu](args = (%i,), kwargs = {})
    %s : f32[2,6] = call_function[target=silu](args = (%x,), kwargs = {})
    %t : f32[2,6] = call_function[target=add](args = (%a, %s), kwargs = {})
    return t
)");
  ASSERT_FALSE(RunPipeline(m, "decompose{ops=gelu}"));
  EXPECT_EQ(Ops(m.graph()), "gelu silu add");
}

TEST(DecomposeTest, UnknownOpIsAnError) {
  absl::StatusOr<Pipeline> p =
      Pipeline::FromString("decompose{ops=gelu;conv2d}");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("cannot decompose 'conv2d'; decomposable ops: gelu, "
                        "layer_norm, linear, log_softmax, silu, softmax"));
}

}  // namespace
}  // namespace graft::passes
