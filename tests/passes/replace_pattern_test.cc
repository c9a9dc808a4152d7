#include "passes/replace_pattern.h"

#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

constexpr char kChain[] = R"(
graph():
    %x = placeholder[target=x]
    %mul = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %add = call_function[target=add](args = (%mul, 1.0), kwargs = {})
    %relu = call_function[target=relu](args = (%add,), kwargs = {})
    %mul_1 = call_function[target=mul](args = (%relu, 2.0), kwargs = {})
    %add_1 = call_function[target=add](args = (%mul_1, 1.0), kwargs = {})
    %relu_1 = call_function[target=relu](args = (%add_1,), kwargs = {})
    return relu_1
)";

constexpr char kReluPattern[] = R"(
graph():
    %x = placeholder[target=x]
    %add = call_function[target=add](args = (%x, 1.0), kwargs = {})
    %relu = call_function[target=relu](args = (%add,), kwargs = {})
    return relu
)";

constexpr char kLeakyReplacement[] = R"(
graph():
    %x = placeholder[target=x]
    %add = call_function[target=add](args = (%x, 1.0), kwargs = {})
    %leaky_relu = call_function[target=leaky_relu](args = (%add,), kwargs = {})
    return leaky_relu
)";

TEST(ReplacePatternTest, ReplacesEveryOccurrence) {
  Module m = Parse(kChain);
  Module pattern = Parse(kReluPattern);
  Module replacement = Parse(kLeakyReplacement);
  PassContext ctx;
  ctx.set_current_pass("test-rewrite");
  auto replaced = ReplacePattern(m, pattern, replacement, {}, &ctx);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_EQ(replaced->size(), 2u);
  EXPECT_EQ((*replaced)[0].anchor->name(), "relu");
  EXPECT_EQ((*replaced)[0].replacements.size(), 2u);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "mul add leaky_relu mul add leaky_relu");
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  // The second mul now reads the first replacement's output.
  Node* mul1 = m.graph().FindNode("mul_1");
  ASSERT_NE(mul1, nullptr);
  EXPECT_TRUE(mul1->arg(0).node()->is_call("leaky_relu"));
  // Provenance names the pass and the replaced nodes.
  const auto& prov = mul1->arg(0).node()->meta().provenance;
  ASSERT_TRUE(prov.has_value());
  EXPECT_EQ(prov->pass, "test-rewrite");
  EXPECT_THAT(prov->from, ::testing::UnorderedElementsAre("add", "relu"));
}

TEST(ReplacePatternTest, EachCopyGetsTheTypesOfItsOwnOperands) {
  // Four matches over operands of three types, the first type twice: the
  // copies of one replacement node must not share types across operand
  // types.
  Module m = Parse(R"(
graph():
    %a : f32[2] = placeholder[target=a]
    %b : f32[3,4] = placeholder[target=b]
    %c : f32[batch,4] = placeholder[target=c]
    %add : f32[2] = call_function[target=add](args = (%a, 1.0), kwargs = {})
    %relu : f32[2] = call_function[target=relu](args = (%add,), kwargs = {})
    %add_1 : f32[3,4] = call_function[target=add](args = (%b, 1.0), kwargs = {})
    %relu_1 : f32[3,4] = call_function[target=relu](args = (%add_1,), kwargs = {})
    %add_2 : f32[batch,4] = call_function[target=add](args = (%c, 1.0), kwargs = {})
    %relu_2 : f32[batch,4] = call_function[target=relu](args = (%add_2,), kwargs = {})
    %add_3 : f32[2] = call_function[target=add](args = (%a, 1.0), kwargs = {})
    %relu_3 : f32[2] = call_function[target=relu](args = (%add_3,), kwargs = {})
    return (relu, relu_1, relu_2, relu_3)
)");
  auto replaced =
      ReplacePattern(m, Parse(kReluPattern), Parse(kLeakyReplacement), {}, nullptr);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_EQ(replaced->size(), 4u);
  const char* expected[] = {"f32[2]", "f32[3,4]", "f32[batch,4]", "f32[2]"};
  for (size_t i = 0; i < 4; ++i) {
    for (Node* copy : (*replaced)[i].replacements) {
      ASSERT_TRUE(copy->type().has_value()) << copy->Ref();
      EXPECT_EQ(copy->type()->ToString(), expected[i]) << copy->Ref();
    }
  }
  m.graph().Cleanup();
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(ReplacePatternTest, LiteralsMustMatchUnlessIgnored) {
  Module pattern = Parse(R"(
graph():
    %x = placeholder[target=x]
    %add = call_function[target=add](args = (%x, 5.0), kwargs = {})
    %relu = call_function[target=relu](args = (%add,), kwargs = {})
    return relu
)");
  Module replacement = Parse(kLeakyReplacement);
  Module m = Parse(kChain);
  EXPECT_EQ(ReplacePattern(m, pattern, replacement)->size(), 0u);
  ReplaceOptions ignore;
  ignore.ignore_literals = true;
  EXPECT_EQ(ReplacePattern(m, pattern, replacement, ignore)->size(), 2u);
}

TEST(ReplacePatternTest, InnerValueUsedOutsideBlocksMatch) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %add = call_function[target=add](args = (%x, 1.0), kwargs = {})
    %relu = call_function[target=relu](args = (%add,), kwargs = {})
    %out = call_function[target=mul](args = (%relu, %add), kwargs = {})
    return out
)");
  auto replaced = ReplacePattern(m, Parse(kReluPattern), Parse(kLeakyReplacement));
  ASSERT_TRUE(replaced.ok());
  EXPECT_TRUE(replaced->empty());
  EXPECT_EQ(Ops(m.graph()), "add relu mul");
}

TEST(ReplacePatternTest, MatchesDoNotOverlap) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %r1 = call_function[target=relu](args = (%x,), kwargs = {})
    %r2 = call_function[target=relu](args = (%r1,), kwargs = {})
    %r3 = call_function[target=relu](args = (%r2,), kwargs = {})
    return r3
)");
  Module pattern = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=relu](args = (%x,), kwargs = {})
    %b = call_function[target=relu](args = (%a,), kwargs = {})
    return b
)");
  Module replacement = Parse(R"(
graph():
    %x = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
)");
  auto replaced = ReplacePattern(m, pattern, replacement);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->size(), 1u);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "relu relu");
  EXPECT_TRUE(Verify(m).ok());
}

TEST(ReplacePatternTest, RepeatedPlaceholderMustBindOneNode) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %same = call_function[target=add](args = (%x, %x), kwargs = {})
    %diff = call_function[target=add](args = (%x, %y), kwargs = {})
    %out = call_function[target=mul](args = (%same, %diff), kwargs = {})
    return out
)");
  Module pattern = Parse(R"(
graph():
    %a = placeholder[target=a]
    %s = call_function[target=add](args = (%a, %a), kwargs = {})
    return s
)");
  Module replacement = Parse(R"(
graph():
    %a = placeholder[target=a]
    %s = call_function[target=mul](args = (%a, 2.0), kwargs = {})
    return s
)");
  auto replaced = ReplacePattern(m, pattern, replacement);
  ASSERT_TRUE(replaced.ok());
  ASSERT_EQ(replaced->size(), 1u);
  EXPECT_EQ(replaced->front().anchor->name(), "same");
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "mul add mul");
}

TEST(ReplacePatternTest, FiltersVetoMatches) {
  Module m = Parse(kChain);
  ReplaceOptions options;
  // Only rewrite where the wildcard is bound to the first mul.
  options.filters.push_back([](const PatternMatch& match, const Graph&) {
    return match.inputs[0]->name() == "mul";
  });
  auto replaced = ReplacePattern(m, Parse(kReluPattern), Parse(kLeakyReplacement), options);
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->size(), 1u);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "mul add leaky_relu mul add relu");
}

TEST(ReplacePatternTest, MultipleOutputs) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %e = call_function[target=exp](args = (%x,), kwargs = {})
    %n = call_function[target=neg](args = (%x,), kwargs = {})
    %out = call_function[target=sub](args = (%e, %n), kwargs = {})
    return out
)");
  Module pattern = Parse(R"(
graph():
    %x = placeholder[target=x]
    %e = call_function[target=exp](args = (%x,), kwargs = {})
    %n = call_function[target=neg](args = (%x,), kwargs = {})
    return (e, n)
)");
  Module replacement = Parse(R"(
graph():
    %x = placeholder[target=x]
    %e = call_function[target=sigmoid](args = (%x,), kwargs = {})
    %n = call_function[target=abs](args = (%x,), kwargs = {})
    return (e, n)
)");
  auto replaced = ReplacePattern(m, pattern, replacement);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_EQ(replaced->size(), 1u);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "sigmoid abs sub");
  Node* out = m.graph().FindNode("out");
  EXPECT_TRUE(out->arg(0).node()->is_call("sigmoid"));
  EXPECT_TRUE(out->arg(1).node()->is_call("abs"));
  EXPECT_TRUE(Verify(m).ok());
}

TEST(ReplacePatternTest, SkipsRewriteThatWouldFormACycle) {
  // Outputs e (early) and n (late); n's input depends on e through an
  // outside node, so no single place for the replacement exists.
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %e = call_function[target=exp](args = (%x,), kwargs = {})
    %mid = call_function[target=relu](args = (%e,), kwargs = {})
    %n = call_function[target=add](args = (%x, %mid), kwargs = {})
    return n
)");
  Module pattern = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %e = call_function[target=exp](args = (%x,), kwargs = {})
    %n = call_function[target=add](args = (%x, %y), kwargs = {})
    return (e, n)
)");
  Module replacement = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %e = call_function[target=sigmoid](args = (%x,), kwargs = {})
    %n = call_function[target=sub](args = (%x, %y), kwargs = {})
    return (e, n)
)");
  auto replaced = ReplacePattern(m, pattern, replacement);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_TRUE(replaced->empty());
  EXPECT_EQ(Ops(m.graph()), "exp relu add");
  EXPECT_TRUE(Verify(m).ok());
}

TEST(ReplacePatternTest, ReplacementTensorsAreCopiedIn) {
  Module m = Parse(kChain);
  Module replacement = Parse(R"(
tensor slope : f32[] = [0.5]
graph():
    %x = placeholder[target=x]
    %add = call_function[target=add](args = (%x, 1.0), kwargs = {})
    %slope = get_attr[target=slope]
    %scaled = call_function[target=mul](args = (%add, %slope), kwargs = {})
    return scaled
)");
  auto replaced = ReplacePattern(m, Parse(kReluPattern), replacement);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->size(), 2u);
  ASSERT_NE(m.FindTensor("slope"), nullptr);
  EXPECT_FLOAT_EQ(m.FindTensor("slope")->data<float>()[0], 0.5f);
  EXPECT_EQ(m.tensors().size(), 1u);  // Copied once, shared by both matches.
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(ReplacePatternTest, MismatchedArityIsAnError) {
  Module m = Parse(kChain);
  Module replacement = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %s = call_function[target=add](args = (%x, %y), kwargs = {})
    return s
)");
  auto replaced = ReplacePattern(m, Parse(kReluPattern), replacement);
  ASSERT_FALSE(replaced.ok());
  EXPECT_THAT(replaced.status().message(), ::testing::HasSubstr("takes 1 inputs"));
}

}  // namespace
}  // namespace graft::passes
