#include "server/utf8_assembler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>


namespace valet {
namespace {

// Strict UTF-8 validation (RFC 3629), written independently of the assembler.
bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    unsigned cp = 0;
    if (b < 0x80) { len = 1; cp = b; }
    else if ((b >> 5) == 0x6) { len = 2; cp = b & 0x1F; }
    else if ((b >> 4) == 0xE) { len = 3; cp = b & 0x0F; }
    else if ((b >> 3) == 0x1E) { len = 4; cp = b & 0x07; }
    else return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c >> 6) != 0x2) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

const std::string kText = "a\xC3\xA9z \xE2\x82\xAC\xF0\x9F\x98\x80\xE4\xB8\xAD!";  // a é z € 😀 中 !

TEST(Utf8AssemblerTest, EverySplitOfValidTextGivesValidChunksAndTheSameBytes) {
  // Every way of cutting the text into pieces of 1..4 bytes.
  for (size_t piece = 1; piece <= 4; ++piece) {
    for (size_t offset = 0; offset < piece; ++offset) {
      Utf8Assembler a;
      std::string joined;
      size_t pos = 0;
      size_t next = offset == 0 ? piece : offset;
      while (pos < kText.size()) {
        const std::string out = a.Push(kText.substr(pos, next));
        EXPECT_TRUE(ValidUtf8(out)) << "piece " << piece << " at " << pos;
        joined += out;
        pos += next;
        next = piece;
      }
      EXPECT_EQ(a.held(), 0u);
      EXPECT_EQ(joined + a.Flush(), kText);
    }
  }
}

TEST(Utf8AssemblerTest, HoldsOnlyAnUnfinishedCharacter) {
  Utf8Assembler a;
  EXPECT_EQ(a.Push("x\xF0\x9F"), "x");
  EXPECT_EQ(a.held(), 2u);
  EXPECT_EQ(a.Push("\x98"), "");
  EXPECT_EQ(a.Push("\x80y"), "\xF0\x9F\x98\x80y");
}

TEST(Utf8AssemblerTest, InvalidBytesPassThroughInsteadOfStalling) {
  Utf8Assembler a;
  EXPECT_EQ(a.Push("\x80"), "\x80");           // stray continuation
  EXPECT_EQ(a.Push("\xFF" "a"), "\xFF" "a");  // never a lead byte
  EXPECT_EQ(a.Push("\xC3" "b"), "\xC3" "b");  // a lead cut short by ASCII
  EXPECT_EQ(a.Push("\xE2\x82"), "");
  EXPECT_EQ(a.Flush(), "\xE2\x82");  // generation ended mid-character
  EXPECT_EQ(a.held(), 0u);
}

TEST(Utf8AssemblerTest, CompletePrefixLength) {
  EXPECT_EQ(CompleteUtf8Prefix(""), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xC3"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xC3\xA9"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\xE2\x82"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("\xF0\x9F\x98\x80"), 4u);
}

}  // namespace
}  // namespace valet
