#include "graph/huge_pages.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(HugePagesTest, MapsAlignedZeroedMemoryRoundedToHugePages) {
  const size_t before = HugePageBytesInUse();
  const size_t bytes = kHugePageBytes + 100;  // Rounds up to two huge pages.
  auto* data = static_cast<unsigned char*>(MapHugePages(bytes));
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % kHugePageBytes, 0u);
  EXPECT_EQ(HugePageBytesInUse() - before, 2 * kHugePageBytes);
  EXPECT_EQ(data[0], 0);
  EXPECT_EQ(data[2 * kHugePageBytes - 1], 0);  // The rounded-up tail is usable.
  std::memset(data, 0xab, 2 * kHugePageBytes);
  UnmapHugePages(data, bytes);
  EXPECT_EQ(HugePageBytesInUse(), before);
}

TEST(HugePagesTest, AllocatorMapsOnlyBigBlocks) {
  const size_t before = HugePageBytesInUse();
  {
    std::vector<char, HugePageAllocator<char>> small(1000, 'x');
    EXPECT_EQ(HugePageBytesInUse(), before);
    std::vector<char, HugePageAllocator<char>> big(3 * kHugePageBytes, 'y');
    EXPECT_EQ(HugePageBytesInUse() - before, 3 * kHugePageBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kHugePageBytes, 0u);
    EXPECT_EQ(big[3 * kHugePageBytes - 1], 'y');
    EXPECT_EQ(small[999], 'x');
  }
  EXPECT_EQ(HugePageBytesInUse(), before);
}

}  // namespace
}  // namespace graft
