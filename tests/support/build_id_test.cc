#include "support/build_id.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace graft {
namespace {

// The ID of the test binary itself, as the linker wrote it (Debian's
// toolchain writes a SHA-1 build ID by default): the same bytes that
// `readelf -n` shows, read here from the running executable's note.
TEST(BuildId, IsTheRunningBinarysGnuBuildId) {
  const std::string& id = BuildId();
  ASSERT_EQ(id.size(), 40u) << id;
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(&BuildId(), &id);  // Computed once.
  // The same bytes appear in the executable file.
  std::ifstream f("/proc/self/exe", std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  std::string raw;
  for (size_t i = 0; i < id.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16)));
  }
  EXPECT_NE(bytes.str().find(raw), std::string::npos);
}

}  // namespace
}  // namespace graft
