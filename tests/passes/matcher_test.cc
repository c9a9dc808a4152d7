#include "passes/matcher.h"

#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Parse;

constexpr char kGraph[] = R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %add = call_function[target=add](args = (%x, 1.5), kwargs = {})
    %relu = call_function[target=relu](args = (%add,), kwargs = {})
    %swapped = call_function[target=mul](args = (3, %y), kwargs = {})
    %sm = call_function[target=softmax](args = (%relu,), kwargs = {dim: 1})
    %out = call_function[target=concat](args = ([%sm, %swapped, %add],), kwargs = {})
    return out
)";

TEST(MatcherTest, NestedCallsCaptureNodesAndLiterals) {
  Module m = Parse(kGraph);
  Node* x = nullptr;
  double c = 0;
  auto p = m::Call("relu", m::Call("add", m::Any(&x), m::ConstantScalar(&c)));
  EXPECT_TRUE(p.Match(m.graph().FindNode("relu")));
  EXPECT_EQ(x, m.graph().FindNode("x"));
  EXPECT_EQ(c, 1.5);
  EXPECT_FALSE(p.Match(m.graph().FindNode("add")));
  EXPECT_FALSE(m::Call("relu", m::Call("add", m::Any(), m::Literal(2.0)))
                   .Match(m.graph().FindNode("relu")));
}

TEST(MatcherTest, CommutativeCallTriesBothOrders) {
  Module m = Parse(kGraph);
  Node* y = nullptr;
  double c = 0;
  EXPECT_FALSE(m::Call("mul", m::Any(&y), m::ConstantScalar(&c))
                   .Match(m.graph().FindNode("swapped")));
  EXPECT_TRUE(m::CommutativeCall("mul", m::Any(&y), m::ConstantScalar(&c))
                  .Match(m.graph().FindNode("swapped")));
  EXPECT_EQ(y, m.graph().FindNode("y"));
  EXPECT_EQ(c, 3.0);
}

TEST(MatcherTest, OneUseAndPredicates) {
  Module m = Parse(kGraph);
  Node* relu = m.graph().FindNode("relu");
  // %add has two users (relu and concat).
  EXPECT_FALSE(m::Call("relu", m::OneUse(m::Call("add", m::Any(), m::Any()))).Match(relu));
  EXPECT_FALSE(m::Call("relu", m::OneUse(m::Any())).Match(relu));
  EXPECT_TRUE(m::OneUse(m::Call("relu", m::Any())).Match(relu));
  EXPECT_TRUE(m::Where(m::Any(), [](const Node& n) { return n.name() == "relu"; })
                  .Match(relu));
  Node* sm = m.graph().FindNode("sm");
  EXPECT_TRUE(m::WithParam(m::Call("softmax", m::Any()), "dim", 1).Match(sm));
  EXPECT_FALSE(m::WithParam(m::Call("softmax", m::Any()), "dim", 0).Match(sm));
}

}  // namespace
}  // namespace graft::passes
