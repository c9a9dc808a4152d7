#include "passes/fuse_elementwise.h"

#include "absl/strings/str_cat.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "graph/op_registry.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

bool Fuse(Module& m) {
  PassContext ctx;
  FuseElementwisePass pass;
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  m.graph().Cleanup();
  absl::Status v = Verify(m);
  EXPECT_TRUE(v.ok()) << v << "\n" << PrintModule(m);
  return changed.ok() && *changed;
}

// call_module targets, in graph order, joined by spaces.
std::string Calls(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (n->op() != OpCode::kCallModule) continue;
    if (!out.empty()) out += " ";
    out += n->target();
  }
  return out;
}

std::vector<std::string> PlaceholderNames(const Module& m) {
  std::vector<std::string> names;
  for (Node* p : m.graph().placeholders()) names.push_back(p->name());
  return names;
}

TEST(FuseElementwiseTest, GroupsSingleUseTreesOfPointwiseOps) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %y : f32[4] = placeholder[target=y]
    %a : f32[4] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %b : f32[4] = call_function[target=add](args = (%a, 1.0), kwargs = {})
    %c : f32[4] = call_function[target=relu](args = (%b,), kwargs = {})
    %s : f32[] = call_function[target=sum](args = (%c,), kwargs = {})
    %d : f32[4] = call_function[target=exp](args = (%y,), kwargs = {})
    %e : f32[4] = call_function[target=add](args = (%d, %s), kwargs = {})
    %f : f32[4] = call_function[target=sigmoid](args = (%e,), kwargs = {})
    %g : f32[4] = call_function[target=neg](args = (%f,), kwargs = {})
    %h : f32[4] = call_function[target=abs](args = (%f,), kwargs = {})
    %k : f32[4] = call_function[target=add](args = (%g, %h), kwargs = {})
    return k
)");
  ASSERT_TRUE(Fuse(m));
  // %f has two users, so it ends a group, and sum is not pointwise.
  EXPECT_EQ(Ops(m.graph()), "sum");
  EXPECT_EQ(Calls(m.graph()), "fused_0 fused_1 fused_2");
  ASSERT_EQ(m.submodules().size(), 3u);
  const Module& f0 = *m.FindSubmodule("fused_0");
  const Module& f1 = *m.FindSubmodule("fused_1");
  const Module& f2 = *m.FindSubmodule("fused_2");
  EXPECT_EQ(Ops(f0.graph()), "mul add relu");
  EXPECT_EQ(Ops(f1.graph()), "exp add sigmoid");
  EXPECT_EQ(Ops(f2.graph()), "neg abs add");
  EXPECT_EQ(PlaceholderNames(f0), (std::vector<std::string>{"x"}));
  EXPECT_EQ(PlaceholderNames(f1), (std::vector<std::string>{"y", "s"}));
  EXPECT_EQ(PlaceholderNames(f2), (std::vector<std::string>{"fused_1"}));
  // The submodules return their root and keep the types.
  EXPECT_EQ(f0.graph().output()->arg(0).node()->name(), "c");
  EXPECT_EQ(*f2.graph().placeholders()[0]->type(),
            (TensorType{DType::kF32, {4}}));
  // The main graph reads the calls in place of the roots.
  Node* sum = m.graph().FindNode("s");
  EXPECT_EQ(sum->arg(0).node()->target(), "fused_0");
  Node* call1 = m.graph().FindNode("fused_1");
  EXPECT_EQ(call1->arg(0).node()->name(), "y");
  EXPECT_EQ(call1->arg(1).node()->name(), "s");
  EXPECT_EQ(*call1->type(), (TensorType{DType::kF32, {4}}));
  EXPECT_EQ(m.graph().output()->arg(0).node()->target(), "fused_2");
  ASSERT_TRUE(call1->meta().provenance.has_value());
  EXPECT_EQ(call1->meta().provenance->from,
            (std::vector<std::string>{"d", "e", "f"}));
}

TEST(FuseElementwiseTest, SingletonsAndMultiUseProducersStayOutside) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %a : f32[4] = call_function[target=exp](args = (%x,), kwargs = {})
    %s : f32[] = call_function[target=sum](args = (%a,), kwargs = {})
    %b : f32[4] = call_function[target=mul](args = (%a, %s), kwargs = {})
    %c : f32[4] = call_function[target=softmax](args = (%b, 0), kwargs = {})
    return c
)");
  // %a has two users (sum and mul): exp and mul are singletons.
  EXPECT_FALSE(Fuse(m));
  EXPECT_EQ(Ops(m.graph()), "exp sum mul softmax");
  EXPECT_TRUE(m.submodules().empty());
}

TEST(FuseElementwiseTest, SelfUseCountsAsOneUser) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %a : f32[4] = call_function[target=exp](args = (%x,), kwargs = {})
    %b : f32[4] = call_function[target=mul](args = (%a, %a), kwargs = {})
    %w : bool[4] = call_function[target=gt](args = (%b, 1.0), kwargs = {})
    %c : f32[4] = call_function[target=where](args = (%w, %b, 0.0), kwargs = {})
    return c
)");
  ASSERT_TRUE(Fuse(m));
  // %b feeds both gt and where, so where's group is {gt, where}; exp's only
  // user is mul, so {exp, mul}.
  EXPECT_EQ(Calls(m.graph()), "fused_0 fused_1");
  EXPECT_EQ(Ops(m.FindSubmodule("fused_0")->graph()), "exp mul");
  EXPECT_EQ(Ops(m.FindSubmodule("fused_1")->graph()), "gt where");
}

TEST(FuseElementwiseTest, SkipsTakenSubmoduleNames) {
  Module m = Parse(R"(
submodule fused_0 {
  graph():
      %a = placeholder[target=a]
      return a
}
graph():
    %x : f32[4] = placeholder[target=x]
    %a : f32[4] = call_function[target=exp](args = (%x,), kwargs = {})
    %b : f32[4] = call_function[target=neg](args = (%a,), kwargs = {})
    %c : f32[4] = call_module[target=fused_0](args = (%b,), kwargs = {})
    return c
)");
  ASSERT_TRUE(Fuse(m));
  EXPECT_EQ(Calls(m.graph()), "fused_1 fused_0");
}

TEST(FuseElementwiseTest, LongChainBecomesOneGroup) {
  Module m;
  Graph& g = m.graph();
  Node* v = g.Placeholder("x", TensorType{DType::kF32, {2}});
  constexpr int kLength = 100000;
  for (int i = 0; i < kLength; ++i) {
    v = g.CallFunction(i % 2 == 0 ? "mul" : "add", {v, 1.5});
    v->set_type(TensorType{DType::kF32, {2}});
  }
  g.Output(v);
  ASSERT_TRUE(Fuse(m));
  EXPECT_EQ(g.num_nodes(), 3u);  // x, the call, output.
  EXPECT_EQ(m.FindSubmodule("fused_0")->graph().num_nodes(),
            static_cast<size_t>(kLength + 2));
}

TEST(FuseElementwiseTest, FusesWhatTheRegistryCallsPointwise) {
  auto kind = [](const char* op) {
    return OpRegistry::Global().Find(op)->traits.kind;
  };
  EXPECT_EQ(kind("add"), OpKind::kPointwise);
  EXPECT_EQ(kind("where"), OpKind::kPointwise);
  EXPECT_EQ(kind("cast"), OpKind::kPointwise);
  EXPECT_EQ(kind("sum"), OpKind::kReduction);
  EXPECT_EQ(kind("matmul"), OpKind::kContraction);
}

}  // namespace
}  // namespace graft::passes
