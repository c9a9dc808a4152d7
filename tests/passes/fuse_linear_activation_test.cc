#include "passes/fuse_linear_activation.h"

#include "graph/op_registry.h"
#include "graph/verifier.h"
#include "graph/fused_ops.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

bool Fuse(Module& m) {
  PassContext ctx;
  FuseLinearActivationPass pass;
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  m.graph().Cleanup();
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  return changed.ok() && *changed;
}

TEST(FuseLinearActivationTest, LinearRelu) {
  Module m = Parse(R"(
tensor w : f32[4,3] = random(seed=1)
tensor b : f32[4] = random(seed=2)
graph():
    %x : f32[batch,3] = placeholder[target=x]
    %w : f32[4,3] = get_attr[target=w]
    %b : f32[4] = get_attr[target=b]
    %y : f32[batch,4] = call_function[target=linear](args = (%x, %w, %b), kwargs = {})
    %r : f32[batch,4] = call_function[target=relu](args = (%y,), kwargs = {})
    return r
)");
  ASSERT_TRUE(Fuse(m));
  EXPECT_EQ(Ops(m.graph()), "graft::linear_activation");
  Node* f = m.graph().output()->arg(0).node();
  EXPECT_EQ(f->arg(0).node()->name(), "x");
  EXPECT_EQ(f->arg(1).node()->name(), "w");
  EXPECT_EQ(f->arg(2).node()->name(), "b");
  EXPECT_EQ(f->arg(3).string_value(), "relu");
  EXPECT_EQ(f->arg(4).string_value(), "out_in");
  EXPECT_EQ(*f->type(), (TensorType{DType::kF32, {Dim::Symbol("batch"), 4}}));
  EXPECT_EQ(f->meta().provenance->from, (std::vector<std::string>{"y", "r"}));
}

TEST(FuseLinearActivationTest, MatmulBiasGeluEitherOrder) {
  Module m = Parse(R"(
tensor w : f32[3,4] = random(seed=1)
tensor b : f32[4] = random(seed=2)
graph():
    %x : f32[2,5,3] = placeholder[target=x]
    %w : f32[3,4] = get_attr[target=w]
    %b : f32[4] = get_attr[target=b]
    %mm : f32[2,5,4] = call_function[target=matmul](args = (%x, %w), kwargs = {})
    %add : f32[2,5,4] = call_function[target=add](args = (%b, %mm), kwargs = {})
    %g : f32[2,5,4] = call_function[target=gelu](args = (%add,), kwargs = {approximate: "tanh"})
    %mm2 : f32[2,5,4] = call_function[target=matmul](args = (%x, %w), kwargs = {})
    %g2 : f32[2,5,4] = call_function[target=gelu](args = (%mm2,), kwargs = {})
    return (g, g2)
)");
  ASSERT_TRUE(Fuse(m));
  EXPECT_EQ(Ops(m.graph()),
            "graft::linear_activation graft::linear_activation");
  const ArgumentList& out = m.graph().output()->arg(0).list();
  Node* f = out[0].node();
  EXPECT_EQ(f->arg(0).node()->name(), "x");
  EXPECT_EQ(f->arg(1).node()->name(), "w");
  EXPECT_EQ(f->arg(2).node()->name(), "b");
  EXPECT_EQ(f->arg(3).string_value(), "gelu_tanh");
  EXPECT_EQ(f->arg(4).string_value(), "in_out");
  Node* f2 = out[1].node();
  EXPECT_TRUE(f2->arg(2).is_none());
  EXPECT_EQ(f2->arg(3).string_value(), "gelu");
  EXPECT_EQ(*f2->type(), (TensorType{DType::kF32, {2, 5, 4}}));
}

TEST(FuseLinearActivationTest, LeavesUnsafeShapesAlone) {
  // %y has a second user; the bias add broadcasts [2,1] up to [2,4]; the
  // matmul weight is 3-D; the activation is leaky_relu.
  Module m = Parse(R"(
tensor w : f32[4,3] = random(seed=1)
tensor wt : f32[3,1] = random(seed=2)
tensor b4 : f32[4] = random(seed=3)
tensor w3 : f32[2,3,4] = random(seed=4)
graph():
    %x : f32[2,3] = placeholder[target=x]
    %w : f32[4,3] = get_attr[target=w]
    %wt : f32[3,1] = get_attr[target=wt]
    %b4 : f32[4] = get_attr[target=b4]
    %w3 : f32[2,3,4] = get_attr[target=w3]
    %y : f32[2,4] = call_function[target=linear](args = (%x, %w), kwargs = {})
    %r : f32[2,4] = call_function[target=relu](args = (%y,), kwargs = {})
    %mm : f32[2,1] = call_function[target=matmul](args = (%x, %wt), kwargs = {})
    %add : f32[2,4] = call_function[target=add](args = (%mm, %b4), kwargs = {})
    %r2 : f32[2,4] = call_function[target=relu](args = (%add,), kwargs = {})
    %mm3 : f32[2,2,4] = call_function[target=matmul](args = (%x, %w3), kwargs = {})
    %r3 : f32[2,2,4] = call_function[target=relu](args = (%mm3,), kwargs = {})
    %y4 : f32[2,4] = call_function[target=linear](args = (%x, %w), kwargs = {})
    %r4 : f32[2,4] = call_function[target=leaky_relu](args = (%y4,), kwargs = {})
    return (y, r, r2, r3, r4)
)");
  EXPECT_FALSE(Fuse(m));
  EXPECT_EQ(Ops(m.graph()),
            "linear relu matmul add relu matmul relu linear leaky_relu");
}

TEST(FuseLinearActivationTest, OpIsRegisteredWithATypeRule) {
  // A core op: no registration call needed.
  const OpSchema* s = OpRegistry::Global().Find(kLinearActivationOp);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->params.size(), 5u);
  EXPECT_EQ(s->params[2].name, "bias");
  EXPECT_TRUE(s->params[2].optional);
  EXPECT_EQ(s->params[3].default_value, Argument("relu"));
  EXPECT_EQ(s->params[4].default_value, Argument("out_in"));
  Module m = Parse(R"(
tensor w : f32[4,3] = zeros
graph():
    %x : f32[2,3] = placeholder[target=x]
    %w : f32[4,3] = get_attr[target=w]
    %f = call_function[target=graft::linear_activation](args = (%x, %w), kwargs = {activation: "swish"})
    return f
)");
  auto types = InferNodeTypes(*m.graph().FindNode("f"));
  ASSERT_FALSE(types.ok());
  EXPECT_THAT(types.status().message(),
              ::testing::HasSubstr("activation must be"));
}

}  // namespace
}  // namespace graft::passes
