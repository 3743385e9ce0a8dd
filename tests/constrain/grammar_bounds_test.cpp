// Hostile grammars: huge, deep, long chains, cycles and ambiguity blow-ups are
// refused or bounded quickly, with no recursion that could overflow the stack;
// random grammar texts never crash the parser, matcher or mask.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "constrain/gbnf_parser.h"
#include "constrain/token_mask.h"
#include "grammar_test_util.h"
#include "test_grammars.h"

namespace valet {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(GrammarBounds, HugeTextIsRefusedBeforeParsing) {
  std::string huge = "root ::= \"";
  huge.append(10 << 20, 'a');
  huge += '"';
  const auto start = Clock::now();
  Result<Grammar> g = ParseGbnf(huge);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(g.status().message().find("max_text_bytes"), std::string::npos);
  EXPECT_LT(SecondsSince(start), 0.1);
}

TEST(GrammarBounds, DeepParenthesesAreRefusedWithoutRecursion) {
  GrammarLimits limits;
  limits.max_text_bytes = 4 << 20;
  std::string deep = "root ::= ";
  deep.append(1 << 20, '(');
  deep += "\"a\"";
  deep.append(1 << 20, ')');
  Result<Grammar> g = ParseGbnf(deep, limits);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("max_nesting"), std::string::npos);
  limits.max_nesting = 1 << 21;  // even allowed, the parser's nesting is on the heap
  limits.max_rules = 1 << 21;
  limits.max_symbols = 1 << 22;
  g = ParseGbnf(deep, limits);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
}

// Appends "r<i> ::= r<i+1><after>\n"; piecewise, as GCC 12 warns (-Wrestrict)
// about chains of std::string operator+.
void AddChainRule(std::string& text, int i, const char* after) {
  text += 'r';
  text += std::to_string(i);
  text += " ::= r";
  text += std::to_string(i + 1);
  text += after;
  text += '\n';
}

std::string RuleChain(int n, const char* after) {
  std::string text = "root ::= r0\n";
  for (int i = 0; i < n; ++i) AddChainRule(text, i, after);
  text += 'r';
  text += std::to_string(n);
  text += " ::= \"x\"\n";
  return text;
}

TEST(GrammarBounds, LongRuleChains) {
  // Tail references push no frames: a 4000-rule chain matches.
  auto tail = test::Compile(RuleChain(4000, ""));
  EXPECT_TRUE(test::Matches(tail, "x"));
  // Non-tail references nest: deeper than max_depth is a clear error, not a crash.
  Result<Grammar> g = ParseGbnf(RuleChain(4000, " \"y\""));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(g).value());
  Result<GrammarMatcher> m = GrammarMatcher::Create(compiled);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("max_depth"), std::string::npos);
}

TEST(GrammarBounds, LongLeftRecursiveCycleIsFoundIteratively) {
  std::string text = "root ::= r0\n";
  for (int i = 0; i < 4000; ++i) AddChainRule(text, i, " \"a\"");
  text += "r4000 ::= root | \"b\"\n";
  Result<Grammar> g = ParseGbnf(text);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("left recursion"), std::string::npos);
}

TEST(GrammarBounds, AmbiguousPathsShareFrames) {
  // Forty optional pieces of one or two x (a JSON object's optional
  // properties look like this): the ways to split a run of x's grow
  // combinatorially, but the paths reach the same rule positions with equal
  // frames, which are shared, so the stacks stay few.
  std::string text = "root ::=";
  for (int i = 0; i < 40; ++i) text += " e";
  text += " \"z\"\ne ::= \"\" | \"x\" | \"xx\"\n";
  auto compiled = test::Compile(text);
  GrammarMatcher m = test::MakeMatcher(compiled);
  int accepted = 0;
  while (accepted < 100 && m.Accept('x')) ++accepted;
  EXPECT_EQ(accepted, 80);
  EXPECT_TRUE(m.Accept('z'));
  EXPECT_TRUE(m.CanEnd());
}

TEST(GrammarBounds, TooManyStacksIsAClearError) {
  // 2000 alternatives alive at once: more than max_stacks (1024).
  std::string text = "root ::= \"a\" x0";
  for (int i = 1; i < 2000; ++i) {
    text += " | \"a\" x";
    text += std::to_string(i);
  }
  text += '\n';
  for (int i = 0; i < 2000; ++i) {
    text += 'x';
    text += std::to_string(i);
    text += " ::= \"b\"\n";
  }
  auto compiled = test::Compile(text);
  const auto start = Clock::now();
  Result<GrammarMatcher> m = GrammarMatcher::Create(compiled);
  EXPECT_LT(SecondsSince(start), 1.0);
  // Either the start refuses (ResourceExhausted naming the limit) or, if the
  // 'a' alternatives share their first terminal, the step after it does.
  if (m.ok()) {
    EXPECT_FALSE(m->Accept('a'));
  } else {
    EXPECT_NE(m.status().message().find("max_stacks"), std::string::npos);
  }
}

TEST(GrammarBounds, NestedRepetitionsStayCheap) {
  auto compiled = test::Compile("root ::= c\na ::= \"x\"{1000}\nb ::= a{1000}\nc ::= b{1000}\n");
  GrammarMatcher m = test::MakeMatcher(compiled);
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(m.Accept('x'));
  EXPECT_FALSE(m.CanEnd());
  EXPECT_LE(m.frames().size(), 64u);
}

// Random texts over GBNF's alphabet, a mini fuzzer run in CTest: parse, and if
// the grammar is accepted, feed random bytes and compute masks.
TEST(GrammarBounds, RandomGrammarsNeverCrash) {
  std::mt19937 rng(1234);
  const std::string pieces[] = {"root", " ::= ", "a", "b", " ::= ", "\n", "\"x\"", "\"yz\"", "[a-c]", "[^x]",
                                ".", "(", ")", "|", "*", "+", "?", "{2}", "{1,3}", "{0,}", " ", "\"\"", "\\",
                                "\"\\u00e9\"", "#c\n"};
  std::vector<std::string> texts;
  std::vector<TokenClass> classes;
  for (const char* t : {"x", "y", "z", "yz", "a", "b", "c", "\xC3\xA9", "xx", "ab", "</s>"}) {
    texts.push_back(t);
    classes.push_back(TokenClass::kText);
  }
  classes.back() = TokenClass::kEog;
  auto trie = TokenTrie::Build(texts, classes);
  ASSERT_TRUE(trie.ok());
  TokenMasker masker;
  TokenMask mask;
  int parsed = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string text = iter % 2 == 0 ? "root ::= " : "";
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) text += pieces[rng() % std::size(pieces)];
    Result<Grammar> g = ParseGbnf(text);
    if (!g.ok()) continue;
    ++parsed;
    auto compiled = std::make_shared<CompiledGrammar>();
    compiled->grammar = std::make_shared<const Grammar>(std::move(g).value());
    compiled->trie = *trie;
    Result<GrammarMatcher> m = GrammarMatcher::Create(compiled);
    if (!m.ok()) continue;
    for (int step = 0; step < 8; ++step) {
      ASSERT_TRUE(masker.Compute(*m, mask).ok());
      (void)m->Accept(static_cast<uint8_t>("xyzabc\xC3\xA9"[rng() % 8]));
    }
  }
  EXPECT_GT(parsed, 300);
}

}  // namespace
}  // namespace valet
