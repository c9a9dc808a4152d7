#include "passes/dce.h"

#include "graph/op_registry.h"
#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

TEST(DceTest, RemovesDeadChainsAndUnusedTensors) {
  Module m = Parse(R"(
tensor w : f32[4] = zeros
tensor unused : f32[2] = zeros
graph():
    %x : f32[4] = placeholder[target=x]
    %w : f32[4] = get_attr[target=w]
    %dead1 = call_function[target=mul](args = (%x, %w), kwargs = {})
    %dead2 = call_function[target=relu](args = (%dead1,), kwargs = {})
    %live = call_function[target=neg](args = (%x,), kwargs = {})
    return live
)");
  PassContext ctx;
  DcePass dce;
  absl::StatusOr<bool> changed = dce.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(Ops(m.graph()), "neg");
  EXPECT_EQ(m.graph().num_nodes(), 3u);  // x, neg, output
  EXPECT_TRUE(m.tensors().empty());
  EXPECT_TRUE(Verify(m).ok());
  // A second run finds nothing.
  changed = dce.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
}

TEST(DceTest, KeepsPlaceholdersAndImpureOps) {
  static bool registered = [] {
    OpSchema s;
    s.name = "test::log_value";
    s.params = {ParamSpec{"input", ParamKind::kTensor}};
    s.pure = false;
    return OpRegistry::Global().Register(std::move(s)).ok();
  }();
  ASSERT_TRUE(registered);
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %y = placeholder[target=y]
    %log = call_function[target=test::log_value](args = (%x,), kwargs = {})
    return x
)");
  DcePass dce;
  PassContext ctx;
  ASSERT_TRUE(dce.Run(m, ctx).ok());
  EXPECT_EQ(Ops(m.graph()), "test::log_value");
  EXPECT_EQ(m.graph().placeholders().size(), 2u);
}

TEST(DceTest, MillionNodeDeadChainDoesNotOverflow) {
  Module m;
  Graph& g = m.graph();
  Node* x = g.Placeholder("x");
  Node* v = x;
  for (int i = 0; i < 1'000'000; ++i) v = g.CallFunction("relu", {v});
  g.Output(x);
  EXPECT_TRUE(EliminateDeadCode(g));
  EXPECT_EQ(g.num_nodes(), 2u);
  g.Cleanup();
}

}  // namespace
}  // namespace graft::passes
