// The matcher over many strings: JSON documents accepted and rejected, the
// state copied and diverging, tokens, the end of the grammar.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "constrain/grammar_matcher.h"
#include "grammar_test_util.h"
#include "test_grammars.h"

namespace valet {
namespace {

using test::Compile;
using test::IsPrefix;
using test::MakeMatcher;
using test::Matches;

TEST(GrammarMatcher, JsonAcceptsValidDocuments) {
  auto json = Compile(test::kJsonGbnf);
  const std::vector<std::string> valid = {
      "{}", "[]", "0", "-0", "12", "-3.25", "1e10", "2.5E-3", "true", "false", "null", "\"\"",
      "\"a\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u00e9\\uABCD\"", "\"h\xC3\xA9llo \xE6\x97\xA5\xF0\x9F\x98\x80\"",
      "{\"a\":1}", "{ \"a\" : 1 }", "{\"a\":1,\"b\":[true,false,null]}", "[1,2,3]", "[ 1 , 2 ]",
      "[[[[[]]]]]", "{\"k\":{\"k\":{\"k\":{}}}}", "[\"x\",{\"y\":-1.5e+7}]", "{\n\"a\":\t1}",
      "1234567890123456"};
  for (const std::string& s : valid) EXPECT_TRUE(Matches(json, s)) << s;
}

TEST(GrammarMatcher, JsonRejectsInvalidDocuments) {
  auto json = Compile(test::kJsonGbnf);
  const std::vector<std::string> invalid = {
      "", "{", "[", "{\"a\"}", "{\"a\":}", "[1,]", "{,}", "01", "1.", ".5", "-", "+1", "1e", "tru",
      "True", "nul", "\"abc", "\"\x01\"", "\"\\x\"", "\"\\u12\"", "{'a':1}", "[1 2]", "{\"a\":1,}",
      "[]]", "{}{}", "12345678901234567",  // 17 digits: [0-9]{0,15} after the first
      "[   1]",                            // three spaces: ws is bounded to two
      "\"\xC3\"", "\"\xFF\""};
  for (const std::string& s : invalid) EXPECT_FALSE(Matches(json, s)) << s;
}

TEST(GrammarMatcher, PrefixesStayAliveAndWrongBytesAreRefused) {
  auto json = Compile(test::kJsonGbnf);
  EXPECT_TRUE(IsPrefix(json, "{\"key\": [1, 2"));
  EXPECT_TRUE(IsPrefix(json, "\"\xE6\x97"));  // inside a character
  EXPECT_FALSE(IsPrefix(json, "{]"));
  GrammarMatcher m = MakeMatcher(json);
  ASSERT_TRUE(m.AcceptBytes("[1"));
  const size_t stacks = m.stacks().size();
  EXPECT_FALSE(m.Accept('x'));
  EXPECT_EQ(m.stacks().size(), stacks);  // a refused byte changes nothing
  EXPECT_FALSE(m.AcceptBytes(",2x"));     // all or nothing
  EXPECT_TRUE(m.AcceptBytes(",2]"));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarMatcher, CopiesAreIndependent) {
  auto json = Compile(test::kJsonGbnf);
  GrammarMatcher a = MakeMatcher(json);
  ASSERT_TRUE(a.AcceptBytes("{\"a\":"));
  GrammarMatcher b = a;
  ASSERT_TRUE(a.AcceptBytes("1}"));
  ASSERT_TRUE(b.AcceptBytes("[true]}"));
  EXPECT_TRUE(a.CanEnd());
  EXPECT_TRUE(b.CanEnd());
  EXPECT_FALSE(b.Accept('}'));
}

TEST(GrammarMatcher, CanEndOnlyAtCompleteSentences) {
  auto c = Compile("root ::= \"ab\" | \"abcd\"");
  GrammarMatcher m = MakeMatcher(c);
  EXPECT_FALSE(m.CanEnd());
  ASSERT_TRUE(m.AcceptBytes("ab"));
  EXPECT_TRUE(m.CanEnd());
  ASSERT_TRUE(m.Accept('c'));
  EXPECT_FALSE(m.CanEnd());
  ASSERT_TRUE(m.Accept('d'));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_FALSE(m.Accept('d'));
}

TEST(GrammarMatcher, LongRepetitionsKeepTheStateSmall) {
  // x* is right recursion in tail position: no frame per repetition, and the
  // arena is compacted, so a long string leaves a state as small as a short one.
  auto json = Compile(test::kJsonGbnf);
  GrammarMatcher m = MakeMatcher(json);
  ASSERT_TRUE(m.Accept('"'));
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(m.Accept('a' + i % 26));
  EXPECT_LE(m.stacks().size(), 16u);  // one per alternative of a string character
  EXPECT_LE(m.frames().size(), 256u);
  ASSERT_TRUE(m.Accept('"'));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarMatcher, NestingBeyondTheDepthLimitIsRefused) {
  MatcherLimits limits;
  limits.max_depth = 50;
  auto json = Compile(test::kJsonGbnf, nullptr, limits);
  GrammarMatcher m = MakeMatcher(json);
  int accepted = 0;
  while (accepted < 1000 && m.Accept('[')) ++accepted;
  EXPECT_GT(accepted, 5);
  EXPECT_LT(accepted, 50);
  GrammarMatcher deep = MakeMatcher(Compile(test::kJsonGbnf));  // default limit 512
  std::string nested(100, '[');
  nested += std::string(100, ']');
  EXPECT_TRUE(deep.AcceptBytes(nested));
  EXPECT_TRUE(deep.CanEnd());
}

TEST(GrammarMatcher, TokensNeedAVocabulary) {
  GrammarMatcher m = MakeMatcher(Compile("root ::= \"a\""));
  EXPECT_FALSE(m.AcceptToken(0).ok());
}

}  // namespace
}  // namespace valet
