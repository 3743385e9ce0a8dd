// Regular expressions as grammars: the ECMAScript subset, whole-text and
// search (JSON Schema pattern) semantics, and every refusal naming its construct.
#include <gtest/gtest.h>

#include <string>

#include "constraint_test_util.h"

namespace valet {
namespace {

using test::CompileRegex;
using test::ConstraintError;
using test::Matches;

TEST(RegexGbnf, LiteralsClassesAndQuantifiers) {
  auto c = CompileRegex(R"([A-Z][a-z]{2,4}-\d+(\.\d{1,2})?)");
  for (const char* s : {"Abc-1", "Xyzzy-42.5", "Qrs-007.12"}) EXPECT_TRUE(Matches(c, s)) << s;
  for (const char* s : {"abc-1", "Ab-1", "Abcdef-1", "Abc-", "Abc-1.", "Abc-1.123"})
    EXPECT_FALSE(Matches(c, s)) << s;
}

TEST(RegexGbnf, AlternationGroupsAndAnchors) {
  auto c = CompileRegex(R"(^(?:cat|dog)s?|(?<n>bird)$)");
  for (const char* s : {"cat", "dogs", "bird"}) EXPECT_TRUE(Matches(c, s)) << s;
  for (const char* s : {"cats!", "birds", "", "ca"}) EXPECT_FALSE(Matches(c, s)) << s;
  auto empty_alt = CompileRegex("a(b|)c");
  EXPECT_TRUE(Matches(empty_alt, "ac"));
  EXPECT_TRUE(Matches(empty_alt, "abc"));
}

TEST(RegexGbnf, DotAndClassEscapes) {
  auto dot = CompileRegex("a.c");
  EXPECT_TRUE(Matches(dot, "abc"));
  EXPECT_TRUE(Matches(dot,
                      "a\xC3\xA9"
                      "c"));           // one code point, two bytes
  EXPECT_FALSE(Matches(dot, "a\nc"));  // '.' stops at line terminators
  auto neg = CompileRegex(R"([^\d\s]+)");
  EXPECT_TRUE(Matches(neg, "ab_C"));
  EXPECT_FALSE(Matches(neg, "a1"));
  EXPECT_FALSE(Matches(neg, "a b"));
  auto w = CompileRegex(R"(\w+\W\x41\u00e9[\-\]]*)");
  EXPECT_TRUE(Matches(w, "ab_9!A\xC3\xA9-]"));
  EXPECT_FALSE(Matches(w, "ab_9_A\xC3\xA9"));
}

TEST(RegexGbnf, LazyQuantifiersMatchTheSameLanguage) {
  auto c = CompileRegex("a+?b*?c??");
  for (const char* s : {"a", "aab", "abbc"}) EXPECT_TRUE(Matches(c, s)) << s;
  EXPECT_FALSE(Matches(c, "b"));
}

TEST(RegexGbnf, RefusalsNameTheConstruct) {
  struct Case {
    const char* regex;
    const char* error;
  };
  for (const Case& k : std::initializer_list<Case>{{R"((a)\1)", "escape '\\1'"},
                                                   {"(?=a)b", "lookaround"},
                                                   {R"(\bword)", "word boundary"},
                                                   {"a^b", "'^' inside"},
                                                   {"a$b", "'$' inside"},
                                                   {"(ab", "unclosed '('"},
                                                   {"ab)", "unmatched ')'"},
                                                   {"*a", "nothing to repeat"},
                                                   {"a**", "nothing to repeat"},
                                                   {"a{2,1}", "n < m"},
                                                   {"a{5000}", "repetition count above"},
                                                   {"[z-a]", "out of order"},
                                                   {"[]", "matches nothing"},
                                                   {"[abc", "unterminated '['"},
                                                   {R"(\p{L})", "escape '\\p'"},
                                                   {"\xC3(", "invalid UTF-8"}}) {
    const std::string e = ConstraintError({ConstraintKind::kRegex, k.regex});
    EXPECT_NE(e.find(k.error), std::string::npos) << k.regex << " -> " << e;
  }
}

TEST(RegexGbnf, NestingAndLengthAreBoundedBeforeTheScan) {
  EXPECT_NE(ConstraintError({ConstraintKind::kRegex, std::string(40, '(') + std::string(40, ')')})
                .find("nested"),
            std::string::npos);
  EXPECT_NE(ConstraintError({ConstraintKind::kRegex, std::string(5000, 'a')}).find("longer than"),
            std::string::npos);
}

}  // namespace
}  // namespace valet
