#include "passes/recognize_composites.h"

#include <string>

#include "graph/op_registry.h"
#include "graph/verifier.h"
#include "passes/decompose.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

bool Recognize(Module& m) {
  PassContext ctx;
  absl::StatusOr<bool> changed = RecognizeCompositesPass().Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  m.graph().Cleanup();
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  return changed.ok() && *changed;
}

// What decompose spells out, recognize puts back: the same ops, in place.
TEST(RecognizeCompositesTest, UndoesDecompose) {
  Module m = Parse(R"(
tensor w : f32[8] = random(seed=1)
tensor b : f32[8] = random(seed=2)
tensor w2 : f32[3,8] = random(seed=3)
graph():
    %x : f32[2,3,8] = placeholder[target=x]
    %w : f32[8] = get_attr[target=w]
    %b : f32[8] = get_attr[target=b]
    %w2 : f32[3,8] = get_attr[target=w2]
    %g : f32[2,3,8] = call_function[target=gelu](args = (%x,), kwargs = {approximate: "tanh"})
    %e : f32[2,3,8] = call_function[target=gelu](args = (%g,), kwargs = {})
    %n : f32[2,3,8] = call_function[target=layer_norm](args = (%e, [8]), kwargs = {weight: %w, bias: %b, eps: 0.001})
    %n2 : f32[2,3,8] = call_function[target=layer_norm](args = (%n, [3, 8]), kwargs = {weight: %w2})
    %n3 : f32[2,3,8] = call_function[target=layer_norm](args = (%n2, [8]), kwargs = {bias: %b})
    return n3
)");
  const std::string before = Ops(m.graph());
  PassContext ctx;
  ASSERT_TRUE(DecomposePass::FromOptions({}).value()->Run(m, ctx).value());
  m.graph().Cleanup();
  ASSERT_NE(Ops(m.graph()), before);
  ASSERT_TRUE(Recognize(m));
  EXPECT_EQ(Ops(m.graph()), before);
  const Node* n = m.graph().output()->arg(0).node();
  ASSERT_TRUE(n->is_call("layer_norm"));
  absl::StatusOr<OpCall> last = OpCall::Bind(*n);
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->IsNone("weight"));
  EXPECT_EQ(last->TensorNode("bias")->name(), "b");
  const Node* second = last->TensorNode("input");
  absl::StatusOr<OpCall> mid = OpCall::Bind(*second);
  EXPECT_EQ(mid->Ints("normalized_shape"), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(mid->TensorNode("weight")->name(), "w2");
  const Node* first = mid->TensorNode("input");
  absl::StatusOr<OpCall> ln = OpCall::Bind(*first);
  EXPECT_DOUBLE_EQ(ln->Float("eps"), 0.001);
  EXPECT_EQ(OpCall::Bind(*ln->TensorNode("input"))->String("approximate"), "none");
  const Node* tanh_gelu = ln->TensorNode("input")->arg(0).node();
  EXPECT_EQ(OpCall::Bind(*tanh_gelu)->String("approximate"), "tanh");
  EXPECT_EQ(tanh_gelu->arg(0).node()->name(), "x");
}

// As PyTorch's ONNX export writes them (opset 13): pow for the cube and the
// square, division by sqrt, the bias added first, the halving outside.
TEST(RecognizeCompositesTest, OnnxExportSpellings) {
  Module m = Parse(R"(
tensor lw : f32[16] = random(seed=1)
tensor lb : f32[16] = random(seed=2)
graph():
    %x : f32[2,4,16] = placeholder[target=x]
    %mean : f32[2,4,1] = call_function[target=mean](args = (%x, [-1], True), kwargs = {})
    %sub : f32[2,4,16] = call_function[target=sub](args = (%x, %mean), kwargs = {})
    %pow : f32[2,4,16] = call_function[target=pow](args = (%sub, 2.0), kwargs = {})
    %var : f32[2,4,1] = call_function[target=mean](args = (%pow, [-1], True), kwargs = {})
    %add : f32[2,4,1] = call_function[target=add](args = (%var, 1e-05), kwargs = {})
    %sqrt : f32[2,4,1] = call_function[target=sqrt](args = (%add,), kwargs = {})
    %div : f32[2,4,16] = call_function[target=div](args = (%sub, %sqrt), kwargs = {})
    %lw : f32[16] = get_attr[target=lw]
    %mul : f32[2,4,16] = call_function[target=mul](args = (%div, %lw), kwargs = {})
    %lb : f32[16] = get_attr[target=lb]
    %ln : f32[2,4,16] = call_function[target=add](args = (%lb, %mul), kwargs = {})
    %half : f32[2,4,16] = call_function[target=mul](args = (%ln, 0.5), kwargs = {})
    %cube : f32[2,4,16] = call_function[target=pow](args = (%ln, 3.0), kwargs = {})
    %scaled : f32[2,4,16] = call_function[target=mul](args = (%cube, 0.044714998453855515), kwargs = {})
    %inner : f32[2,4,16] = call_function[target=add](args = (%ln, %scaled), kwargs = {})
    %u : f32[2,4,16] = call_function[target=mul](args = (%inner, 0.7978845834732056), kwargs = {})
    %t : f32[2,4,16] = call_function[target=tanh](args = (%u,), kwargs = {})
    %one : f32[2,4,16] = call_function[target=add](args = (%t, 1.0), kwargs = {})
    %g : f32[2,4,16] = call_function[target=mul](args = (%half, %one), kwargs = {})
    %d : f32[2,4,16] = call_function[target=div](args = (%g, 1.4142135381698608), kwargs = {})
    %erf : f32[2,4,16] = call_function[target=erf](args = (%d,), kwargs = {})
    %one2 : f32[2,4,16] = call_function[target=add](args = (1.0, %erf), kwargs = {})
    %prod : f32[2,4,16] = call_function[target=mul](args = (%g, %one2), kwargs = {})
    %y : f32[2,4,16] = call_function[target=div](args = (%prod, 2.0), kwargs = {})
    return y
)");
  ASSERT_TRUE(Recognize(m));
  EXPECT_EQ(Ops(m.graph()), "layer_norm gelu gelu");
}

// Near misses stay as they are: another constant, an intermediate read
// elsewhere, a mean without keepdim or over a leading dim, a weight that
// broadcasts.
TEST(RecognizeCompositesTest, NearMissesStay) {
  const char* kCases[] = {
      // 0.04 is not GELU's 0.044715.
      R"(graph():
    %x : f32[4,8] = placeholder[target=x]
    %c : f32[4,8] = call_function[target=pow](args = (%x, 3.0), kwargs = {})
    %s : f32[4,8] = call_function[target=mul](args = (%c, 0.04), kwargs = {})
    %i : f32[4,8] = call_function[target=add](args = (%x, %s), kwargs = {})
    %u : f32[4,8] = call_function[target=mul](args = (%i, 0.7978845608), kwargs = {})
    %t : f32[4,8] = call_function[target=tanh](args = (%u,), kwargs = {})
    %o : f32[4,8] = call_function[target=add](args = (%t, 1.0), kwargs = {})
    %h : f32[4,8] = call_function[target=mul](args = (%x, 0.5), kwargs = {})
    %g : f32[4,8] = call_function[target=mul](args = (%h, %o), kwargs = {})
    return g)",
      // erf's value is also an output.
      R"(graph():
    %x : f32[4,8] = placeholder[target=x]
    %d : f32[4,8] = call_function[target=mul](args = (%x, 0.7071067811865476), kwargs = {})
    %e : f32[4,8] = call_function[target=erf](args = (%d,), kwargs = {})
    %o : f32[4,8] = call_function[target=add](args = (%e, 1.0), kwargs = {})
    %h : f32[4,8] = call_function[target=mul](args = (%x, 0.5), kwargs = {})
    %g : f32[4,8] = call_function[target=mul](args = (%h, %o), kwargs = {})
    return (g, e))",
      // The means keep no dim.
      R"(graph():
    %x : f32[4,8] = placeholder[target=x]
    %m : f32[4] = call_function[target=mean](args = (%x, [-1]), kwargs = {})
    %m2 : f32[4,1] = call_function[target=unsqueeze](args = (%m, 1), kwargs = {})
    %c : f32[4,8] = call_function[target=sub](args = (%x, %m2), kwargs = {})
    %q : f32[4,8] = call_function[target=mul](args = (%c, %c), kwargs = {})
    %v : f32[4,1] = call_function[target=mean](args = (%q, [-1], True), kwargs = {})
    %a : f32[4,1] = call_function[target=add](args = (%v, 1e-05), kwargs = {})
    %r : f32[4,1] = call_function[target=rsqrt](args = (%a,), kwargs = {})
    %y : f32[4,8] = call_function[target=mul](args = (%c, %r), kwargs = {})
    return y)",
      // Normalized over the leading dim.
      R"(graph():
    %x : f32[4,8] = placeholder[target=x]
    %m : f32[1,8] = call_function[target=mean](args = (%x, [0], True), kwargs = {})
    %c : f32[4,8] = call_function[target=sub](args = (%x, %m), kwargs = {})
    %q : f32[4,8] = call_function[target=mul](args = (%c, %c), kwargs = {})
    %v : f32[1,8] = call_function[target=mean](args = (%q, [0], True), kwargs = {})
    %a : f32[1,8] = call_function[target=add](args = (%v, 1e-05), kwargs = {})
    %r : f32[1,8] = call_function[target=rsqrt](args = (%a,), kwargs = {})
    %y : f32[4,8] = call_function[target=mul](args = (%c, %r), kwargs = {})
    return y)",
  };
  for (const char* text : kCases) {
    SCOPED_TRACE(text);
    Module m = Parse(text);
    const std::string before = Ops(m.graph());
    EXPECT_FALSE(Recognize(m));
    EXPECT_EQ(Ops(m.graph()), before);
  }
  // A per-row weight [4, 1] broadcasts: it is not layer_norm's weight.
  Module m = Parse(R"(
tensor w : f32[4,1] = random(seed=1)
graph():
    %x : f32[4,8] = placeholder[target=x]
    %w : f32[4,1] = get_attr[target=w]
    %n : f32[4,8] = call_function[target=layer_norm](args = (%x, [8]), kwargs = {})
    %y : f32[4,8] = call_function[target=mul](args = (%n, %w), kwargs = {})
    return y
)");
  EXPECT_FALSE(Recognize(m));
  EXPECT_EQ(Ops(m.graph()), "layer_norm mul");
}

}  // namespace
}  // namespace graft::passes
