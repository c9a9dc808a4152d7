#include "graph/random_tensor.h"

#include <cmath>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::ElementsAre;

TEST(RandomTensorTest, SplitMix64ReferenceVectors) {
  // The published first outputs of splitmix64 seeded with 0.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.Next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(rng.Next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(rng.Next(), 0x06c45d188009454full);
}

TEST(RandomTensorTest, KnownValuesForSeedZero) {
  // Draws 0xe220a839..., 0x6e789e6a..., 0x06c45d18...: floats use the top
  // bits as u in [0, 1) and give 2u - 1; ints the top 4 bits minus 8.
  EXPECT_THAT(RandomTensor(DType::kF32, {3}, 0).ToDoubles(),
              ElementsAre(803861.0 / 1048576, -574385.0 / 4194304,
                          -7945123.0 / 8388608));
  EXPECT_THAT(RandomTensor(DType::kF16, {3}, 0).ToDoubles(),
              ElementsAre(0.7666015625, -0.1376953125, -0.947265625));
  EXPECT_THAT(RandomTensor(DType::kBF16, {3}, 0).ToDoubles(),
              ElementsAre(0.765625, -0.140625, -0.953125));
  EXPECT_THAT(RandomTensor(DType::kI32, {3}, 0).ToDoubles(),
              ElementsAre(6, -2, -8));
  EXPECT_THAT(RandomTensor(DType::kU8, {3}, 0).ToDoubles(),
              ElementsAre(14, 6, 0));
  EXPECT_THAT(RandomTensor(DType::kBool, {3}, 0).ToDoubles(),
              ElementsAre(1, 0, 0));
}

TEST(RandomTensorTest, DeterministicPerSeed) {
  Tensor a = RandomTensor(DType::kF32, {16, 16}, 42);
  Tensor b = RandomTensor(DType::kF32, {16, 16}, 42);
  Tensor c = RandomTensor(DType::kF32, {16, 16}, 43);
  EXPECT_TRUE(a.BitwiseEqual(b));
  EXPECT_FALSE(a.BitwiseEqual(c));
  EXPECT_NE(a.storage(), b.storage());
  // The stream does not depend on the shape, only on the element count.
  EXPECT_TRUE(
      a.Reshaped({256}).BitwiseEqual(RandomTensor(DType::kF32, {256}, 42)));
}

TEST(RandomTensorTest, FloatsAreUniformInMinusOneToOne) {
  constexpr int kN = 20000;
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    Tensor t = RandomTensor(dtype, {kN}, 7);
    double sum = 0;
    int negative = 0;
    for (double v : t.ToDoubles()) {
      ASSERT_GE(v, -1.0) << DTypeName(dtype);
      ASSERT_LT(v, 1.0) << DTypeName(dtype);
      sum += v;
      negative += v < 0;
    }
    // Mean 0 and half negative, within ~6 standard deviations.
    EXPECT_LT(std::abs(sum / kN), 0.025) << DTypeName(dtype);
    EXPECT_NEAR(negative, kN / 2, 450) << DTypeName(dtype);
  }
}

TEST(RandomTensorTest, IntegersCoverTheirRange) {
  constexpr int kN = 4000;
  for (DType dtype : {DType::kI8, DType::kI32, DType::kI64}) {
    std::set<double> seen;
    for (double v : RandomTensor(dtype, {kN}, 3).ToDoubles()) seen.insert(v);
    EXPECT_EQ(seen.size(), 16u) << DTypeName(dtype);
    EXPECT_EQ(*seen.begin(), -8);
    EXPECT_EQ(*seen.rbegin(), 7);
  }
  std::set<double> u8;
  for (double v : RandomTensor(DType::kU8, {kN}, 3).ToDoubles()) u8.insert(v);
  EXPECT_EQ(u8.size(), 16u);
  EXPECT_EQ(*u8.begin(), 0);
  EXPECT_EQ(*u8.rbegin(), 15);
  std::set<double> b;
  for (double v : RandomTensor(DType::kBool, {kN}, 3).ToDoubles()) b.insert(v);
  EXPECT_THAT(b, ElementsAre(0, 1));
}

TEST(RandomTensorTest, EmptyAndScalar) {
  EXPECT_EQ(RandomTensor(DType::kF32, {0, 3}, 1).NumElements(), 0);
  Tensor s = RandomTensor(DType::kF32, {}, 0);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.GetAsDouble(0), 803861.0 / 1048576);
}

}  // namespace
}  // namespace graft
