#include "graph/verifier.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/module.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/graph/graph_test_peer.h"

namespace graft {
namespace {

using ::testing::HasSubstr;

TensorType F32(std::initializer_list<int64_t> dims) {
  return TensorType{DType::kF32, ShapeFromDims(std::vector<int64_t>(dims))};
}

// x -> relu -> neg -> output, the base most tests break in one place.
struct Chain {
  Graph g;
  Node* x;
  Node* relu;
  Node* neg;
  Node* out;
  Chain() {
    x = g.Placeholder("x", F32({2, 3}));
    relu = g.CallFunction("relu", {x});
    relu->set_type(F32({2, 3}));
    neg = g.CallFunction("neg", {relu});
    neg->set_type(F32({2, 3}));
    out = g.Output(neg);
  }
};

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(VerifierTest, AcceptsWellFormedGraph) {
  Chain c;
  EXPECT_TRUE(Verify(c.g).ok()) << Verify(c.g);
}

TEST(VerifierTest, AcceptsRepeatedOperandsNestedListsAndKwargs) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* add = g.CallFunction("add", {x, x});
  Node* mul = g.CallFunction("mul", {add}, {{"other", y}});
  g.Output(Argument(ArgumentList{Argument(mul), Argument(add), Argument(mul)}));
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(VerifierTest, InputDefinedAfterUse) {
  Chain c;
  c.g.MoveBefore(c.neg, c.relu);  // %neg now precedes the %relu it reads.
  absl::Status s = Verify(c.g);
  EXPECT_EQ(Message(s), "verify: %neg uses %relu, which is defined after it");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(VerifierTest, NodeUsesItself) {
  Chain c;
  c.neg->SetArg(0, c.neg);
  EXPECT_EQ(Message(Verify(c.g)), "verify: %neg uses itself");
}

TEST(VerifierTest, InputFromAnotherGraph) {
  Chain c;
  Graph other;
  Node* y = other.Placeholder("y");
  c.neg->SetArg(0, y);
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %neg uses %y, which belongs to another graph");
  c.neg->SetArg(0, c.relu);  // Leave %y without a foreign use.
}

TEST(VerifierTest, ErasedInput) {
  Chain c;
  Node* dead = c.g.CallFunction("relu", {c.x}, {});
  ASSERT_TRUE(c.g.EraseNode(dead).ok());
  c.neg->SetArg(0, dead);
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %neg uses %relu_1, which was erased");
}

TEST(VerifierTest, OperandWithoutUse) {
  Chain c;
  GraphTestPeer::uses(c.x).clear();
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %relu reads %x in operand slot 0, but %x has no "
            "matching use");
}

TEST(VerifierTest, UseWithSlotOutOfRange) {
  Chain c;
  GraphTestPeer::uses(c.x)[0].slot = 5;
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %x lists a use by %relu in operand slot 5, but %relu has "
            "only 1 operand(s)");
}

TEST(VerifierTest, UseNamingAnotherOperand) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* y = g.Placeholder("y");
  Node* add = g.CallFunction("add", {x, y});
  g.Output(add);
  GraphTestPeer::uses(y)[0].slot = 0;  // Slot 0 holds %x, not %y.
  EXPECT_EQ(Message(Verify(g)),
            "verify: %y lists a use by %add in operand slot 0, but that "
            "operand is %x");
}

TEST(VerifierTest, DuplicateUseEntry) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* add = g.CallFunction("add", {x, x});
  g.Output(add);
  ASSERT_EQ(x->num_uses(), 2u);
  GraphTestPeer::uses(x)[1].slot = 0;  // {add, 0} twice, {add, 1} missing.
  EXPECT_EQ(Message(Verify(g)),
            "verify: %x lists its use by %add in operand slot 0 twice");
}

TEST(VerifierTest, UseByNodeOutsideTheGraph) {
  Chain c;
  Graph other;
  Node* stranger = other.Placeholder("s");
  GraphTestPeer::uses(c.x).push_back(Use{stranger, 0});
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %x has a use by a node that is not a live node of this "
            "graph");
}

TEST(VerifierTest, UseByErasedNode) {
  Chain c;
  Node* dead = c.g.CallFunction("relu", {c.x});
  ASSERT_TRUE(c.g.EraseNode(dead).ok());
  GraphTestPeer::uses(c.x).push_back(Use{dead, 0});
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("%x has a use by a node that is not a live node"));
}

TEST(VerifierTest, DuplicateNames) {
  Chain c;
  GraphTestPeer::SetRawName(c.neg, "relu");
  EXPECT_EQ(Message(Verify(c.g)), "verify: two nodes are named %relu");
}

TEST(VerifierTest, InvalidName) {
  Chain c;
  GraphTestPeer::SetRawName(c.neg, "1st value");
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("verify: node name '1st value' is not valid"));
}

TEST(VerifierTest, NameMissingFromNameTable) {
  Chain c;
  GraphTestPeer::SetRawName(c.neg, "renamed");
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %renamed is missing from the graph's name table");
}

TEST(VerifierTest, UnregisteredOp) {
  Chain c;
  auto guard = c.g.InsertingBefore(c.out);
  c.g.CallFunction("no_such_op", {c.x});
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %no_such_op calls unknown op 'no_such_op'");
}

TEST(VerifierTest, TooManyArguments) {
  Chain c;
  c.neg->SetArgs({c.relu, c.relu});
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("verify: %neg: neg takes at most 1 arguments, got 2"));
}

TEST(VerifierTest, ArgumentOfWrongKind) {
  Chain c;
  c.neg->SetArgs({1.5});
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("verify: %neg: argument 'input' of neg expects Tensor, "
                        "got float 1.5"));
}

TEST(VerifierTest, UnknownKeyword) {
  Chain c;
  c.neg->SetKwarg("alpha", 2.0);
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("verify: %neg: neg has no parameter 'alpha'"));
}

TEST(VerifierTest, MissingRequiredArgument) {
  Chain c;
  auto guard = c.g.InsertingBefore(c.out);
  c.g.CallFunction("add", {c.x});
  EXPECT_THAT(Message(Verify(c.g)),
              HasSubstr("verify: %add: add is missing required argument "
                        "'other'"));
}

TEST(VerifierTest, RecordedTypeDisagreesWithTypeRule) {
  Chain c;
  c.neg->set_type(F32({2, 4}));
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %neg has type f32[2,4], but neg infers f32[2,3] from its "
            "inputs");
}

TEST(VerifierTest, RecordedDTypeDisagreesWithTypeRule) {
  Chain c;
  c.relu->set_type(TensorType{DType::kF16, {2, 3}});
  // %relu is checked first; %neg (recorded f32) would disagree too.
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %relu has type f16[2,3], but relu infers f32[2,3] from "
            "its inputs");
}

TEST(VerifierTest, TypeRuleRejectsInputs) {
  Graph g;
  Node* x = g.Placeholder("x", F32({2}));
  Node* y = g.Placeholder("y", F32({3}));
  g.Output(g.CallFunction("add", {x, y}));
  absl::Status s = Verify(g);
  EXPECT_THAT(Message(s), HasSubstr("verify: %add: "));
  EXPECT_THAT(Message(s), HasSubstr("do not broadcast"));
}

TEST(VerifierTest, UnknownInputTypesSkipTheTypeCheck) {
  Graph g;
  Node* x = g.Placeholder("x");  // No type: nothing to infer from.
  Node* r = g.CallFunction("relu", {x});
  r->set_type(F32({7}));
  g.Output(r);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(VerifierTest, TupleReadWithoutGetitem) {
  Chain c;
  // Pretend %relu returns a tuple: only getitem may read it.
  c.relu->meta().type.reset();
  c.relu->meta().tuple_types = {F32({1}), F32({2})};
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %neg uses %relu, which returns a tuple; read its elements "
            "with getitem");
}

TEST(VerifierTest, NoOutputNode) {
  Graph g;
  Node* x = g.Placeholder("x");
  g.CallFunction("relu", {x});
  EXPECT_EQ(Message(Verify(g)), "verify: the graph has no output node");
  EXPECT_EQ(Message(Verify(Graph())), "verify: the graph has no output node");
}

TEST(VerifierTest, TwoOutputNodes) {
  Chain c;
  c.g.Output(c.x);
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: the graph has more than one output node: %output and "
            "%output_1");
}

TEST(VerifierTest, OutputNotLast) {
  Chain c;
  c.g.CallFunction("relu", {c.x});  // Appended after the output.
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: output node %output is not the last node (%relu_1 follows "
            "it)");
}

TEST(VerifierTest, OutputHasNoValue) {
  Chain c;
  Node* r = c.g.CallFunction("relu", {c.out});
  EXPECT_EQ(Message(Verify(c.g)),
            "verify: %relu_1 uses the output node %output, which has no value");
  ASSERT_TRUE(c.g.EraseNode(r).ok());
  EXPECT_TRUE(Verify(c.g).ok());
}

TEST(VerifierTest, PlaceholderWithArguments) {
  Graph g;
  Node* x = g.Placeholder("x");
  Node* p = g.CreateNode(OpCode::kPlaceholder, "p", {x});
  g.Output(p);
  EXPECT_EQ(Message(Verify(g)), "verify: placeholder %p takes no arguments");
}

TEST(VerifierTest, GetAttrWithKeywordArguments) {
  Graph g;
  Node* w = g.CreateNode(OpCode::kGetAttr, "w", {}, {{"k", 1}});
  g.Output(w);
  EXPECT_EQ(Message(Verify(g)), "verify: get_attr %w takes no arguments");
}

TEST(VerifierTest, OutputWithTwoArguments) {
  Graph g;
  Node* x = g.Placeholder("x");
  g.CreateNode(OpCode::kOutput, "output", {x, x});
  EXPECT_EQ(
      Message(Verify(g)),
      "verify: output node %output must have exactly one argument, got 2");
}

TEST(VerifierTest, OutputOfALiteral) {
  Graph g;
  g.Placeholder("x");
  g.Output(Argument(1.5));
  EXPECT_EQ(Message(Verify(g)),
            "verify: output node %output must return a node or a list of "
            "nodes");
}

// ---- Module-level rules ----

Module ModuleWithWeight() {
  Module m;
  m.SetTensor("fc.weight", Tensor(DType::kF32, {3, 2}));
  Graph& g = m.graph();
  Node* x = g.Placeholder("x", F32({3, 2}));
  Node* w = g.GetAttr("fc.weight", F32({3, 2}));
  Node* add = g.CallFunction("add", {x, w});
  add->set_type(F32({3, 2}));
  g.Output(add);
  return m;
}

TEST(VerifierTest, AcceptsWellFormedModule) {
  Module m = ModuleWithWeight();
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(VerifierTest, GetAttrOfMissingTensor) {
  Module m = ModuleWithWeight();
  m.RemoveTensor("fc.weight");
  EXPECT_TRUE(Verify(m.graph()).ok());  // The graph alone cannot tell.
  EXPECT_EQ(Message(Verify(m)),
            "verify: %fc.weight reads tensor 'fc.weight', which the module "
            "does not have");
}

TEST(VerifierTest, GetAttrTypeDisagreesWithTensor) {
  Module m = ModuleWithWeight();
  m.SetTensor("fc.weight", Tensor(DType::kF32, {2, 3}));
  EXPECT_EQ(Message(Verify(m)),
            "verify: %fc.weight has type f32[3,2], but tensor 'fc.weight' is "
            "f32[2,3]");
}

TEST(VerifierTest, CallModuleOfMissingSubmodule) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  g.Output(g.CallModule("fused_0", {x}));
  EXPECT_TRUE(Verify(m.graph()).ok());
  EXPECT_EQ(Message(Verify(m)),
            "verify: %fused_0 calls submodule 'fused_0', which the module "
            "does not have");
}

TEST(VerifierTest, ErrorsInsideSubmodulesSayWhere) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  g.Output(g.CallModule("outer", {x}));
  Module outer;
  Node* ox = outer.graph().Placeholder("x");
  outer.graph().Output(outer.graph().CallModule("inner", {ox}));
  Module inner;
  inner.graph().Placeholder("x");  // No output node.
  outer.AddSubmodule("inner", std::move(inner));
  m.AddSubmodule("outer", std::move(outer));
  EXPECT_EQ(Message(Verify(m)),
            "verify: in submodule 'outer.inner': the graph has no output node");
}

TEST(VerifierTest, SubmoduleNestingIsBounded) {
  // 70 levels: each module calls its only submodule.
  Module leaf;
  leaf.graph().Output(leaf.graph().Placeholder("x"));
  Module current = std::move(leaf);
  for (int i = 0; i < 70; ++i) {
    Module parent;
    Node* x = parent.graph().Placeholder("x");
    parent.graph().Output(parent.graph().CallModule("sub", {x}));
    parent.AddSubmodule("sub", std::move(current));
    current = std::move(parent);
  }
  EXPECT_THAT(Message(Verify(current)),
              HasSubstr("submodules nest deeper than 64 levels"));
}

// ---- Size ----

// x -> relu -> neg -> relu -> ... with `length` calls, all typed f32[4].
void BuildTypedChain(Graph& g, int length) {
  Node* prev = g.Placeholder("x", F32({4}));
  for (int i = 0; i < length; ++i) {
    prev = g.CallFunction(i % 2 == 0 ? "relu" : "neg", {prev});
    prev->set_type(F32({4}));
  }
  g.Output(prev);
}

TEST(VerifierTest, MillionNodeChain) {
  // No recursion anywhere: a million-deep use-def chain verifies.
  Graph g;
  BuildTypedChain(g, 1'000'000);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

TEST(VerifierTest, FindsABreakDeepInALongChain) {
  Graph g;
  BuildTypedChain(g, 200'000);
  Node* mid = g.FindNode("relu_50000");
  ASSERT_NE(mid, nullptr);
  mid->set_type(F32({5}));
  EXPECT_EQ(Message(Verify(g)),
            "verify: %relu_50000 has type f32[5], but relu infers f32[4] from "
            "its inputs");
}

TEST(VerifierTest, HighFanOutIsLinear) {
  // One value read by 200,000 nodes: a per-operand scan of the input's
  // use-list would take 2e10 steps.
  constexpr int kUsers = 200'000;
  Graph g;
  Node* x = g.Placeholder("x");
  std::vector<Argument> all;
  for (int i = 0; i < kUsers; ++i)
    all.emplace_back(g.CallFunction("relu", {x}));
  g.Output(Argument(ArgumentList(std::move(all))));
  EXPECT_EQ(x->num_uses(), static_cast<size_t>(kUsers));
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
}

}  // namespace
}  // namespace graft
