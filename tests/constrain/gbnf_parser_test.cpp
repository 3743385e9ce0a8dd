// GBNF parsing: the syntax llama.cpp reads, what it compiles to, and every
// error the parser reports (each naming what is wrong).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "constrain/gbnf_parser.h"
#include "grammar_test_util.h"
#include "test_grammars.h"

namespace valet {
namespace {

using test::Compile;
using test::Matches;

std::string ErrorOf(std::string_view gbnf, const GrammarLimits& limits = {}) {
  Result<Grammar> g = ParseGbnf(gbnf, limits);
  EXPECT_FALSE(g.ok()) << "parsed: " << gbnf;
  return g.ok() ? "" : g.status().message();
}

TEST(GbnfParser, JsonGrammarParses) {
  Result<Grammar> g = ParseGbnf(test::kJsonGbnf);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->rule_names[g->root], "root");
  EXPECT_GT(g->rule_count(), 8u);
}

TEST(GbnfParser, LiteralsAndEscapes) {
  auto c = Compile(R"(root ::= "a\n\t\r\\\"\x41\u00e9\U0001F600\[\]")");
  EXPECT_TRUE(Matches(c, "a\n\t\r\\\"A\xC3\xA9\xF0\x9F\x98\x80[]"));
  EXPECT_FALSE(Matches(c, "a"));
  auto utf8 = Compile("root ::= \"h\xC3\xA9llo \xE6\x97\xA5\"");
  EXPECT_TRUE(Matches(utf8, "h\xC3\xA9llo \xE6\x97\xA5"));
}

TEST(GbnfParser, AlternationGroupingAndComments) {
  auto c = Compile(R"(
# a comment line
root ::= ("ab" | "c") rest  # trailing comment
rest ::= "d" (("e") | "f"#comment inside
  )
)");
  for (const char* s : {"abde", "cdf"}) EXPECT_TRUE(Matches(c, s)) << s;
  for (const char* s : {"abd", "cde#", "abcde"}) EXPECT_FALSE(Matches(c, s)) << s;
}

TEST(GbnfParser, RuleEndsAtNewlineOutsideParentheses) {
  EXPECT_NE(ErrorOf("root ::= \"a\"\n  | \"b\"").find("expected a rule name"), std::string::npos);
  auto c = Compile("root ::= \"a\" |\n  \"b\" | (\n \"c\"\n |\n \"d\" )\n");
  for (const char* s : {"a", "b", "c", "d"}) EXPECT_TRUE(Matches(c, s)) << s;
  EXPECT_FALSE(Matches(c, "ab"));
}

TEST(GbnfParser, Repetitions) {
  auto star = Compile(R"(root ::= "a"* "b")");
  for (const char* s : {"b", "ab", "aaaab"}) EXPECT_TRUE(Matches(star, s)) << s;
  EXPECT_FALSE(Matches(star, "a"));
  auto plus = Compile(R"(root ::= ("x" "y")+)");
  EXPECT_TRUE(Matches(plus, "xyxy"));
  EXPECT_FALSE(Matches(plus, ""));
  EXPECT_FALSE(Matches(plus, "xyx"));
  auto opt = Compile(R"(root ::= "a"? "b")");
  EXPECT_TRUE(Matches(opt, "b"));
  EXPECT_TRUE(Matches(opt, "ab"));
  EXPECT_FALSE(Matches(opt, "aab"));
  auto range = Compile(R"(root ::= "a"{2,4})");
  EXPECT_FALSE(Matches(range, "a"));
  EXPECT_TRUE(Matches(range, "aa"));
  EXPECT_TRUE(Matches(range, "aaaa"));
  EXPECT_FALSE(Matches(range, "aaaaa"));
  auto exact = Compile(R"(root ::= [0-9]{3})");
  EXPECT_TRUE(Matches(exact, "123"));
  EXPECT_FALSE(Matches(exact, "12"));
  EXPECT_FALSE(Matches(exact, "1234"));
  auto at_least = Compile(R"(root ::= "ab"{2,})");
  EXPECT_FALSE(Matches(at_least, "ab"));
  EXPECT_TRUE(Matches(at_least, "abab"));
  EXPECT_TRUE(Matches(at_least, "abababab"));
  auto zero = Compile(R"(root ::= "a"{0} "b" { 0 , 1 })");
  EXPECT_TRUE(Matches(zero, ""));
  EXPECT_TRUE(Matches(zero, "b"));
  auto empty = Compile(R"(root ::= ""* "x")");
  EXPECT_TRUE(Matches(empty, "x"));
}

// x{m,n} is a counted loop: every count from m to n, nothing else, for
// elements of several lengths, nested loops and an element that can be empty.
TEST(GbnfParser, CountedRepetitionsMatchExactlyTheirCounts) {
  for (uint32_t min = 0; min <= 3; ++min) {
    for (uint32_t max = std::max(min, 1u); max <= 5; ++max) {
      const std::string text =
          "root ::= (\"a\" | \"bc\"){" + std::to_string(min) + "," + std::to_string(max) + "} \"z\"";
      auto g = Compile(text);
      for (uint32_t n = 0; n <= max + 2; ++n) {
        for (uint32_t pattern = 0; pattern < (1u << n); ++pattern) {
          std::string s;
          for (uint32_t i = 0; i < n; ++i) s += (pattern >> i) & 1 ? "bc" : "a";
          EXPECT_EQ(Matches(g, s + "z"), n >= min && n <= max) << text << " on " << s;
        }
      }
    }
  }
  auto nested = Compile(R"(root ::= ("x" [0-9]{1,3}){2,3})");
  EXPECT_TRUE(Matches(nested, "x1x22"));
  EXPECT_TRUE(Matches(nested, "x123x4x56"));
  EXPECT_FALSE(Matches(nested, "x1"));
  EXPECT_FALSE(Matches(nested, "x1234x1"));
  EXPECT_FALSE(Matches(nested, "x1x2x3x4"));
  auto nullable = Compile(R"(root ::= ("a"?){2,3} "b")");
  for (const char* ok : {"b", "ab", "aab", "aaab"}) EXPECT_TRUE(Matches(nullable, ok)) << ok;
  EXPECT_FALSE(Matches(nullable, "aaaab"));
}

TEST(GbnfParser, CharacterClasses) {
  auto c = Compile(R"(root ::= [a-cx] [^a-z] . [\]\-] [\u00e0-\u00ff])");
  EXPECT_TRUE(Matches(c, "bQ!]\xC3\xA9"));
  EXPECT_TRUE(Matches(c, "x\xE6\x97\xA5\xF0\x9F\x98\x80-\xC3\xA0"));
  EXPECT_FALSE(Matches(c, "dQ!]\xC3\xA9"));   // d not in [a-cx]
  EXPECT_FALSE(Matches(c, "bq!]\xC3\xA9"));   // q in a-z
  EXPECT_FALSE(Matches(c, "bQ!]\xC3\x9F"));   // U+00DF below the range
  auto any = Compile("root ::= .");
  EXPECT_TRUE(Matches(any, "\n"));
  EXPECT_TRUE(Matches(any, "\xF4\x8F\xBF\xBF"));   // U+10FFFF
  EXPECT_FALSE(Matches(any, "\xED\xA0\x80"));       // a surrogate has no UTF-8 form
  EXPECT_FALSE(Matches(any, "\xC0\x80"));           // overlong
  EXPECT_FALSE(Matches(any, "\x80"));               // a lone continuation byte
  EXPECT_FALSE(Matches(any, "ab"));
}

TEST(GbnfParser, RulesMayBeUsedBeforeDefinition) {
  auto c = Compile("root ::= greeting \" \" name\nname ::= [A-Z] [a-z]*\ngreeting ::= \"hi\" | \"hello\"\n");
  EXPECT_TRUE(Matches(c, "hello Ada"));
  EXPECT_FALSE(Matches(c, "hello ada"));
}

TEST(GbnfParser, SyntaxErrorsNameTheProblemAndLine) {
  EXPECT_NE(ErrorOf("root ::= missing").find("undefined rule 'missing'"), std::string::npos);
  EXPECT_NE(ErrorOf("other ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("no rules"), std::string::npos);
  EXPECT_NE(ErrorOf("# only a comment\n").find("no rules"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"\nroot ::= \"b\"").find("line 2: rule 'root' is defined twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf("root = \"a\"").find("expected '::='"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\"").find("unclosed '('"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\")").find("')' without '('"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\nb\"").find("newline in a string"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [abc").find("unterminated character class"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\x4\"").find("hex digits"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\uD800\"").find("no Unicode scalar value"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\\U00110000\"").find("no Unicode scalar value"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xC3\"").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"\xC0\x80\"").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [z-a]").find("ends before it starts"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= [^\\x00-\\U0010FFFF]").find("matches no character"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= * \"a\"").find("'*' follows no element"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"**").find("'*' follows no element"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{3,2}").find("n < m"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{2").find("expected '}'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{,2}").find("expected a number"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\" @").find("unexpected character '@'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= a b ::= \"x\"").find("must start on a new line"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"\n\n  foo").find("line 3: expected '::='"), std::string::npos);
}

TEST(GbnfParser, LeftRecursionIsRefused) {
  EXPECT_NE(ErrorOf("root ::= root \"a\" | \"b\"").find("left recursion: rule 'root'"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= a\na ::= b \"x\"\nb ::= root | \"y\"").find("left recursion"), std::string::npos);
  // Through a rule that can match nothing.
  EXPECT_NE(ErrorOf("root ::= e root \"a\" | \"b\"\ne ::= \"\" | \"x\"").find("left recursion"),
            std::string::npos);
  // A repetition of something that can be empty loops without input.
  EXPECT_NE(ErrorOf("root ::= (\"a\"?)*").find("left recursion"), std::string::npos);
  // Right recursion is fine.
  auto c = Compile("root ::= \"a\" root | \"b\"");
  EXPECT_TRUE(Matches(c, "aaab"));
}

TEST(GbnfParser, LimitsAreCheckedAndNamed) {
  GrammarLimits small;
  small.max_text_bytes = 16;
  EXPECT_NE(ErrorOf("root ::= \"aaaaaaaaaaaaaaaaaaaa\"", small).find("max_text_bytes"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{1001}").find("max_repetition"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"{99999999999999999999}").find("max_repetition"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')')).find("max_nesting"),
            std::string::npos);
  GrammarLimits rules;
  rules.max_rules = 3;
  EXPECT_NE(ErrorOf("root ::= a\na ::= b\nb ::= c\nc ::= \"x\"", rules).find("max_rules"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= (\"a\" | (\"b\" | (\"c\" | \"d\")))", rules).find("max_rules"), std::string::npos);
  GrammarLimits symbols;
  symbols.max_symbols = 100;
  EXPECT_NE(ErrorOf("root ::= \"" + std::string(120, 'a') + "\"", symbols).find("max_symbols"), std::string::npos);
  EXPECT_NE(ErrorOf("root ::= \"a\"+ \"b\"{99,} \"c\"* \"" + std::string(90, 'd') + "\"", symbols).find("max_symbols"),
            std::string::npos);
  // A counted repetition is one position whatever its count.
  EXPECT_TRUE(ParseGbnf("root ::= \"ab\"{99} \"a\"{0,60} \"b\"{7,}", symbols).ok());
}

}  // namespace
}  // namespace valet
