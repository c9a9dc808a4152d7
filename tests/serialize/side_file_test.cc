#include "serialize/side_file.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graft {
namespace {

using ::testing::HasSubstr;

TEST(SideFileTest, HeaderLayout) {
  const std::string header =
      EncodeSideFileHeader({0x0102030405060708ULL, 0x1122ULL});
  ASSERT_EQ(header.size(), 64u);
  EXPECT_EQ(header.substr(0, 8), "GRAFTDAT");
  // Little-endian id, then size, then zeros.
  EXPECT_EQ(header.substr(8, 8),
            std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  EXPECT_EQ(header.substr(16, 8), std::string("\x22\x11\0\0\0\0\0\0", 8));
  EXPECT_EQ(header.substr(24), std::string(40, '\0'));
  absl::StatusOr<SideFileHeader> decoded = DecodeSideFileHeader(header, "f");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->id, 0x0102030405060708ULL);
  EXPECT_EQ(decoded->size, 0x1122ULL);
}

TEST(SideFileTest, BadHeaders) {
  absl::StatusOr<SideFileHeader> h = DecodeSideFileHeader("GRAFTDAT", "m.data");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().message(),
            "m.data: not a graft side file: it is 8 bytes long, shorter than "
            "its 64-byte header");
  h = DecodeSideFileHeader(std::string(64, 'x'), "m.data");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.status().message(), HasSubstr("does not start with"));
}

uint64_t HashInPieces(const std::string& bytes, size_t piece) {
  SideFileHasher hasher;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    hasher.Update(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return hasher.Finish();
}

TEST(SideFileTest, HashDoesNotDependOnHowBytesAreFed) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(i * 7 + 3));
  const uint64_t whole = HashInPieces(bytes, bytes.size());
  for (size_t piece : {1, 3, 31, 32, 33, 64, 999}) {
    EXPECT_EQ(HashInPieces(bytes, piece), whole) << piece;
  }
}

TEST(SideFileTest, HashSeesEveryBitAndTheLength) {
  std::string bytes(256, '\0');
  const uint64_t base = HashInPieces(bytes, 256);
  for (size_t i = 0; i < bytes.size(); i += 17) {
    std::string flipped = bytes;
    flipped[i] ^= 0x04;
    EXPECT_NE(HashInPieces(flipped, 256), base) << i;
  }
  // Trailing zeros change the id: the length is part of it.
  EXPECT_NE(HashInPieces(std::string(257, '\0'), 257), base);
  EXPECT_NE(HashInPieces(std::string(), 1), base);
}

}  // namespace
}  // namespace graft
