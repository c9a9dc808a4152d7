#include "graph/node.h"

#include <vector>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

Argument List(std::initializer_list<Argument> items) {
  return Argument(ArgumentList(items));
}

TEST(NodeTest, OpCodeNamesRoundTrip) {
  for (OpCode op :
       {OpCode::kPlaceholder, OpCode::kGetAttr, OpCode::kCallFunction,
        OpCode::kCallModule, OpCode::kOutput}) {
    EXPECT_EQ(ParseOpCode(OpCodeName(op)), op);
  }
  EXPECT_EQ(OpCodeName(OpCode::kCallFunction), "call_function");
  EXPECT_EQ(ParseOpCode("call"), std::nullopt);
}

TEST(NodeTest, SlotsNumberArgsThenKwargsDepthFirst) {
  Graph g;
  Node* c = g.Placeholder("c");
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  // where(c, input=x, other=[y, [x]]): slots c=0, x=1, y=2, x=3.
  Node* n = g.CallFunction("where", {c},
                           {{"input", x}, {"other", List({y, List({x})})}});
  EXPECT_THAT(c->uses(), ElementsAre(Use{n, 0}));
  EXPECT_THAT(x->uses(), ElementsAre(Use{n, 1}, Use{n, 3}));
  EXPECT_THAT(y->uses(), ElementsAre(Use{n, 2}));
  EXPECT_THAT(n->inputs(), ElementsAre(c, x, y, x));
  EXPECT_THAT(n->unique_inputs(), ElementsAre(c, x, y));
  EXPECT_THAT(x->users(), ElementsAre(n));
  EXPECT_EQ(x->num_uses(), 2u);
  ASSERT_NE(n->kwarg("other"), nullptr);
  EXPECT_TRUE(n->kwarg("other")->is_list());
  EXPECT_EQ(n->kwarg("missing"), nullptr);
}

TEST(NodeTest, UsersAreDistinctInFirstUseOrder) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("add", {x, x});
  Node* b = g.CallFunction("relu", {x});
  Node* c = g.CallFunction("mul", {b, x});
  EXPECT_THAT(x->users(), ElementsAre(a, b, c));
  EXPECT_EQ(x->num_uses(), 4u);
  EXPECT_TRUE(x->has_uses());
  EXPECT_FALSE(c->has_uses());
  EXPECT_TRUE(c->users().empty());
}

TEST(NodeTest, SettersKeepUseListsInStep) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* n = g.CallFunction("add", {x, x});
  n->SetArg(1, y);
  EXPECT_THAT(x->uses(), ElementsAre(Use{n, 0}));
  EXPECT_THAT(y->uses(), ElementsAre(Use{n, 1}));
  n->SetKwarg("alpha", x);  // New keyword: slot 2.
  EXPECT_THAT(x->uses(), UnorderedElementsAre(Use{n, 0}, Use{n, 2}));
  n->SetKwarg("alpha", 2.0);  // Replaced by a literal.
  EXPECT_THAT(x->uses(), ElementsAre(Use{n, 0}));
  EXPECT_EQ(n->kwargs().size(), 1u);
  n->SetKwargs({{"k", List({y, y})}});
  EXPECT_THAT(y->uses(), UnorderedElementsAre(Use{n, 1}, Use{n, 2}, Use{n, 3}));
  n->SetArgs({1.0, 2.0});
  EXPECT_TRUE(x->uses().empty());
  EXPECT_THAT(y->uses(), UnorderedElementsAre(Use{n, 0}, Use{n, 1}));
  n->SetKwargs({});
  EXPECT_TRUE(y->uses().empty());
  EXPECT_TRUE(n->inputs().empty());
}

TEST(NodeTest, ReplaceAllUsesWithRepeatedOperands) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* add = g.CallFunction("add", {x, x});
  Node* mul = g.CallFunction("mul", {x, 2.0});
  g.Output(List({add, mul}));
  EXPECT_EQ(x->ReplaceAllUsesWith(y), 3u);
  EXPECT_FALSE(x->has_uses());
  EXPECT_EQ(add->arg(0).node(), y);
  EXPECT_EQ(add->arg(1).node(), y);
  EXPECT_EQ(mul->arg(0).node(), y);
  EXPECT_EQ(mul->arg(1), Argument(2.0));
  EXPECT_THAT(y->uses(),
              UnorderedElementsAre(Use{add, 0}, Use{add, 1}, Use{mul, 0}));
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(NodeTest, ReplaceAllUsesWithInNestedLists) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* z = g.Placeholder("z");
  // Slots: x=0, y=1, x=2, x=3 (kwarg).
  Node* n = g.CallFunction("concat", {List({x, List({y, x})})}, {{"dim", x}});
  EXPECT_EQ(x->ReplaceAllUsesWith(z), 3u);
  const ArgumentList& outer = n->arg(0).list();
  EXPECT_EQ(outer[0].node(), z);
  EXPECT_EQ(outer[1].list()[0].node(), y);
  EXPECT_EQ(outer[1].list()[1].node(), z);
  EXPECT_EQ(n->kwarg("dim")->node(), z);
  EXPECT_THAT(z->uses(), UnorderedElementsAre(Use{n, 0}, Use{n, 2}, Use{n, 3}));
  EXPECT_THAT(y->uses(), ElementsAre(Use{n, 1}));
  EXPECT_THAT(n->inputs(), ElementsAre(z, y, z, z));
}

TEST(NodeTest, ReplaceAllUsesWithItselfDoesNothing) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* r = g.CallFunction("relu", {x});
  EXPECT_EQ(x->ReplaceAllUsesWith(x), 0u);
  EXPECT_THAT(x->uses(), ElementsAre(Use{r, 0}));
}

TEST(NodeTest, ReplaceUsesWithIfKeepsFilteredUsers) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.CallFunction("sin", {x});
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("add", {x, x});
  Node* c = g.CallFunction("neg", {x});
  g.Output(List({a, b, c, y}));
  // Typical rewrite: new value y reads x; move every other user to y.
  size_t moved = x->ReplaceUsesWithIf(y, [&](Node* user) { return user != y; });
  EXPECT_EQ(moved, 4u);
  EXPECT_THAT(x->uses(), ElementsAre(Use{y, 0}));
  EXPECT_EQ(b->arg(0).node(), y);
  EXPECT_EQ(b->arg(1).node(), y);
  moved = y->ReplaceUsesWithIf(x, [&](Node* user) { return user == b; });
  EXPECT_EQ(moved, 2u);
  EXPECT_EQ(b->arg(0).node(), x);
  EXPECT_EQ(a->arg(0).node(), y);
  EXPECT_EQ(c->arg(0).node(), y);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(NodeTest, ReplaceInputWithTouchesOneUser) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* a = g.CallFunction("add", {x, x});
  Node* b = g.CallFunction("relu", {x});
  a->ReplaceInputWith(x, y);
  EXPECT_EQ(a->arg(0).node(), y);
  EXPECT_EQ(a->arg(1).node(), y);
  EXPECT_EQ(b->arg(0).node(), x);
  EXPECT_THAT(x->uses(), ElementsAre(Use{b, 0}));
  EXPECT_EQ(y->num_uses(), 2u);
}

TEST(NodeTest, SchemaAndIdentity) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* r = g.CallFunction("relu", {x});
  Node* u = g.CallFunction("ns::unknown", {x});
  EXPECT_EQ(r->schema(), OpRegistry::Global().Find("relu"));
  EXPECT_NE(r->schema(), nullptr);
  EXPECT_EQ(u->schema(), nullptr);
  EXPECT_TRUE(r->is_call("relu"));
  EXPECT_FALSE(r->is_call("neg"));
  EXPECT_FALSE(x->is_call("x"));  // A placeholder is not a call.
  EXPECT_EQ(r->Ref(), "%relu");
  EXPECT_EQ(u->name(), "ns_unknown");
  EXPECT_EQ(u->target(), "ns::unknown");
}

TEST(NodeTest, Meta) {
  Graph g;
  Node* x =
      g.Placeholder("x", TensorType{DType::kBF16, {Dim::Symbol("batch"), 8}});
  ASSERT_TRUE(x->type().has_value());
  EXPECT_EQ(x->type()->ToString(), "bf16[batch,8]");
  x->set_type(TensorType{DType::kI8, {}});
  EXPECT_EQ(x->meta().type->ToString(), "i8[]");
  x->meta().provenance = Provenance{"fuse", {"relu_1", "add"}};
  x->meta().entries["k"] = "v";
  EXPECT_EQ(x->meta().provenance->from.size(), 2u);
  Node* r = g.CallFunction("relu", {x});
  EXPECT_FALSE(r->type().has_value());  // Graph edits never infer types.
  EXPECT_TRUE(r->meta().tuple_types.empty());
}

}  // namespace
}  // namespace graft
