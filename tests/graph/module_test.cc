#include "graph/module.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

// x -> add(x, w) -> call_module sub -> output, with tensor w and a
// submodule "sub" that negates its input.
Module MakeModule() {
  Module m;
  m.SetTensor("w", Tensor::FromVector<float>(DType::kF32, {2}, {1, 2}),
              "random(seed=1)");
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", TensorType{DType::kF32, {2}});
  Node* w = g.GetAttr("w", TensorType{DType::kF32, {2}});
  Node* add = g.CallFunction("add", {x, w});
  Node* call = g.CallModule("sub", {add});
  g.Output(call);
  Module sub;
  Node* sx = sub.graph().Placeholder("x");
  sub.graph().Output(sub.graph().CallFunction("neg", {sx}));
  m.AddSubmodule("sub", std::move(sub));
  return m;
}

TEST(ModuleTest, TensorsAreSortedByName) {
  Module m;
  m.SetTensor("b", Tensor(DType::kF32, {1}));
  m.SetTensor("a", Tensor(DType::kI8, {2}), "zeros");
  m.SetTensor("a.c", Tensor(DType::kF32, {3}));
  std::vector<std::string> keys;
  for (const auto& [name, t] : m.tensors()) keys.push_back(name);
  EXPECT_THAT(keys, ElementsAre("a", "a.c", "b"));
  ASSERT_NE(m.FindTensor("a"), nullptr);
  EXPECT_EQ(m.FindTensor("a")->TypeString(), "i8[2]");
  EXPECT_EQ(m.tensors().at("a").init, "zeros");
  EXPECT_EQ(m.FindTensor("z"), nullptr);
}

TEST(ModuleTest, ReplacingATensorForgetsItsInit) {
  Module m;
  m.SetTensor("w", Tensor(DType::kF32, {2}), "random(seed=4)");
  m.SetTensor("w", Tensor(DType::kF32, {3}));
  EXPECT_EQ(m.tensors().at("w").init, "");
  EXPECT_EQ(m.FindTensor("w")->NumElements(), 3);
  EXPECT_TRUE(m.RemoveTensor("w"));
  EXPECT_FALSE(m.RemoveTensor("w"));
  EXPECT_TRUE(m.tensors().empty());
}

TEST(ModuleTest, UniqueNames) {
  Module m;
  EXPECT_EQ(m.UniqueTensorName("w"), "w");
  m.SetTensor("w", Tensor());
  EXPECT_EQ(m.UniqueTensorName("w"), "w_1");
  m.SetTensor("w_1", Tensor());
  EXPECT_EQ(m.UniqueTensorName("w"), "w_2");
  EXPECT_EQ(m.UniqueSubmoduleName("fused"), "fused");
  m.AddSubmodule("fused", Module());
  EXPECT_EQ(m.UniqueSubmoduleName("fused"), "fused_1");
}

TEST(ModuleTest, Submodules) {
  Module m;
  Module* a = m.AddSubmodule("a", Module());
  a->graph().Placeholder("x");
  EXPECT_EQ(m.FindSubmodule("a"), a);
  EXPECT_EQ(m.FindSubmodule("b"), nullptr);
  Module* b = m.AddSubmodule("b", Module());
  EXPECT_EQ(m.FindSubmodule("a"), a);  // Pointers stay valid.
  EXPECT_EQ(a->graph().num_nodes(), 1u);
  EXPECT_EQ(m.submodules().size(), 2u);
  EXPECT_TRUE(m.RemoveSubmodule("a"));
  EXPECT_FALSE(m.RemoveSubmodule("a"));
  EXPECT_EQ(m.FindSubmodule("b"), b);
}

TEST(ModuleTest, MoveKeepsNodesAndGraphTogether) {
  Module m = MakeModule();
  Node* x = m.graph().FindNode("x");
  const Graph* graph = &m.graph();
  Module moved = std::move(m);
  EXPECT_EQ(&moved.graph(), graph);
  EXPECT_EQ(x->graph(), &moved.graph());
  EXPECT_EQ(moved.graph().FindNode("x"), x);
  EXPECT_TRUE(Verify(moved).ok()) << Verify(moved);
}

TEST(ModuleTest, CloneCopiesTheGraphAndSharesTensorData) {
  Module m = MakeModule();
  ASSERT_TRUE(Verify(m).ok()) << Verify(m);
  Module c = m.Clone();
  EXPECT_TRUE(Verify(c).ok()) << Verify(c);
  EXPECT_EQ(Names(c.graph()), Names(m.graph()));
  for (const Node* n : c.graph().nodes()) {
    EXPECT_EQ(n->graph(), &c.graph());
    EXPECT_NE(m.graph().FindNode(n->name()), n);
  }
  EXPECT_EQ(c.graph().FindNode("x")->type(), m.graph().FindNode("x")->type());
  // Tensor data is shared, not copied ...
  EXPECT_EQ(c.FindTensor("w")->storage(), m.FindTensor("w")->storage());
  EXPECT_EQ(c.tensors().at("w").init, "random(seed=1)");
  // ... but the tensor table is the clone's own.
  c.SetTensor("w", Tensor(DType::kF32, {2}));
  EXPECT_EQ(m.FindTensor("w")->GetAsDouble(1), 2.0);
  // Submodules are cloned deeply.
  ASSERT_NE(c.FindSubmodule("sub"), nullptr);
  EXPECT_NE(c.FindSubmodule("sub"), m.FindSubmodule("sub"));
  EXPECT_NE(&c.FindSubmodule("sub")->graph(), &m.FindSubmodule("sub")->graph());
}

TEST(ModuleTest, EditingACloneLeavesTheOriginalAlone) {
  Module m = MakeModule();
  Module c = m.Clone();
  Graph& g = c.graph();
  Node* add = g.FindNode("add");
  Node* x = g.FindNode("x");
  {
    auto guard = g.InsertingAfter(add);
    Node* r = g.CallFunction("relu", {add});
    add->ReplaceUsesWithIf(r, [&](Node* user) { return user != r; });
  }
  ASSERT_TRUE(g.Rename(x, "input").ok());
  Graph& sub = c.FindSubmodule("sub")->graph();
  Node* neg = sub.FindNode("neg");
  sub.output()->SetArg(0, sub.FindNode("x"));
  ASSERT_TRUE(sub.EraseNode(neg).ok());
  sub.Cleanup();
  c.RemoveTensor("w");

  EXPECT_THAT(Names(m.graph()), ElementsAre("x", "w", "add", "sub", "output"));
  EXPECT_EQ(m.graph().FindNode("add")->num_uses(), 1u);
  EXPECT_EQ(m.FindSubmodule("sub")->graph().num_nodes(), 3u);
  EXPECT_NE(m.FindTensor("w"), nullptr);
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  EXPECT_THAT(Names(c.graph()),
              ElementsAre("input", "w", "add", "relu", "sub", "output"));
}

}  // namespace
}  // namespace graft
