// What an error may quote of a client's value: a bounded prefix that never
// splits a UTF-8 character.
#include "server/client_text.h"

#include <gtest/gtest.h>

#include <string>

namespace valet {
namespace {

TEST(ClientTextTest, ShortTextIsQuotedWhole) {
  EXPECT_EQ(QuoteClientText("user"), "'user'");
  EXPECT_EQ(QuoteClientText(std::string(kMaxQuotedBytes, 'a')), "'" + std::string(kMaxQuotedBytes, 'a') + "'");
}

TEST(ClientTextTest, LongTextIsCutAndItsLengthGiven) {
  const std::string quoted = QuoteClientText(std::string(1 << 20, 'a'));
  EXPECT_EQ(quoted, "'" + std::string(kMaxQuotedBytes, 'a') + "…' (1048576 bytes)");
}

TEST(ClientTextTest, ACutNeverSplitsACharacter) {
  // "é" is two bytes: with an odd prefix the cut lands inside one and backs off.
  std::string text = "a";
  for (int i = 0; i < 100; ++i) text += "é";
  EXPECT_EQ(Utf8Prefix(text, 4), "aé");  // "a", "é" and half an "é": the half goes
  EXPECT_EQ(Utf8Prefix(text, 5), "aéé");
  EXPECT_EQ(Utf8Prefix("€€", 4), "€");  // three-byte characters
  EXPECT_EQ(Utf8Prefix("short", 100), "short");
  // Not UTF-8 at all: cut anyway, and bounded.
  EXPECT_LE(Utf8Prefix(std::string(100, '\x80'), 10).size(), 10u);
}

}  // namespace
}  // namespace valet
