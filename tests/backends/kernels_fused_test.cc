// Kernels of the fused ops (docs/ops.md, "Fused ops").

#include <cmath>

#include "graph/fused_ops.h"
#include "tests/backends/interp_test_util.h"

namespace graft::interp_test {
namespace {

// x = [1, 2], W = [[1, 2], [3, 4]].
// out_in: y_j = sum_k x_k W[j][k] = [5, 11].
// in_out: y_j = sum_k x_k W[k][j] = [7, 10].
TEST(FusedKernelsTest, LinearActivationLayouts) {
  Tensor x = F32({1, 2}, {1, 2});
  Tensor w = F32({2, 2}, {1, 2, 3, 4});
  Tensor b = F32({2}, {-6, 0.5});
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        y, r.Run("graft::linear_activation", {r.In(x), r.In(w), r.In(b)}));
    ExpectTensor(y, DType::kF32, {1, 2}, {0, 11.5});  // relu([-1, 11.5]).
  }
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        y, r.Run("graft::linear_activation", {r.In(x), r.In(w), Argument()},
                 {{"weight_layout", "in_out"}}));
    ExpectTensor(y, DType::kF32, {1, 2}, {7, 10});
  }
}

TEST(FusedKernelsTest, GeluForms) {
  // One input feature, weight 1, no bias: the activation of x itself.
  Tensor x = T(DType::kF64, {3, 1}, {-1, 0, 2});
  Tensor w = T(DType::kF64, {1, 1}, {1});
  auto gelu = [](double v) {
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  };
  auto gelu_tanh = [](double v) {
    return 0.5 * v *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(y,
                               r.Run("graft::linear_activation",
                                     {r.In(x), r.In(w), Argument(), "gelu"}));
    ExpectTensor(y, DType::kF64, {3, 1}, {gelu(-1), 0, gelu(2)}, 1e-12);
  }
  {
    OpRunner r;
    GRAFT_ASSERT_OK_AND_ASSIGN(
        y, r.Run("graft::linear_activation",
                 {r.In(x), r.In(w), Argument(), "gelu_tanh"}));
    ExpectTensor(y, DType::kF64, {3, 1}, {gelu_tanh(-1), 0, gelu_tanh(2)},
                 1e-12);
  }
}

TEST(FusedKernelsTest, BatchDimsAndErrors) {
  OpRunner r;
  Tensor x = F32({2, 1, 2}, {1, 0, 0, 1});
  Tensor w = F32({3, 2}, {1, 0, 0, 1, 1, 1});
  GRAFT_ASSERT_OK_AND_ASSIGN(
      y, r.Run("graft::linear_activation", {r.In(x), r.In(w)}));
  ExpectTensor(y, DType::kF32, {2, 1, 3}, {1, 0, 1, 0, 1, 1});

  OpRunner bad;
  auto mismatch = bad.Run("graft::linear_activation",
                          {bad.In(F32({1, 3}, {1, 2, 3})), bad.In(w)});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(),
              ::testing::HasSubstr("last dim must be 2"));
}

}  // namespace
}  // namespace graft::interp_test
