// FoldBiasIntoLinear: add(matmul(x, W), b) becomes linear(x, W^T, b), with
// W^T's elements where the transpose puts them, in every float width.

#include "backends/bias_into_linear.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "gtest/gtest.h"
#include "passes/shape_prop.h"

namespace graft {
namespace {

// x [3, K] @ W [K, N] + b [N]; K and N cross the transpose's 32 x 32 tiles
// unevenly.
constexpr int64_t kK = 45, kN = 70;

Module ProjectionWithBias(DType dtype) {
  const std::string t(DTypeName(dtype));
  absl::StatusOr<Module> m = ParseModule(absl::StrCat(R"(
tensor w : )", t, "[", kK, ", ", kN, R"(] = zeros
tensor b : )", t, "[", kN, R"(] = zeros
graph():
    %x : )", t, "[3, ", kK, R"(] = placeholder[target=x]
    %w = get_attr[target=w]
    %b = get_attr[target=b]
    %p = call_function[target=matmul](args = (%x, %w), kwargs = {})
    %y = call_function[target=add](args = (%b, %p), kwargs = {})
    return y
)"));
  EXPECT_TRUE(m.ok()) << m.status();
  Module module = *std::move(m);
  // Each weight element's bytes spell its own index.
  Tensor w(dtype, {kK, kN});
  const size_t size = DTypeSize(dtype);
  for (int64_t i = 0; i < kK * kN; ++i) {
    const uint64_t code = static_cast<uint64_t>(i) * 2654435761u;
    std::memcpy(static_cast<char*>(w.raw_data()) + i * size, &code, size);
  }
  module.SetTensor("w", w, module.tensors().at("w").init);
  EXPECT_TRUE(passes::PropagateShapes(module).ok());
  return module;
}

TEST(FoldBiasIntoLinear, TransposesTheWeightInEveryFloatWidth) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dtype));
    Module m = ProjectionWithBias(dtype);
    const Tensor w = m.tensors().at("w").value;
    absl::StatusOr<bool> changed = FoldBiasIntoLinear(m);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    EXPECT_TRUE(Verify(m).ok());
    const Node* linear = nullptr;
    for (const Node* n : m.graph().nodes()) {
      if (n->is_call("linear")) linear = n;
      EXPECT_FALSE(n->is_call("matmul") || n->is_call("add")) << n->target();
    }
    ASSERT_NE(linear, nullptr);
    const Tensor* wt = m.FindTensor(linear->arg(1).node()->target());
    ASSERT_NE(wt, nullptr);
    ASSERT_EQ(wt->dims(), (std::vector<int64_t>{kN, kK}));
    const size_t size = DTypeSize(dtype);
    const char* from = static_cast<const char*>(w.raw_data());
    const char* to = static_cast<const char*>(wt->raw_data());
    int wrong = 0;
    for (int64_t i = 0; i < kK; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        wrong += std::memcmp(to + (j * kK + i) * size, from + (i * kN + j) * size, size) != 0;
      }
    }
    EXPECT_EQ(wrong, 0);
  }
}

}  // namespace
}  // namespace graft
