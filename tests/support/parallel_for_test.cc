#include "support/parallel_for.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace graft {
namespace {

// Every index in [0, n) is visited exactly once, in ranges of at least
// `grain` items (but for the last), whatever n and the grain.
TEST(ParallelForTest, CoversEveryIndexOnce) {
  for (int64_t n : {0, 1, 7, 1000, 1 << 20, (1 << 20) + 3}) {
    for (int64_t grain : {1, 64, 1 << 16, 1 << 30}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " grain " << grain);
      std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
      std::atomic<int64_t> short_ranges{0};
      ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
        ASSERT_LE(0, begin);
        ASSERT_LT(begin, end);
        ASSERT_LE(end, n);
        if (end - begin < grain && end != n) ++short_ranges;
        for (int64_t i = begin; i < end; ++i) ++visits[static_cast<size_t>(i)];
      });
      int64_t wrong = 0;
      for (const std::atomic<int>& v : visits) wrong += v.load() != 1;
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(short_ranges.load(), 0);
    }
  }
}

}  // namespace
}  // namespace graft
