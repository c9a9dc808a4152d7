#include "passes/partition.h"

#include "graph/printer.h"
#include "graph/verifier.h"
#include "passes/pipeline.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

std::string Calls(const Graph& g) {
  std::string out;
  for (const Node* n : g.nodes()) {
    if (n->op() != OpCode::kCallModule) continue;
    if (!out.empty()) out += " ";
    out += n->target();
  }
  return out;
}

constexpr char kModel[] = R"(
tensor w : f32[3,3] = random(seed=1)
graph():
    %x : f32[2,3] = placeholder[target=x]
    %a : f32[2,3] = call_function[target=relu](args = (%x,), kwargs = {})
    %w : f32[3,3] = get_attr[target=w]
    %b : f32[2,3] = call_function[target=add](args = (%a, 1.0), kwargs = {})
    %l : f32[2,3] = call_function[target=linear](args = (%b, %w), kwargs = {})
    %c : f32[2,3] = call_function[target=mul](args = (%l, %a), kwargs = {})
    %d : f32[2,3] = call_function[target=add](args = (%c, %b), kwargs = {})
    return d
)";

TEST(PartitionTest, RunsBecomeSubmodules) {
  Module m = Parse(kModel);
  absl::StatusOr<int64_t> made = Partition(
      m, [](const Node& n) { return !n.is_call("linear"); }, "cpu");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(*made, 2);
  m.graph().Cleanup();
  ASSERT_TRUE(Verify(m).ok()) << Verify(m) << "\n" << PrintModule(m);
  // The get_attr between relu and add does not split the first run. Both
  // of its values are used later, so it returns a tuple.
  EXPECT_EQ(Ops(m.graph()), "getitem getitem linear");
  EXPECT_EQ(Calls(m.graph()), "cpu_0 cpu_1");
  const Module& p0 = *m.FindSubmodule("cpu_0");
  const Module& p1 = *m.FindSubmodule("cpu_1");
  EXPECT_EQ(Ops(p0.graph()), "relu add");
  EXPECT_EQ(Ops(p1.graph()), "mul add");
  ASSERT_TRUE(p0.graph().output()->arg(0).is_list());
  EXPECT_EQ(p0.graph().output()->arg(0).list().size(), 2u);
  Node* call0 = m.graph().FindNode("cpu_0");
  EXPECT_EQ(call0->meta().tuple_types.size(), 2u);
  // cpu_1 reads linear, then relu's and add's values through getitem.
  Node* call1 = m.graph().FindNode("cpu_1");
  ASSERT_EQ(call1->num_args(), 3u);
  EXPECT_TRUE(call1->arg(0).node()->is_call("linear"));
  EXPECT_TRUE(call1->arg(1).node()->is_call("getitem"));
  EXPECT_EQ(call1->arg(1).node()->arg(1).int_value(), 0);
  EXPECT_EQ(call1->arg(2).node()->arg(1).int_value(), 1);
  EXPECT_EQ(m.graph().FindNode("l")->arg(0).node(), call1->arg(2).node());
  EXPECT_EQ(m.graph().output()->arg(0).node(), call1);
  EXPECT_EQ(*call1->type(), (TensorType{DType::kF32, {2, 3}}));
}

TEST(PartitionTest, PassOptions) {
  absl::StatusOr<Pipeline> p = Pipeline::FromString("partition{ops=relu;add}");
  ASSERT_TRUE(p.ok()) << p.status();
  Module m = Parse(kModel);
  PassContext ctx;
  absl::StatusOr<bool> changed = p->Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  // relu and add form one run; linear and mul are not listed.
  EXPECT_EQ(Calls(m.graph()), "partition_0 partition_1");
  EXPECT_EQ(Ops(m.graph()), "getitem getitem linear mul");
  EXPECT_EQ(Ops(m.FindSubmodule("partition_1")->graph()), "add");

  absl::StatusOr<Pipeline> none = Pipeline::FromString("partition");
  EXPECT_THAT(none.status().message(),
              ::testing::HasSubstr("partition{ops=relu;add}"));
  absl::StatusOr<Pipeline> bad =
      Pipeline::FromString("partition{ops=relu;nope}");
  EXPECT_THAT(bad.status().message(),
              ::testing::HasSubstr("unknown op 'nope'"));
  absl::StatusOr<Pipeline> prefix =
      Pipeline::FromString("partition{ops=relu,prefix=gpu}");
  ASSERT_TRUE(prefix.ok()) << prefix.status();
}

TEST(PartitionTest, NothingSupportedChangesNothing) {
  Module m = Parse(kModel);
  absl::StatusOr<int64_t> made = Partition(
      m, [](const Node&) { return false; }, "p");
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(*made, 0);
  EXPECT_EQ(Ops(m.graph()), "relu add linear mul add");
}

TEST(PartitionTest, TuplesStayOutside) {
  Module m = Parse(R"(
graph():
    %x : f32[4] = placeholder[target=x]
    %a : f32[4] = call_function[target=relu](args = (%x,), kwargs = {})
    %s : (f32[2], f32[2]) = call_function[target=split](args = (%a, 2), kwargs = {})
    %g : f32[2] = call_function[target=getitem](args = (%s, 0), kwargs = {})
    %b : f32[2] = call_function[target=neg](args = (%g,), kwargs = {})
    return b
)");
  absl::StatusOr<int64_t> made = Partition(
      m, [](const Node&) { return true; }, "p");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(*made, 2);
  m.graph().Cleanup();
  ASSERT_TRUE(Verify(m).ok()) << Verify(m);
  EXPECT_EQ(Ops(m.graph()), "split getitem");
  EXPECT_EQ(Calls(m.graph()), "p_0 p_1");
}

}  // namespace
}  // namespace graft::passes
