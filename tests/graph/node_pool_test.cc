#include "graph/node_pool.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "graph/huge_pages.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

constexpr size_t kObject = 248;
constexpr size_t kHugePage = kHugePageBytes;

TEST(NodePoolTest, SlotsAreDistinctAlignedAndDoNotOverlap) {
  NodePool pool(kObject);
  std::vector<std::byte*> slots;
  // Enough for the doubling small slabs and several 2 MiB slabs.
  const size_t count = 5 * kHugePage / kObject;
  for (size_t i = 0; i < count; ++i) {
    auto* p = static_cast<std::byte*>(pool.Allocate());
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 8, 0u);
    std::memset(p, static_cast<int>(i & 0xff), kObject);  // Writable, all of it.
    slots.push_back(p);
  }
  std::set<uintptr_t> sorted;
  for (std::byte* p : slots) sorted.insert(reinterpret_cast<uintptr_t>(p));
  ASSERT_EQ(sorted.size(), count);
  uintptr_t prev = 0;
  for (uintptr_t p : sorted) {
    if (prev != 0) EXPECT_GE(p - prev, kObject);
    prev = p;
  }
  // Each slot still holds what was written to it: no slot was handed out twice.
  for (size_t i = 0; i < count; i += 997) {
    EXPECT_EQ(static_cast<int>(slots[i][kObject - 1]), static_cast<int>(i & 0xff));
  }
}

TEST(NodePoolTest, BigPoolsMapHugeSlabsAndGiveThemBack) {
  const size_t before = HugePageBytesInUse();
  {
    NodePool small(kObject);
    for (int i = 0; i < 100; ++i) small.Allocate();
    // A hundred nodes stay in small slabs from malloc.
    EXPECT_EQ(HugePageBytesInUse(), before);

    NodePool big(kObject);
    for (size_t i = 0; i < 4 * kHugePage / kObject; ++i) big.Allocate();
    const size_t mapped = HugePageBytesInUse() - before;
    EXPECT_GE(mapped, 2 * kHugePage);
    EXPECT_EQ(mapped % kHugePage, 0u);
  }
  EXPECT_EQ(HugePageBytesInUse(), before);
}

TEST(NodePoolTest, HugeSlabsAreAlignedToTheHugePageSize) {
  NodePool pool(kObject);
  std::set<uintptr_t> huge_starts;
  for (size_t i = 0; i < 3 * kHugePage / kObject; ++i) {
    auto p = reinterpret_cast<uintptr_t>(pool.Allocate());
    if (p % kHugePage == 0) huge_starts.insert(p);
  }
  // At least one slab began on a 2 MiB boundary (the first huge slab).
  EXPECT_FALSE(huge_starts.empty());
}

TEST(NodePoolTest, FreedSlotsAreReusedFirst) {
  NodePool pool(kObject);
  void* a = pool.Allocate();
  void* b = pool.Allocate();
  pool.Free(a);
  EXPECT_EQ(pool.Allocate(), a);
  EXPECT_NE(pool.Allocate(), b);
}

}  // namespace
}  // namespace graft
