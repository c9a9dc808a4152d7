#include "support/fingerprint.h"

#include "gtest/gtest.h"

namespace graft {
namespace {

// The published XXH3 test vector for empty input (xxhash's own tests).
TEST(Checksum64, MatchesTheReferenceVector) {
  EXPECT_EQ(Checksum64("", 0), 0x2D06800538D394C2ull);
}

TEST(FingerprintBuilder, FramesEachValue) {
  FingerprintBuilder a, b, c;
  a.AddString("ab").AddString("c");
  b.AddString("a").AddString("bc");
  c.AddString("ab").AddString("c");
  EXPECT_NE(a.Finish(), b.Finish());
  EXPECT_EQ(a.Finish(), c.Finish());
  FingerprintBuilder i, d;
  i.AddInt(1);
  d.AddDouble(1.0);
  EXPECT_NE(i.Finish(), d.Finish());
  EXPECT_EQ(a.Finish().ToHex().size(), 32u);
}

}  // namespace
}  // namespace graft
