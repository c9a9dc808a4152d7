#include "passes/canonicalize.h"

#include "graph/printer.h"
#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

// Runs canonicalize, cleans up and checks the result still verifies.
bool Canonicalize(Module& m) {
  PassContext ctx;
  CanonicalizePass pass;
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(ctx.notes().empty());
  m.graph().Cleanup();
  absl::Status v = Verify(m);
  EXPECT_TRUE(v.ok()) << v << "\n" << PrintModule(m);
  return changed.ok() && *changed;
}

// The name of the node the graph returns.
std::string Returned(const Module& m) {
  return m.graph().output()->arg(0).node()->name();
}

TEST(CanonicalizeTest, NeutralLiteralsOnEitherSide) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3] = placeholder[target=x]
    %a : f32[2,3] = call_function[target=add](args = (%x, 0.0), kwargs = {})
    %b : f32[2,3] = call_function[target=mul](args = (1, %a), kwargs = {})
    %c : f32[2,3] = call_function[target=div](args = (%b, 1.0), kwargs = {})
    %d : f32[2,3] = call_function[target=sub](args = (%c, 0), kwargs = {})
    %e : f32[2,3] = call_function[target=add](args = (0.0, %d), kwargs = {})
    %f : f32[2,3] = call_function[target=mul](args = (%e, 1.0), kwargs = {})
    %r : f32[2,3] = call_function[target=relu](args = (%f,), kwargs = {})
    return r
)");
  EXPECT_TRUE(Canonicalize(m));
  EXPECT_EQ(Ops(m.graph()), "relu");
  EXPECT_EQ(m.graph().FindNode("r")->arg(0).node()->name(), "x");
}

TEST(CanonicalizeTest, KeepsLiteralsThatChangeTheTypeOrAreNotNeutral) {
  Module m = Parse(R"(
graph():
    %i : i32[3] = placeholder[target=i]
    %x : f32[3] = placeholder[target=x]
    %a : f32[3] = call_function[target=add](args = (%i, 0.0), kwargs = {})
    %b : f32[3] = call_function[target=sub](args = (0.0, %x), kwargs = {})
    %c : f32[3] = call_function[target=div](args = (1.0, %x), kwargs = {})
    %d : f32[3] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %s : f32[3] = call_function[target=add](args = (%a, %b), kwargs = {})
    %t : f32[3] = call_function[target=add](args = (%c, %d), kwargs = {})
    %u : f32[3] = call_function[target=add](args = (%s, %t), kwargs = {})
    return u
)");
  EXPECT_FALSE(Canonicalize(m));
  EXPECT_EQ(Ops(m.graph()), "add sub div mul add add add");
}

TEST(CanonicalizeTest, NeedsKnownTypesForNeutralLiterals) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %a = call_function[target=add](args = (%x, 0), kwargs = {})
    return a
)");
  EXPECT_FALSE(Canonicalize(m));
  EXPECT_EQ(Ops(m.graph()), "add");
}

TEST(CanonicalizeTest, DoubleTransposeOfTheSameDims) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3,4] = placeholder[target=x]
    %t1 : f32[4,3,2] = call_function[target=transpose](args = (%x, 0, 2), kwargs = {})
    %t2 : f32[2,3,4] = call_function[target=transpose](args = (%t1, 2, 0), kwargs = {})
    %t3 : f32[4,3,2] = call_function[target=transpose](args = (%t2, -1, 0), kwargs = {})
    %t4 : f32[2,3,4] = call_function[target=transpose](args = (%t3, 0, 2), kwargs = {})
    %t5 : f32[3,2,4] = call_function[target=transpose](args = (%t4, 0, 1), kwargs = {})
    %t6 : f32[3,4,2] = call_function[target=transpose](args = (%t5, 1, 2), kwargs = {})
    return t6
)");
  EXPECT_TRUE(Canonicalize(m));
  // t1/t2 and t3/t4 cancel; t5/t6 swap different dims and stay.
  EXPECT_EQ(Ops(m.graph()), "transpose transpose");
  Node* t5 = m.graph().FindNode("t5");
  ASSERT_NE(t5, nullptr);
  EXPECT_EQ(t5->arg(0).node()->name(), "x");
  EXPECT_EQ(Returned(m), "t6");
}

TEST(CanonicalizeTest, PermutesCompose) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3,4] = placeholder[target=x]
    %p1 : f32[3,4,2] = call_function[target=permute](args = (%x, [1, 2, 0]), kwargs = {})
    %p2 : f32[2,3,4] = call_function[target=permute](args = (%p1, [2, 0, 1]), kwargs = {})
    %q1 : f32[3,2,4] = call_function[target=permute](args = (%p2, [1, 0, 2]), kwargs = {})
    %q2 : f32[3,4,2] = call_function[target=permute](args = (%q1, [0, -1, 1]), kwargs = {})
    return q2
)");
  EXPECT_TRUE(Canonicalize(m));
  // p2(p1(x)) is x; q2(q1(x)) is one permute by q1[q2[i]] = [1, 2, 0].
  ASSERT_EQ(Ops(m.graph()), "permute");
  Node* p = m.graph().output()->arg(0).node();
  EXPECT_TRUE(p->is_call("permute"));
  EXPECT_EQ(p->arg(0).node()->name(), "x");
  EXPECT_EQ(p->arg(1).int_list(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(*p->type(), (TensorType{DType::kF32, {3, 4, 2}}));
  ASSERT_TRUE(p->meta().provenance.has_value());
}

TEST(CanonicalizeTest, IdentityPermuteDisappears) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %p = call_function[target=permute](args = (%x, [0, 1]), kwargs = {})
    return p
)");
  EXPECT_TRUE(Canonicalize(m));
  EXPECT_EQ(Ops(m.graph()), "");
  EXPECT_EQ(Returned(m), "x");
}

TEST(CanonicalizeTest, ReshapeOfReshape) {
  Module m = Parse(R"(
graph():
    %x : f32[2,3,4] = placeholder[target=x]
    %r1 : f32[6,4] = call_function[target=reshape](args = (%x, [6, 4]), kwargs = {})
    %r2 : f32[4,6] = call_function[target=reshape](args = (%r1, [4, -1]), kwargs = {})
    %y : f32[2,3,4] = placeholder[target=y]
    %s1 : f32[24] = call_function[target=reshape](args = (%y, [24]), kwargs = {})
    %s2 : f32[2,3,4] = call_function[target=reshape](args = (%s1, [2, 3, 4]), kwargs = {})
    %o : f32[4,6] = call_function[target=reshape](args = (%s2, [4, 6]), kwargs = {})
    %y2 : f32[2,3,4] = placeholder[target=y2]
    %t1 : f32[24] = call_function[target=reshape](args = (%y2, [24]), kwargs = {})
    %t2 : f32[2,3,4] = call_function[target=reshape](args = (%t1, [2, 3, 4]), kwargs = {})
    %sum : f32[4,6] = call_function[target=add](args = (%r2, %o), kwargs = {})
    return (sum, t2)
)");
  EXPECT_TRUE(Canonicalize(m));
  // t2(t1(y2)) has y2's type and goes.
  EXPECT_EQ(m.graph().output()->arg(0).list()[1].node()->name(), "y2");
  // r2(r1(x)) -> reshape(x, [4, -1]); o(s2(s1(y))) -> reshape(y, [4, 6]).
  EXPECT_EQ(Ops(m.graph()), "reshape reshape add");
  Node* sum = m.graph().FindNode("sum");
  ASSERT_NE(sum, nullptr);
  Node* a = sum->arg(0).node();
  Node* b = sum->arg(1).node();
  EXPECT_EQ(a->arg(0).node()->name(), "x");
  EXPECT_EQ(a->arg(1).int_list(), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(b->arg(0).node()->name(), "y");
  EXPECT_EQ(b->arg(1).int_list(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(*b->type(), (TensorType{DType::kF32, {4, 6}}));
}

TEST(CanonicalizeTest, SqueezeUnsqueezeRoundTrips) {
  Module m = Parse(R"(
graph():
    %x = placeholder[target=x]
    %u1 = call_function[target=unsqueeze](args = (%x, 1), kwargs = {})
    %s1 = call_function[target=squeeze](args = (%u1, 1), kwargs = {})
    %y : f32[2,1,3] = placeholder[target=y]
    %s2 : f32[2,3] = call_function[target=squeeze](args = (%y, [1]), kwargs = {})
    %u2 : f32[2,1,3] = call_function[target=unsqueeze](args = (%s2, 1), kwargs = {})
    %z : f32[2,3] = placeholder[target=z]
    %u3 : f32[2,3,1] = call_function[target=unsqueeze](args = (%z, -1), kwargs = {})
    %s3 : f32[2,3] = call_function[target=squeeze](args = (%u3, -1), kwargs = {})
    %w : f32[2,3] = placeholder[target=w]
    %s4 : f32[2,3] = call_function[target=squeeze](args = (%w, 1), kwargs = {})
    %u4 : f32[2,1,3] = call_function[target=unsqueeze](args = (%s4, 1), kwargs = {})
    return (s1, u2, s3, u4)
)");
  EXPECT_TRUE(Canonicalize(m));
  const ArgumentList& out = m.graph().output()->arg(0).list();
  EXPECT_EQ(out[0].node()->name(), "x");
  EXPECT_EQ(out[1].node()->name(), "y");
  EXPECT_EQ(out[2].node()->name(), "z");
  // squeeze of a dim of size 3 changes nothing, so unsqueeze adds a dim w
  // never had.
  EXPECT_EQ(out[3].node()->name(), "u4");
  EXPECT_EQ(Ops(m.graph()), "squeeze unsqueeze");
}

TEST(CanonicalizeTest, NoOpsCastsAndDoubleNegation) {
  Module m = Parse(R"(
graph():
    %x : f32[3] = placeholder[target=x]
    %a : f32[3] = call_function[target=identity](args = (%x,), kwargs = {})
    %b : f32[3] = call_function[target=dropout](args = (%a, 0.5, False), kwargs = {})
    %c : f32[3] = call_function[target=cast](args = (%b,), kwargs = {dtype: f32})
    %d : f32[3] = call_function[target=neg](args = (%c,), kwargs = {})
    %e : f32[3] = call_function[target=neg](args = (%d,), kwargs = {})
    %f : f32[3] = call_function[target=dropout](args = (%e,), kwargs = {p: 0.1, training: True})
    %g : f16[3] = call_function[target=cast](args = (%f,), kwargs = {dtype: f16})
    return g
)");
  EXPECT_TRUE(Canonicalize(m));
  EXPECT_EQ(Ops(m.graph()), "dropout cast");
  EXPECT_EQ(m.graph().FindNode("f")->arg(0).node()->name(), "x");
}

TEST(CanonicalizeTest, PatternsAreNamed) {
  std::vector<std::string> names;
  for (const auto& p : CanonicalizationPatterns()) names.push_back(p->name());
  EXPECT_THAT(
      names, ::testing::IsSupersetOf({"add-zero", "mul-one", "double-transpose",
                                      "permute-permute", "reshape-reshape",
                                      "double-negation", "cast-same-dtype"}));
}

}  // namespace
}  // namespace graft::passes
