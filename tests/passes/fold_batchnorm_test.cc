#include "passes/fold_batchnorm.h"

#include "graph/verifier.h"
#include "tests/passes/test_util.h"

namespace graft::passes {
namespace {

using ::graft::testing::Ops;
using ::graft::testing::Parse;

// Runs the pass and checks the result verifies.
bool Fold(Module& m) {
  PassContext ctx;
  FoldBatchNormPass pass;
  absl::StatusOr<bool> changed = pass.Run(m, ctx);
  EXPECT_TRUE(changed.ok()) << changed.status();
  m.graph().Cleanup();
  EXPECT_TRUE(Verify(m).ok()) << Verify(m);
  return changed.ok() && *changed;
}

// sqrt(var + eps) = [2, 3] and gamma = [4, 6] give scale = [2, 2]; the
// folded weight is w * 2 = [4, 6] and the bias (b - mean) * 2 + beta =
// [(1 - 1) * 2 + 0.5, (-1 - 2) * 2 - 1] = [0.5, -7].
constexpr char kConvBn[] = R"(
tensor w : f32[2,1,1,1] = [2.0, 3.0]
tensor b : f32[2] = [1.0, -1.0]
tensor mean : f32[2] = [1.0, 2.0]
tensor var : f32[2] = [3.0, 8.0]
tensor gamma : f32[2] = [4.0, 6.0]
tensor beta : f32[2] = [0.5, -1.0]
graph():
    %x : f32[1,1,2,2] = placeholder[target=x]
    %w : f32[2,1,1,1] = get_attr[target=w]
    %b : f32[2] = get_attr[target=b]
    %mean : f32[2] = get_attr[target=mean]
    %var : f32[2] = get_attr[target=var]
    %gamma : f32[2] = get_attr[target=gamma]
    %beta : f32[2] = get_attr[target=beta]
    %conv : f32[1,2,2,2] = call_function[target=conv2d](args = (%x, %w, %b), kwargs = {stride: 1})
    %bn : f32[1,2,2,2] = call_function[target=batch_norm](args = (%conv, %mean, %var, %gamma, %beta), kwargs = {eps: 1.0})
    %r : f32[1,2,2,2] = call_function[target=relu](args = (%bn,), kwargs = {})
    return r
)";

TEST(FoldBatchNormTest, FoldsIntoConv) {
  Module m = Parse(kConvBn);
  ASSERT_TRUE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "conv2d relu");
  Node* conv = m.graph().FindNode("r")->arg(0).node();
  ASSERT_TRUE(conv->is_call("conv2d"));
  EXPECT_EQ(conv->arg(0).node()->name(), "x");
  EXPECT_EQ(conv->kwarg("stride")->int_value(), 1);
  EXPECT_EQ(*conv->type(), (TensorType{DType::kF32, {1, 2, 2, 2}}));
  const Tensor* w = m.FindTensor(conv->arg(1).node()->target());
  const Tensor* b = m.FindTensor(conv->arg(2).node()->target());
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(w->dims(), (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(w->dtype(), DType::kF32);
  EXPECT_EQ(w->ToDoubles(), (std::vector<double>{4.0, 6.0}));
  EXPECT_EQ(b->ToDoubles(), (std::vector<double>{0.5, -7.0}));
  // The originals are untouched; dce drops them.
  EXPECT_EQ(m.FindTensor("w")->ToDoubles(), (std::vector<double>{2.0, 3.0}));
  ASSERT_TRUE(conv->meta().provenance.has_value());
  EXPECT_EQ(conv->meta().provenance->from,
            (std::vector<std::string>{"conv", "bn"}));
}

TEST(FoldBatchNormTest, FoldsIntoLinearWithoutBiasOrAffine) {
  // No linear bias and no gamma/beta: scale = 1 / sqrt(var + eps) = [0.5,
  // 0.25], bias = -mean * scale = [-1, 1].
  Module m = Parse(R"(
tensor w : f64[2,3] = [1.0, 2.0, 3.0, 4.0, 8.0, 12.0]
tensor mean : f64[2] = [2.0, -4.0]
tensor var : f64[2] = [4.0, 16.0]
graph():
    %x : f64[5,3] = placeholder[target=x]
    %w : f64[2,3] = get_attr[target=w]
    %mean : f64[2] = get_attr[target=mean]
    %var : f64[2] = get_attr[target=var]
    %y : f64[5,2] = call_function[target=linear](args = (%x, %w), kwargs = {})
    %bn : f64[5,2] = call_function[target=batch_norm](args = (%y, %mean, %var), kwargs = {eps: 0.0})
    return bn
)");
  ASSERT_TRUE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "linear");
  Node* lin = m.graph().output()->arg(0).node();
  const Tensor* w = m.FindTensor(lin->arg(1).node()->target());
  const Tensor* b = m.FindTensor(lin->kwarg("bias")->node()->target());
  EXPECT_EQ(w->dtype(), DType::kF64);
  EXPECT_EQ(w->ToDoubles(),
            (std::vector<double>{0.5, 1.0, 1.5, 1.0, 2.0, 3.0}));
  EXPECT_EQ(b->ToDoubles(), (std::vector<double>{-1.0, 1.0}));
}

TEST(FoldBatchNormTest, LeavesSharedOrNonConstantProducersAlone) {
  // The conv's result is also returned, so it cannot change; the second
  // batch_norm reads its mean from a placeholder.
  Module m = Parse(R"(
tensor w : f32[2,1,1,1] = [2.0, 3.0]
tensor var : f32[2] = [3.0, 8.0]
graph():
    %x : f32[1,1,2,2] = placeholder[target=x]
    %mean : f32[2] = placeholder[target=mean]
    %w : f32[2,1,1,1] = get_attr[target=w]
    %var : f32[2] = get_attr[target=var]
    %conv : f32[1,2,2,2] = call_function[target=conv2d](args = (%x, %w), kwargs = {})
    %bn : f32[1,2,2,2] = call_function[target=batch_norm](args = (%conv, %mean, %var), kwargs = {})
    %conv2 : f32[1,2,2,2] = call_function[target=conv2d](args = (%x, %w), kwargs = {})
    %bn2 : f32[1,2,2,2] = call_function[target=batch_norm](args = (%conv2, %mean, %var), kwargs = {})
    return (conv, bn, bn2)
)");
  EXPECT_FALSE(Fold(m));
  EXPECT_EQ(Ops(m.graph()), "conv2d batch_norm conv2d batch_norm");
}

TEST(FoldBatchNormTest, PreservesHalfPrecisionDType) {
  Module m = Parse(R"(
tensor w : f16[1,1,1,1] = [3.0]
tensor mean : f16[1] = [1.0]
tensor var : f16[1] = [0.0]
graph():
    %x : f16[1,1,1,1] = placeholder[target=x]
    %w : f16[1,1,1,1] = get_attr[target=w]
    %mean : f16[1] = get_attr[target=mean]
    %var : f16[1] = get_attr[target=var]
    %conv : f16[1,1,1,1] = call_function[target=conv2d](args = (%x, %w), kwargs = {})
    %bn : f16[1,1,1,1] = call_function[target=batch_norm](args = (%conv, %mean, %var), kwargs = {eps: 0.25})
    return bn
)");
  ASSERT_TRUE(Fold(m));
  Node* conv = m.graph().output()->arg(0).node();
  const Tensor* w = m.FindTensor(conv->arg(1).node()->target());
  const Tensor* b = m.FindTensor(conv->kwarg("bias")->node()->target());
  // scale = 1 / sqrt(0.25) = 2.
  EXPECT_EQ(w->dtype(), DType::kF16);
  EXPECT_EQ(b->dtype(), DType::kF16);
  EXPECT_EQ(w->ToDoubles(), (std::vector<double>{6.0}));
  EXPECT_EQ(b->ToDoubles(), (std::vector<double>{-2.0}));
}

}  // namespace
}  // namespace graft::passes
