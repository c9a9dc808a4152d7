#include "cli/tensor_summary.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace graft::cli {
namespace {

TEST(TensorSummaryTest, StatsOfHandWorkedValues) {
  const Tensor t =
      Tensor::FromVector<float>(DType::kF32, {2, 2}, {1.0f, -2.0f, 4.5f, 0.5f});
  const TensorStats stats = ComputeStats(t);
  EXPECT_EQ(stats.count, 4);
  EXPECT_EQ(stats.nan_count, 0);
  EXPECT_EQ(stats.min, -2.0);
  EXPECT_EQ(stats.max, 4.5);
  EXPECT_EQ(stats.mean, 1.0);  // (1 - 2 + 4.5 + 0.5) / 4
  EXPECT_EQ(FormatStats(t), "min -2, max 4.5, mean 1");
}

TEST(TensorSummaryTest, NaNsAreCountedNotAveraged) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor t =
      Tensor::FromVector<float>(DType::kF32, {3}, {nan, 2.0f, 4.0f});
  const TensorStats stats = ComputeStats(t);
  EXPECT_EQ(stats.count, 2);
  EXPECT_EQ(stats.nan_count, 1);
  EXPECT_EQ(stats.mean, 3.0);
  EXPECT_EQ(FormatStats(t), "min 2, max 4, mean 3, 1 NaN");
  EXPECT_EQ(FormatValues(t), "[nan, 2, 4]");
  const Tensor all_nan = Tensor::FromVector<float>(DType::kF32, {1}, {nan});
  EXPECT_EQ(FormatStats(all_nan), "all NaN");
}

TEST(TensorSummaryTest, EmptyAndScalarTensors) {
  EXPECT_EQ(FormatStats(Tensor(DType::kF32, {0, 3})), "empty");
  EXPECT_EQ(FormatValues(Tensor(DType::kF32, {0, 3})), "[]");
  EXPECT_EQ(FormatValues(Tensor::Scalar(DType::kF64, 0.25)), "0.25");
}

TEST(TensorSummaryTest, LongTensorsShowTheFirstAndLastValues) {
  const Tensor t = Tensor::FromVector<int>(DType::kI32, {10},
                                           {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(FormatValues(t, 4), "[0, 1, 2, ..., 9]");
  EXPECT_EQ(FormatValues(t, 10), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  // The mean of integers is a fraction.
  EXPECT_EQ(FormatStats(t), "min 0, max 9, mean 4.5");
}

TEST(TensorSummaryTest, ValuesByDtype) {
  EXPECT_EQ(FormatValue(DType::kBool, 1), "true");
  EXPECT_EQ(FormatValue(DType::kBool, 0), "false");
  EXPECT_EQ(FormatValue(DType::kI64, 123456789012.0), "123456789012");
  EXPECT_EQ(FormatValue(DType::kF32, 1.0 / 3.0), "0.333333");
  EXPECT_EQ(FormatValue(DType::kF32, 1e20), "1e+20");
  EXPECT_EQ(FormatValue(DType::kF32, -INFINITY), "-inf");
  const Tensor flags = Tensor::FromVector<int>(DType::kBool, {4}, {1, 0, 1, 1});
  EXPECT_EQ(FormatValues(flags), "[true, false, true, true]");
  EXPECT_EQ(FormatStats(flags), "min false, max true, mean 0.75");
}

}  // namespace
}  // namespace graft::cli
