#include "passes/rewrite_driver.h"

#include "graph/verifier.h"
#include "passes/matcher.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

// neg(neg(x)) -> x.
class DoubleNegation : public RewritePattern {
 public:
  DoubleNegation() : RewritePattern("double-negation", 2) {}
  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    Node* x = nullptr;
    if (!m::Call("neg", m::Call("neg", m::Any(&x))).Match(root)) return false;
    rw.ReplaceNode(root, x);
    return true;
  }
};

// neg(x) -> mul(x, -1.0): lower benefit than DoubleNegation.
class NegToMul : public RewritePattern {
 public:
  NegToMul() : RewritePattern("neg-to-mul", 1) {}
  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    if (!root->is_call("neg")) return false;
    rw.ReplaceNode(root, rw.Call("mul", {root->arg(0), -1.0}));
    return true;
  }
};

// relu <-> abs forever: never converges.
class Flip : public RewritePattern {
 public:
  Flip(std::string from, std::string to)
      : RewritePattern(from + "-to-" + to), from_(from), to_(to) {}
  absl::StatusOr<bool> MatchAndRewrite(Node* root, Rewriter& rw) const override {
    if (!root->is_call(from_)) return false;
    rw.ReplaceNode(root, rw.Call(to_, {root->arg(0)}));
    return true;
  }

 private:
  std::string from_, to_;
};

TEST(RewriteDriverTest, HigherBenefitFirstThenFixedPoint) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=neg](args = (%x,), kwargs = {})
    %b = call_function[target=neg](args = (%a,), kwargs = {})
    %c = call_function[target=neg](args = (%b,), kwargs = {})
    return c
)");
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  patterns.push_back(std::make_unique<NegToMul>());
  patterns.push_back(std::make_unique<DoubleNegation>());
  PassContext ctx;
  auto report = ApplyPatternsGreedily(m, patterns, &ctx);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->converged);
  m.graph().Cleanup();
  // neg(neg(neg(x))): the driver visits %a first (neg-to-mul applies, as
  // double-negation does not match there), then %b, %c see a mul below.
  // Whatever the order, the fixed point has no neg left.
  EXPECT_EQ(Ops(m.graph()).find("neg"), std::string::npos);
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
}

TEST(RewriteDriverTest, DoubleNegationCollapsesWhenItIsTheOnlyPattern) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=neg](args = (%x,), kwargs = {})
    %b = call_function[target=neg](args = (%a,), kwargs = {})
    %c = call_function[target=relu](args = (%b,), kwargs = {})
    return c
)");
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  patterns.push_back(std::make_unique<DoubleNegation>());
  auto report = ApplyPatternsGreedily(m, patterns);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->rewrites, 1);
  m.graph().Cleanup();
  EXPECT_EQ(Ops(m.graph()), "relu");  // Dead negs were erased too.
  EXPECT_EQ(m.graph().FindNode("c")->arg(0).node()->name(), "x");
}

TEST(RewriteDriverTest, ReportsNonConvergence) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %r = call_function[target=relu](args = (%x,), kwargs = {})
    return r
)");
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  patterns.push_back(std::make_unique<Flip>("relu", "abs"));
  patterns.push_back(std::make_unique<Flip>("abs", "relu"));
  PassContext ctx;
  GreedyConfig config;
  config.max_rewrites_per_node = 2;
  auto report = ApplyPatternsGreedily(m, patterns, &ctx, config);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->converged);
  ASSERT_EQ(ctx.notes().size(), 1u);
  EXPECT_THAT(ctx.notes()[0], ::testing::HasSubstr("without reaching a fixed point"));
  EXPECT_TRUE(Verify(m).ok());
}

}  // namespace
}  // namespace graft::passes
