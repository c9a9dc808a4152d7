#include "cli/timing.h"

#include "gtest/gtest.h"

namespace graft::cli {
namespace {

TEST(FormatDurationTest, PicksAUnitWithThreeSignificantDigits) {
  EXPECT_EQ(FormatDuration(0), "0 ns");
  EXPECT_EQ(FormatDuration(850e-9), "850 ns");
  EXPECT_EQ(FormatDuration(12.34e-6), "12.3 us");
  EXPECT_EQ(FormatDuration(4.567e-3), "4.57 ms");
  EXPECT_EQ(FormatDuration(1.234), "1.23 s");
  EXPECT_EQ(FormatDuration(125.4), "125 s");
  EXPECT_EQ(FormatDuration(4321.0), "4321 s");
  // 999.7 us would print as "1e+03 us": it moves up to ms.
  EXPECT_EQ(FormatDuration(999.7e-6), "1 ms");
}

TEST(MedianTest, OddEvenAndEmpty) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({5}), 5);
}

}  // namespace
}  // namespace graft::cli
