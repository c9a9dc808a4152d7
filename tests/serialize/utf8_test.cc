#include "serialize/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace graft {
namespace {

TEST(Utf8Test, Valid) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii \x01\x7f"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));           // U+00E9
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));          // U+20AC
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x98\x80"));      // U+1F600
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));      // U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));  // NUL is a character
}

TEST(Utf8Test, Invalid) {
  EXPECT_FALSE(IsValidUtf8("\x80"));  // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xff\xfe"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));  // cut short
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));
  EXPECT_FALSE(IsValidUtf8("\xc3\x28"));              // bad continuation
  EXPECT_FALSE(IsValidUtf8("\xc0\x80"));              // overlong NUL
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));          // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));      // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf8\x88\x80\x80\x80"));  // 5-byte form
}

}  // namespace
}  // namespace graft
