#include "backends/memory_plan.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(PlanMemory, BuffersAliveTogetherNeverOverlap) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 100; ++round) {
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < 30; ++i) {
      const int64_t first = rng() % 50;
      buffers.push_back({first, first + static_cast<int64_t>(rng() % 10),
                         static_cast<size_t>(rng() % 5000)});
    }
    const MemoryPlan plan = PlanMemory(buffers);
    size_t total = 0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      total += buffers[i].bytes;
      EXPECT_EQ(plan.offsets[i] % 64, 0u);
      EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.arena_bytes);
      for (size_t j = 0; j < i; ++j) {
        const bool live_together = buffers[i].first <= buffers[j].last &&
                                   buffers[j].first <= buffers[i].last;
        const bool share_bytes =
            plan.offsets[i] < plan.offsets[j] + buffers[j].bytes &&
            plan.offsets[j] < plan.offsets[i] + buffers[i].bytes;
        EXPECT_FALSE(live_together && share_bytes) << i << " and " << j;
      }
    }
    EXPECT_EQ(plan.total_bytes, total);
    EXPECT_LE(plan.arena_bytes, total + 64 * buffers.size());
  }
}

TEST(PlanMemory, ReusesMemoryOfDeadBuffers) {
  // a (0-1), b (1-2), c (2-3): c can take a's place.
  const MemoryPlan plan =
      PlanMemory({{0, 1, 1000}, {1, 2, 1000}, {2, 3, 1000}});
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);
  EXPECT_EQ(plan.arena_bytes, 2048u);  // Two buffers, 64-byte aligned.
  EXPECT_EQ(plan.total_bytes, 3000u);
}

TEST(PlanMemory, Empty) {
  const MemoryPlan plan = PlanMemory({});
  EXPECT_EQ(plan.arena_bytes, 0u);
  EXPECT_TRUE(plan.offsets.empty());
}

}  // namespace
}  // namespace graft
