#include "graph/module_fingerprint.h"

#include <cstring>

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

// Large weights are hashed in chunks on several cores: every byte still
// counts, in the first chunk, at a chunk's edge and in the short last one,
// and where a tensor views part of its storage.
TEST(ModuleFingerprint, EveryByteOfALargeWeightCounts) {
  const int64_t n = (int64_t{9} << 20) / 4 + 3;  // Two 4 MiB chunks and a short one.
  Tensor big(DType::kF32, {n});
  for (int64_t i = 0; i < n; ++i) big.data<float>()[i] = static_cast<float>(i % 1000) * 0.5f;
  auto with = [](const Tensor& w) {
    Module m;
    m.SetTensor("w", w);
    return ModuleFingerprint(m);
  };
  const Fingerprint a = with(big);
  EXPECT_EQ(a, with(big.Clone()));
  for (int64_t at : {int64_t{0}, (int64_t{4} << 20) / 4 - 1, (int64_t{4} << 20) / 4, n - 1}) {
    Tensor changed = big.Clone();
    changed.data<uint32_t>()[at] ^= 1u << 9;
    EXPECT_NE(a, with(changed)) << "element " << at;
  }
  // A view of all but the first element: hashed from its own bytes.
  const Tensor tail(DType::kF32, {n - 1}, big.storage(), sizeof(float));
  Tensor tail_copy = Tensor(DType::kF32, {n - 1});
  std::memcpy(tail_copy.raw_data(), tail.raw_data(), tail.NumBytes());
  EXPECT_EQ(with(tail), with(tail_copy));
  EXPECT_NE(with(tail), a);
}

TEST(ModuleFingerprint, RenamingNodesChangesNothing) {
  Module m = Parse(kModel);
  const Fingerprint before = ModuleFingerprint(m);
  ASSERT_TRUE(m.graph().Rename(m.graph().FindNode("s"), "probs").ok());
  EXPECT_EQ(before, ModuleFingerprint(m));
}

}  // namespace
}  // namespace graft
