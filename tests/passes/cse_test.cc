#include "passes/cse.h"

#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

TEST(CseTest, MergesEqualCallsTransitively) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %b = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %ra = call_function[target=relu](args = (%a,), kwargs = {})
    %rb = call_function[target=relu](args = (%b,), kwargs = {})
    %s = call_function[target=add](args = (%ra, %rb), kwargs = {})
    return s
)");
  PassContext ctx;
  CsePass cse;
  absl::StatusOr<bool> changed = cse.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "mul relu add");
  Node* s = m.graph().FindNode("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->arg(0).node(), s->arg(1).node());
  EXPECT_TRUE(Verify(m).ok());
}

TEST(CseTest, KeepsCallsThatDifferInLiteralsOrKwargs) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %b = call_function[target=mul](args = (%x, 3.0), kwargs = {})
    %c = call_function[target=softmax](args = (%x,), kwargs = {dim: 0})
    %d = call_function[target=softmax](args = (%x,), kwargs = {dim: 1})
    %s = call_function[target=concat](args = ([%a, %b, %c, %d],), kwargs = {})
    return s
)");
  PassContext ctx;
  CsePass cse;
  absl::StatusOr<bool> changed = cse.Run(m, ctx);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(Ops(m.graph()), "mul mul softmax softmax concat");
}

}  // namespace
}  // namespace graft::passes
