#include "sampling/stop_condition.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace valet {
namespace {

constexpr int32_t kEos = 2;
constexpr int32_t kText = 100;  // any non-EOS token id

StopChecker MakeChecker(std::vector<std::string> stops, int32_t max_tokens = 0) {
  StopOptions o;
  o.eos_token_ids = {kEos};
  o.max_tokens = max_tokens;
  o.stop_strings = std::move(stops);
  Result<StopChecker> c = StopChecker::Create(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

TEST(StopCheckerTest, PlainTextPassesThrough) {
  StopChecker c = MakeChecker({});
  StopDecision d = c.Feed(kText, "Once upon");
  EXPECT_EQ(d.text, "Once upon");
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(c.Feed(kText, " a time").text, " a time");
}

TEST(StopCheckerTest, StopStringSplitAcrossTokens) {
  StopChecker c = MakeChecker({"###"});
  EXPECT_EQ(c.Feed(kText, "Hello #").text, "Hello ");
  StopDecision d = c.Feed(kText, "#");
  EXPECT_EQ(d.text, "");
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(c.pending_size(), 2u);
  d = c.Feed(kText, "# world");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
}

TEST(StopCheckerTest, HeldBackPrefixIsReleasedWhenItDiverges) {
  StopChecker c = MakeChecker({"</s>"});
  EXPECT_EQ(c.Feed(kText, "a<").text, "a");
  EXPECT_EQ(c.Feed(kText, "/").text, "");
  StopDecision d = c.Feed(kText, "x>");
  EXPECT_FALSE(d.stopped());
  EXPECT_EQ(d.text, "</x>");
}

TEST(StopCheckerTest, ReleasesOnlyTheBytesThatCanNoLongerStartAMatch) {
  // "aaa" ends with "aa", still a prefix of "aab": only the first "a" is safe.
  StopChecker c = MakeChecker({"aab"});
  EXPECT_EQ(c.Feed(kText, "a").text, "");
  EXPECT_EQ(c.Feed(kText, "a").text, "");
  EXPECT_EQ(c.Feed(kText, "a").text, "a");
  StopDecision d = c.Feed(kText, "b");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
}

TEST(StopCheckerTest, StopStringAtTheVeryStart) {
  StopChecker c = MakeChecker({"User:"});
  StopDecision d = c.Feed(kText, "User:");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
}

TEST(StopCheckerTest, TextBeforeAMatchInsideOnePieceIsEmitted) {
  StopChecker c = MakeChecker({"STOP", "END"});
  StopDecision d = c.Feed(kText, "abcENDxSTOPdef");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "abc");  // the earliest stop string wins
}

TEST(StopCheckerTest, AfterAStopFeedReturnsNothingMore) {
  StopChecker c = MakeChecker({"x"});
  EXPECT_TRUE(c.Feed(kText, "x").stopped());
  StopDecision d = c.Feed(kText, "more");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
  EXPECT_EQ(c.tokens_fed(), 1);
}

TEST(StopCheckerTest, IncompleteUtf8IsHeldUntilComplete) {
  StopChecker c = MakeChecker({});
  // U+00E9 (C3 A9), U+20AC (E2 82 AC), U+1F600 (F0 9F 98 80) one byte per token.
  EXPECT_EQ(c.Feed(kText, "a\xC3").text, "a");
  EXPECT_EQ(c.Feed(kText, "\xA9").text, "\xC3\xA9");
  EXPECT_EQ(c.Feed(kText, "\xE2").text, "");
  EXPECT_EQ(c.Feed(kText, "\x82").text, "");
  EXPECT_EQ(c.Feed(kText, "\xAC").text, "\xE2\x82\xAC");
  EXPECT_EQ(c.Feed(kText, "\xF0\x9F").text, "");
  EXPECT_EQ(c.Feed(kText, "\x98").text, "");
  EXPECT_EQ(c.Feed(kText, "\x80!").text, "\xF0\x9F\x98\x80!");
}

TEST(StopCheckerTest, MalformedBytesAreNotHeldForever) {
  StopChecker c = MakeChecker({});
  EXPECT_EQ(c.Feed(kText, "\x80").text, "\x80");  // stray continuation byte
  EXPECT_EQ(c.Feed(kText, "\xFF").text, "\xFF");  // never a valid UTF-8 byte
  EXPECT_EQ(c.Feed(kText, "\xC3\xA9\xA9").text, "\xC3\xA9\xA9");
}

TEST(StopCheckerTest, MultibyteStopStringSplitOverByteTokens) {
  StopChecker c = MakeChecker({"\xE2\x80\x94"});  // U+2014 EM DASH
  EXPECT_EQ(c.Feed(kText, "hi\xE2").text, "hi");
  EXPECT_EQ(c.Feed(kText, "\x80").text, "");
  StopDecision d = c.Feed(kText, "\x94");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
}

TEST(StopCheckerTest, EosStopsDropsItsPieceAndFlushesHeldText) {
  StopChecker c = MakeChecker({"<|end|>"});
  EXPECT_EQ(c.Feed(kText, "x<").text, "x");
  StopDecision d = c.Feed(kEos, "</s>");
  EXPECT_EQ(d.reason, StopReason::kEos);
  EXPECT_EQ(d.text, "<");
  EXPECT_EQ(c.reason(), StopReason::kEos);
}

TEST(StopCheckerTest, AnyOfSeveralEosIdsStops) {
  StopOptions o;
  o.eos_token_ids = {2, 32000};
  Result<StopChecker> c = StopChecker::Create(o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->Feed(5, "a").stopped());
  EXPECT_EQ(c->Feed(32000, "").reason, StopReason::kEos);
}

TEST(StopCheckerTest, MaxTokensStopsAfterTheLastTokensText) {
  StopChecker c = MakeChecker({"zz"}, 3);
  EXPECT_FALSE(c.Feed(kText, "a").stopped());
  EXPECT_FALSE(c.Feed(kText, "b").stopped());
  StopDecision d = c.Feed(kText, "cz");
  EXPECT_EQ(d.reason, StopReason::kMaxTokens);
  EXPECT_EQ(d.text, "cz");  // the held "z" is released at the end
  EXPECT_EQ(c.tokens_fed(), 3);
}

TEST(StopCheckerTest, StopStringOnTheLastAllowedTokenWins) {
  StopChecker c = MakeChecker({"zz"}, 2);
  EXPECT_EQ(c.Feed(kText, "az").text, "a");
  StopDecision d = c.Feed(kText, "z");
  EXPECT_EQ(d.reason, StopReason::kStopString);
  EXPECT_EQ(d.text, "");
}

TEST(StopCheckerTest, FlushReleasesHeldBytes) {
  StopChecker c = MakeChecker({"###"});
  EXPECT_EQ(c.Feed(kText, "ok #").text, "ok ");
  EXPECT_EQ(c.Flush(), "#");
  EXPECT_EQ(c.pending_size(), 0u);
}

TEST(StopCheckerTest, InvalidOptionsAreRejected) {
  StopOptions o;
  o.stop_strings = {"ok", ""};
  EXPECT_EQ(StopChecker::Create(o).status().code(), StatusCode::kInvalidArgument);
  o.stop_strings = {"ok"};
  o.max_tokens = -1;
  EXPECT_EQ(StopChecker::Create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(StopCheckerTest, AnySplitEmitsExactlyTheTextBeforeTheFirstStop) {
  const std::string text = "The cat sat. ## The dog ran. ### The end. ###";
  const std::vector<std::string> stops = {"###", "dog ran!"};
  const std::string expected = text.substr(0, text.find("###"));
  std::mt19937 gen(17);
  for (int trial = 0; trial < 200; ++trial) {
    StopChecker c = MakeChecker(stops);
    std::string emitted;
    StopReason reason = StopReason::kNone;
    for (size_t pos = 0; pos < text.size() && reason == StopReason::kNone;) {
      const size_t len = std::uniform_int_distribution<size_t>(1, 4)(gen);
      StopDecision d = c.Feed(kText, std::string_view(text).substr(pos, len));
      emitted += d.text;
      reason = d.reason;
      pos += len;
    }
    EXPECT_EQ(reason, StopReason::kStopString);
    EXPECT_EQ(emitted, expected);
  }
}

}  // namespace
}  // namespace valet
