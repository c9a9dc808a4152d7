#include "graph/module_fingerprint.h"

#include "gtest/gtest.h"
#include "graph/graph.h"
#include "graph/parser.h"

namespace graft {
namespace {

constexpr absl::string_view kModel = R"(
tensor w : f32[4,3] = random(seed=1)

graph():
    %x : f32[batch,3] = placeholder[target=x]
    %w : f32[4,3] = get_attr[target=w]
    %fc : f32[batch,4] = call_function[target=linear](args = (%x, %w), kwargs = {})
    %s : f32[batch,4] = call_function[target=softmax](args = (%fc,), kwargs = {dim: -1})
    %m : f32[batch,4] = call_function[target=mul](args = (%s, 2.0), kwargs = {})
    return m
)";

Module Parse(absl::string_view text) {
  absl::StatusOr<Module> m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

Fingerprint Edited(absl::string_view from, absl::string_view to) {
  std::string text(kModel);
  const size_t at = text.find(std::string(from));
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), std::string(to));
  return ModuleFingerprint(Parse(text));
}

TEST(ModuleFingerprint, StableForTheSameContent) {
  const Fingerprint a = ModuleFingerprint(Parse(kModel));
  EXPECT_EQ(a, ModuleFingerprint(Parse(kModel)));
  EXPECT_EQ(a, ModuleFingerprint(Parse(kModel).Clone()));
}

TEST(ModuleFingerprint, ChangesWithEveryPartOfTheModel) {
  const Fingerprint a = ModuleFingerprint(Parse(kModel));
  EXPECT_NE(a, Edited("{dim: -1}", "{dim: 0}"));           // An attribute.
  EXPECT_NE(a, Edited("(%s, 2.0)", "(%s, 3.0)"));          // A literal.
  EXPECT_NE(a, Edited("target=mul", "target=add"));        // An op.
  EXPECT_NE(a, Edited("random(seed=1)", "random(seed=2)"));  // A weight.
  EXPECT_NE(a, Edited("f32[batch,3] = placeholder",
                      "f32[batch2,3] = placeholder"));     // A type.
  EXPECT_NE(a, Edited("placeholder[target=x]", "placeholder[target=y]"));
  // One bit of one weight.
  Module m = Parse(kModel);
  Tensor w = m.FindTensor("w")->Clone();
  w.data<uint32_t>()[7] ^= 1;
  m.SetTensor("w", w);
  EXPECT_NE(a, ModuleFingerprint(m));
}

TEST(ModuleFingerprint, RenamingNodesChangesNothing) {
  Module m = Parse(kModel);
  const Fingerprint before = ModuleFingerprint(m);
  ASSERT_TRUE(m.graph().Rename(m.graph().FindNode("s"), "probs").ok());
  EXPECT_EQ(before, ModuleFingerprint(m));
}

}  // namespace
}  // namespace graft
