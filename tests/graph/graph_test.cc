#include "graph/graph.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_test_peer.h"

namespace graft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Names of the nodes in list order.
std::vector<std::string> Names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

std::vector<Node*> NodesOf(const Graph& g) {
  std::vector<Node*> out;
  for (Node* n : g.nodes()) out.push_back(n);
  return out;
}

std::vector<std::string> ReversedNames(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.reversed_nodes()) out.push_back(n->name());
  return out;
}

TEST(GraphTest, UseListsRecordSlots) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* add = g.CallFunction("add", {x, x});
  ASSERT_EQ(x->num_uses(), 2u);
  EXPECT_EQ(x->uses()[0], (Use{add, 0}));
  EXPECT_EQ(x->uses()[1], (Use{add, 1}));
  EXPECT_EQ(add->name(), "add");
  Node* add2 = g.CallFunction("add", {add, 1.0});
  EXPECT_EQ(add2->name(), "add_1");
}

TEST(GraphTest, EmptyGraph) {
  Graph g;
  EXPECT_TRUE(g.empty());
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_EQ(g.first(), nullptr);
  EXPECT_EQ(g.last(), nullptr);
  EXPECT_EQ(g.output(), nullptr);
  EXPECT_TRUE(g.placeholders().empty());
  EXPECT_TRUE(g.nodes().begin() == g.nodes().end());
  EXPECT_TRUE(g.reversed_nodes().begin() == g.reversed_nodes().end());
}

TEST(GraphTest, Accessors) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* w = g.GetAttr("fc.weight");
  Node* r = g.CallFunction("relu", {x});
  Node* out = g.Output(r);
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(g.first(), x);
  EXPECT_EQ(g.last(), out);
  EXPECT_EQ(x->prev(), nullptr);
  EXPECT_EQ(x->next(), w);
  EXPECT_EQ(out->next(), nullptr);
  EXPECT_EQ(out->prev(), r);
  EXPECT_EQ(g.output(), out);
  EXPECT_THAT(g.placeholders(), ElementsAre(x));
  EXPECT_EQ(g.FindNode("fc.weight"), w);
  EXPECT_EQ(g.FindNode("nope"), nullptr);
  EXPECT_EQ(w->op(), OpCode::kGetAttr);
  EXPECT_EQ(w->target(), "fc.weight");
  EXPECT_EQ(out->name(), "output");
  EXPECT_EQ(out->target(), "output");
  EXPECT_EQ(x->graph(), &g);
}

TEST(GraphTest, InsertionPointGuardsNest) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* out = g.Output(a);
  {
    auto before_out = g.InsertingBefore(out);
    g.CallFunction("neg", {a});  // neg: between relu and output.
    {
      auto after_x = g.InsertingAfter(x);
      g.CallFunction("sin", {x});  // Right after x ...
      g.CallFunction("cos", {x});  // ... and after the previous insert.
      {
        auto at_end = g.InsertingAtEnd();
        g.CallFunction("exp", {x});
      }
      g.CallFunction("tanh", {x});  // Back after cos.
    }
    g.CallFunction("abs", {a});  // Back before the output.
  }
  g.CallFunction("sqrt", {x});  // Default: the end.
  EXPECT_THAT(Names(g), ElementsAre("x", "sin", "cos", "tanh", "relu", "neg",
                                    "abs", "output", "exp", "sqrt"));
}

TEST(GraphTest, InsertionPointFollowsAnErasedNode) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("neg", {x});
  g.Output(b);
  auto guard = g.InsertingBefore(a);
  ASSERT_TRUE(g.EraseNode(a).ok());
  g.CallFunction("sin", {x});  // Where %relu was: before %neg.
  EXPECT_THAT(Names(g), ElementsAre("x", "sin", "neg", "output"));
}

TEST(GraphTest, RestoredInsertionPointSkipsErasedNodes) {
  // An outer guard inserts before %a; an inner one erases %a. When the
  // inner guard ends, new nodes must go where %a was, not next to a node
  // that is no longer in the list.
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("neg", {x});
  g.Output(b);
  {
    auto outer = g.InsertingBefore(a);
    {
      auto inner = g.InsertingBefore(b);
      ASSERT_TRUE(g.EraseNode(a).ok());
    }
    g.CallFunction("sin", {x});
  }
  EXPECT_THAT(Names(g), ElementsAre("x", "sin", "neg", "output"));
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(GraphTest, EraseRefusesNodeWithUsers) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("neg", {a});
  g.Output(b);
  absl::Status s = g.EraseNode(a);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "cannot erase %relu: it still has 1 use(s), first by %neg");
  // Nothing changed.
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_FALSE(a->erased());
  EXPECT_EQ(g.FindNode("relu"), a);
  EXPECT_EQ(x->num_uses(), 1u);
  // Once its user reads something else it can go.
  b->SetArg(0, x);
  ASSERT_TRUE(g.EraseNode(a).ok());
  EXPECT_TRUE(a->erased());
  EXPECT_EQ(a->name(), "relu");  // Still readable until Cleanup().
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(g.FindNode("relu"), nullptr);
  EXPECT_EQ(x->num_uses(), 1u);  // Only %neg now.
  EXPECT_THAT(Names(g), ElementsAre("x", "neg", "output"));
  // The name is free again.
  EXPECT_EQ(g.CallFunction("relu", {x})->name(), "relu");
}

TEST(GraphTest, EraseRejectsErasedAndForeignNodes) {
  Graph g;
  Node* x = g.Placeholder("x");
  ASSERT_TRUE(g.EraseNode(x).ok());
  absl::Status again = g.EraseNode(x);
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(again.message(), HasSubstr("not a live node of this graph"));
  Graph other;
  Node* y = other.Placeholder("y");
  EXPECT_FALSE(g.EraseNode(y).ok());
  EXPECT_EQ(other.num_nodes(), 1u);
}

TEST(GraphTest, EraseDropsEveryUseOfItsInputs) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* keep = g.CallFunction("relu", {x});
  Node* add = g.CallFunction("add", {x, x}, {{"alpha", x}});
  EXPECT_EQ(x->num_uses(), 4u);
  ASSERT_TRUE(g.EraseNode(add).ok());
  ASSERT_EQ(x->num_uses(), 1u);
  EXPECT_EQ(x->uses()[0], (Use{keep, 0}));
}

TEST(GraphTest, EraseTheCurrentNodeWhileIterating) {
  // x -> relu -> neg -> relu -> neg -> output; bypass and erase each relu
  // from inside the loop that stands on it.
  Graph g;
  Node* v = g.Placeholder("x");
  for (int i = 0; i < 2; ++i) {
    v = g.CallFunction("relu", {v});
    v = g.CallFunction("neg", {v});
  }
  g.Output(v);
  int visited = 0;
  for (Node* n : g.nodes()) {
    ++visited;
    if (!n->is_call("relu")) continue;
    n->ReplaceAllUsesWith(n->arg(0).node());
    ASSERT_TRUE(g.EraseNode(n).ok());
  }
  EXPECT_EQ(visited, 6);
  EXPECT_THAT(Names(g), ElementsAre("x", "neg", "neg_1", "output"));
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(GraphTest, ReverseIterationErasesDeadChainsInOnePass) {
  // Dead-code elimination in one reverse sweep: %c, %b, %a die in turn.
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("neg", {a});
  g.CallFunction("sin", {b});
  Node* live = g.CallFunction("cos", {x});
  g.Output(live);
  EXPECT_THAT(ReversedNames(g),
              ElementsAre("output", "cos", "sin", "neg", "relu", "x"));
  for (Node* n : g.reversed_nodes()) {
    if (n->op() == OpCode::kCallFunction && !n->has_uses()) {
      ASSERT_TRUE(g.EraseNode(n).ok());
    }
  }
  EXPECT_THAT(Names(g), ElementsAre("x", "cos", "output"));
}

TEST(GraphTest, IsBeforeFollowsInsertsInTheMiddleAndMoves) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* end = g.Output(x);
  // 3000 inserts that keep halving the same gap (forcing renumbering),
  // alternating with inserts in front of the previous one.
  Node* last = end;
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    Node* before = i % 3 == 0 ? last : end;
    auto guard = g.InsertingBefore(before);
    last = g.CallFunction("relu", {x});
  }
  // Random moves, including to the end and to the very front.
  std::vector<Node*> all = NodesOf(g);
  for (int i = 0; i < 2000; ++i) {
    Node* n = all[rng() % all.size()];
    Node* pos = rng() % 10 == 0 ? nullptr : all[rng() % all.size()];
    g.MoveBefore(n, pos);
  }
  g.MoveBefore(end, nullptr);
  g.MoveBefore(x, g.first());
  std::vector<Node*> order = NodesOf(g);
  ASSERT_EQ(order.size(), 3002u);
  EXPECT_EQ(order.front(), x);
  EXPECT_EQ(order.back(), end);
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    ASSERT_TRUE(order[i]->IsBefore(order[i + 1])) << i;
    ASSERT_FALSE(order[i + 1]->IsBefore(order[i])) << i;
  }
  EXPECT_FALSE(x->IsBefore(x));
  // Links agree with iteration in both directions.
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    ASSERT_EQ(order[i]->next(), order[i + 1]);
    ASSERT_EQ(order[i + 1]->prev(), order[i]);
  }
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(GraphTest, MoveBeforeItsOwnPlaceIsANoOp) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* a = g.CallFunction("relu", {x});
  Node* b = g.CallFunction("neg", {x});
  g.MoveBefore(a, b);
  g.MoveBefore(a, a);
  g.MoveBefore(b, nullptr);
  EXPECT_THAT(Names(g), ElementsAre("x", "relu", "neg"));
  EXPECT_EQ(g.num_nodes(), 3u);
  g.MoveBefore(b, a);
  EXPECT_THAT(Names(g), ElementsAre("x", "neg", "relu"));
  EXPECT_TRUE(b->IsBefore(a));
}

TEST(GraphTest, UniqueNamesAvoidUserChosenNames) {
  Graph g;
  Node* user = g.Placeholder("add_1");
  EXPECT_EQ(user->name(), "add_1");
  Node* x = g.Placeholder("x");
  EXPECT_EQ(g.CallFunction("add", {x, x})->name(), "add");
  EXPECT_EQ(g.CallFunction("add", {x, x})->name(), "add_2");  // add_1 taken.
  EXPECT_EQ(g.CallFunction("add", {x, x})->name(), "add_3");
  EXPECT_EQ(g.Placeholder("x")->name(), "x_1");
  EXPECT_EQ(g.Placeholder("x_1")->name(), "x_1_1");
  EXPECT_EQ(g.Placeholder("add")->name(), "add_4");
  // Targets that are not identifiers give sanitized names.
  EXPECT_EQ(g.CallFunction("ns::gelu", {x})->name(), "ns_gelu");
  EXPECT_EQ(g.Placeholder("1st")->name(), "_1st");
  EXPECT_EQ(g.GetAttr("layer.0.weight")->name(), "layer.0.weight");
  EXPECT_EQ(g.UniqueName("fresh"), "fresh");
  // Every name is distinct and findable.
  for (const Node* n : g.nodes()) EXPECT_EQ(g.FindNode(n->name()), n);
}

TEST(GraphTest, Rename) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* r = g.CallFunction("relu", {x});
  ASSERT_TRUE(g.Rename(r, "activation").ok());
  EXPECT_EQ(r->name(), "activation");
  EXPECT_EQ(g.FindNode("activation"), r);
  EXPECT_EQ(g.FindNode("relu"), nullptr);
  EXPECT_EQ(g.CallFunction("relu", {x})->name(), "relu");  // Freed.
  EXPECT_TRUE(g.Rename(r, "activation").ok());             // Same name.
  absl::Status taken = g.Rename(r, "x");
  EXPECT_EQ(taken.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r->name(), "activation");
  absl::Status bad = g.Rename(r, "two words");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.FindNode("activation"), r);
}

TEST(GraphTest, RenameRefusesErasedNodes) {
  // An erased node's old name may belong to a new node by now; renaming
  // the erased one must not disturb the new one's entry.
  Graph g;
  Node* x = g.Placeholder("x");
  Node* old = g.CallFunction("relu", {x});
  ASSERT_TRUE(g.EraseNode(old).ok());
  Node* fresh = g.CallFunction("relu", {x});
  ASSERT_EQ(fresh->name(), "relu");
  EXPECT_FALSE(g.Rename(old, "ghost").ok());
  EXPECT_EQ(g.FindNode("relu"), fresh);
  EXPECT_EQ(g.FindNode("ghost"), nullptr);
}

TEST(GraphTest, CleanupFreesOnlyErasedNodes) {
  Graph g;
  Node* x = g.Placeholder("x");
  std::vector<Node*> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back(g.CallFunction("relu", {x}));
  ASSERT_TRUE(g.EraseNode(nodes[1]).ok());
  ASSERT_TRUE(g.EraseNode(nodes[3]).ok());
  EXPECT_EQ(g.num_nodes(), 4u);
  EXPECT_EQ(GraphTestPeer::erased_pending(g), 2u);
  // Erased nodes stay readable until Cleanup.
  EXPECT_TRUE(nodes[1]->erased());
  EXPECT_EQ(nodes[3]->name(), "relu_3");
  g.Cleanup();
  EXPECT_EQ(GraphTestPeer::erased_pending(g), 0u);
  EXPECT_EQ(g.num_nodes(), 4u);
  g.Cleanup();  // Nothing left to free.
  EXPECT_EQ(GraphTestPeer::erased_pending(g), 0u);
  // Live nodes are untouched.
  EXPECT_THAT(Names(g), ElementsAre("x", "relu", "relu_2", "relu_4"));
  EXPECT_EQ(x->num_uses(), 3u);
}

TEST(GraphTest, CopyFrom) {
  Graph src;
  Node* x = src.Placeholder("x", TensorType{DType::kF32, {2}});
  Node* w = src.GetAttr("w");
  Node* cat = src.CallFunction(
      "concat", {Argument(ArgumentList{Argument(x), Argument(w), Argument(x)})},
      {{"dim", 0}});
  cat->meta().location = SourceLocation{"model.cc", 12, 3};
  cat->meta().entries["note"] = "kept";
  Node* add = src.CallFunction("add", {cat, 1.0}, {{"other", cat}});
  src.Output(Argument(ArgumentList{Argument(add), Argument(x)}));

  Graph dst;
  Node* clash = dst.Placeholder("x");  // The copy's x must be renamed.
  auto map = dst.CopyFrom(src);
  ASSERT_EQ(map.size(), 5u);
  Node* cx = map.at(x);
  Node* ccat = map.at(cat);
  Node* cadd = map.at(add);
  EXPECT_NE(cx, clash);
  EXPECT_EQ(cx->name(), "x_1");
  EXPECT_EQ(cx->graph(), &dst);
  EXPECT_EQ(cx->type(), x->type());
  EXPECT_EQ(ccat->name(), "concat");
  EXPECT_EQ(ccat->meta().location->file, "model.cc");
  EXPECT_EQ(ccat->meta().entries.at("note"), "kept");
  // Nested list operands point at the copies, with their own uses.
  const ArgumentList& list = ccat->arg(0).list();
  EXPECT_EQ(list[0].node(), cx);
  EXPECT_EQ(list[1].node(), map.at(w));
  EXPECT_EQ(list[2].node(), cx);
  EXPECT_EQ(cadd->kwargs()[0].second.node(), ccat);
  EXPECT_EQ(cx->num_uses(), 3u);  // Twice in concat, once in the output.
  EXPECT_EQ(ccat->num_uses(), 2u);
  EXPECT_EQ(clash->num_uses(), 0u);
  // The source is untouched.
  EXPECT_EQ(x->num_uses(), 3u);
  EXPECT_EQ(src.num_nodes(), 5u);
  EXPECT_THAT(Names(dst),
              ElementsAre("x", "x_1", "w", "concat", "add", "output"));
}

TEST(GraphTest, MillionNodeChain) {
  // Built, walked both ways, rewired at the top and destroyed, all without
  // recursion over the chain.
  constexpr int kNodes = 1'000'000;
  Graph g;
  Node* x = g.Placeholder("x");
  Node* v = x;
  for (int i = 0; i < kNodes; ++i) v = g.CallFunction("relu", {v});
  Node* out = g.Output(v);
  EXPECT_EQ(g.num_nodes(), static_cast<size_t>(kNodes + 2));
  size_t forward = 0;
  for (Node* n : g.nodes()) forward += n->num_uses();
  EXPECT_EQ(forward, static_cast<size_t>(kNodes + 1));
  size_t backward = 0;
  for (Node* n : g.reversed_nodes()) {
    backward += n->op() == OpCode::kCallFunction;
  }
  EXPECT_EQ(backward, static_cast<size_t>(kNodes));
  // Swap the input at the top of the chain.
  Node* y;
  {
    auto guard = g.InsertingAfter(x);
    y = g.Placeholder("y");
  }
  Node* top = y->next();
  EXPECT_EQ(x->ReplaceAllUsesWith(y), 1u);
  EXPECT_EQ(top->arg(0).node(), y);
  ASSERT_TRUE(g.EraseNode(x).ok());
  g.Cleanup();
  EXPECT_EQ(g.first(), y);
  EXPECT_TRUE(y->IsBefore(out));
  EXPECT_TRUE(top->IsBefore(out->prev()));
  EXPECT_EQ(g.num_nodes(), static_cast<size_t>(kNodes + 2));
  // The graph (a full chain) is destroyed at the end of the scope.
}

}  // namespace
}  // namespace graft

namespace graft {
namespace {

// A copy continues the original's name counters: a node added to the copy
// gets the name the original would give it, even when the latest node of
// that target was erased (FX never reuses such a name either).
TEST(GraphCopyTest, CopyNamesNewNodesAsTheOriginalWould) {
  Graph original;
  Node* x = original.Placeholder("x");
  Node* a = original.CallFunction("relu", {x});
  Node* b = original.CallFunction("relu", {a});
  Node* c = original.CallFunction("relu", {b});
  original.Output(b);
  ASSERT_TRUE(original.EraseNode(c).ok());  // relu_2 is gone.
  Graph copy;
  copy.CopyFrom(original);
  EXPECT_EQ(copy.FindNode("relu_2"), nullptr);
  EXPECT_EQ(copy.CallFunction("relu", {copy.FindNode("x")})->name(), "relu_3");
  EXPECT_EQ(original.CallFunction("relu", {x})->name(), "relu_3");
}

TEST(GraphCopyTest, ReserveNodesIsOnlyAHint) {
  Graph g;
  g.ReserveNodes(1000);
  Node* x = g.Placeholder("x");
  for (int i = 0; i < 2000; ++i) x = g.CallFunction("neg", {x});
  g.Output(x);
  EXPECT_EQ(g.num_nodes(), 2002u);
  EXPECT_EQ(g.FindNode("neg_1999")->name(), "neg_1999");
  EXPECT_TRUE(Verify(g).ok());
}

}  // namespace
}  // namespace graft
