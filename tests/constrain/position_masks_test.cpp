// The masks built from the per-position precomputation (position_masks.h)
// against the brute-force reference (copy the matcher, feed the token): on
// random grammars at random reachable states, with tokens that cross rule
// boundaries, under tight matcher limits, with the precomputation's bounds
// exhausted, and around the end of generation.
#include "constrain/position_masks.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "constrain/follow_sets.h"
#include "constrain/gbnf_parser.h"
#include "constrain/token_mask.h"
#include "constrain/token_trie.h"
#include "grammar_test_util.h"
#include "test_grammars.h"

namespace valet {
namespace {

using test::BruteForce;
using test::MakeMatcher;

constexpr char kAlphabet[] = "abc\" ,1";

// Every single byte, random strings over a small alphabet (so they cross rule
// boundaries), an end-of-generation and a special token.
std::shared_ptr<const TokenTrie> RandomTrie(std::mt19937& rng, int extra) {
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, static_cast<char>(b)));
  std::uniform_int_distribution<int> len(2, 8);
  std::uniform_int_distribution<int> pick(0, sizeof(kAlphabet) - 2);
  for (int i = 0; i < extra; ++i) {
    std::string t;
    for (int n = len(rng); n > 0; --n) t += kAlphabet[pick(rng)];
    texts.push_back(t);
  }
  std::vector<TokenClass> classes(texts.size(), TokenClass::kText);
  texts.push_back("</s>");
  classes.push_back(TokenClass::kEog);
  texts.push_back("<ctl>");
  classes.push_back(TokenClass::kSpecial);
  return *TokenTrie::Build(std::move(texts), std::move(classes));
}

std::string RandomItem(std::mt19937& rng, int rule, int rules) {
  std::uniform_int_distribution<int> kind(0, 9);
  std::string item;
  switch (kind(rng)) {
    case 0:
    case 1:
      item = "\"a\"";
      break;
    case 2:
      item = "\"bc\"";
      break;
    case 3:
      item = "[a-c1]";
      break;
    case 4:
      item = "\"\\\"\"";
      break;
    case 5:
      item = "(\" \" | \",\")";
      break;
    default: {  // a reference; later rules only, so no left recursion
      std::uniform_int_distribution<int> target(rule, rules - 1);
      const int t = target(rng);
      item = t == rule ? std::string("\"1\" r") : std::string("r");
      item += std::to_string(t);
    }
  }
  std::uniform_int_distribution<int> suffix(0, 7);
  std::uniform_int_distribution<int> count(0, 4);
  switch (suffix(rng)) {
    case 0:
      return item + "*";
    case 1:
      return item + "?";
    case 2:
      return item + "{1,2}";
    case 3: {  // counted repetitions: the loop's count decides tokens that run several iterations
      const int min = count(rng);
      return item + "{" + std::to_string(min) + "," + std::to_string(min + 1 + count(rng)) + "}";
    }
    case 4:
      return item + "{" + std::to_string(2 + count(rng)) + "}";
    default:
      return item;
  }
}

std::string RandomGrammar(std::mt19937& rng) {
  std::uniform_int_distribution<int> nrules(1, 5);
  std::uniform_int_distribution<int> nalts(1, 3);
  std::uniform_int_distribution<int> nitems(1, 3);
  const int rules = nrules(rng);
  std::string text;
  for (int r = 0; r < rules; ++r) {
    text += "r";
    text += std::to_string(r);
    text += " ::= ";
    for (int a = nalts(rng); a > 0; --a) {
      for (int i = nitems(rng); i > 0; --i) text += RandomItem(rng, r, rules) + " ";
      if (a > 1) text += "| ";
    }
    text += "\n";
  }
  // r0 is the root: references to it are spelled "root".
  size_t at = 0;
  while ((at = text.find("r0", at)) != std::string::npos) text.replace(at, 2, "root");
  return text;
}

// Compares the masker with the reference along a random generation: each step
// takes a random allowed token. Returns false on the first difference.
bool CompareRandomWalk(const std::shared_ptr<const CompiledGrammar>& compiled, std::mt19937& rng,
                       int steps, TokenMasker& masker, const std::string& label) {
  GrammarMatcher m = MakeMatcher(compiled);
  TokenMask mask;
  std::string so_far;
  for (int step = 0; step < steps && !m.finished(); ++step) {
    EXPECT_TRUE(masker.Compute(m, mask).ok());
    const TokenMask expected = BruteForce(m);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < mask.size(); ++id) {
      if (mask.Allowed(id) != expected.Allowed(id)) {
        ADD_FAILURE() << label << "\ntoken " << id << " '" << compiled->trie->bytes(id)
                      << "' after '" << so_far << "': mask " << mask.Allowed(id) << ", brute force "
                      << expected.Allowed(id);
        return false;
      }
      if (expected.Allowed(id)) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    const int32_t token =
        allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    EXPECT_TRUE(m.AcceptToken(token).ok());
    if (!m.finished()) so_far += compiled->trie->bytes(token);
  }
  return true;
}

std::shared_ptr<const CompiledGrammar> CompileWith(const std::string& gbnf,
                                                   std::shared_ptr<const TokenTrie> trie,
                                                   MatcherLimits limits,
                                                   PositionMaskLimits bounds = {}) {
  Result<Grammar> g = ParseGbnf(gbnf);
  if (!g.ok()) return nullptr;
  auto compiled = std::make_shared<CompiledGrammar>();
  compiled->grammar = std::make_shared<const Grammar>(std::move(g).value());
  compiled->trie = std::move(trie);
  compiled->limits = limits;
  if (!GrammarMatcher::Create(compiled).ok()) return nullptr;
  PrecomputePositionMasks(*compiled, bounds);
  return compiled;
}

TEST(PositionMasks, RandomGrammarsMatchBruteForce) {
  std::mt19937 rng(41);
  uint64_t from_positions = 0;
  int grammars = 0;
  for (int round = 0; round < 300; ++round) {
    auto trie = RandomTrie(rng, 60);
    const std::string text = RandomGrammar(rng);
    auto compiled = CompileWith(text, trie, MatcherLimits{});
    if (compiled == nullptr) continue;
    ++grammars;
    ASSERT_NE(compiled->positions, nullptr);
    TokenMasker masker;
    if (!CompareRandomWalk(compiled, rng, 12, masker, text)) return;
    from_positions += masker.counts().from_positions;
  }
  EXPECT_GT(grammars, 100);
  EXPECT_GT(from_positions, 500u);  // the precomputed path, not the walk, made most masks
}

TEST(PositionMasks, TightMatcherLimitsMatchBruteForce) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    auto trie = RandomTrie(rng, 40);
    const std::string text = RandomGrammar(rng);
    MatcherLimits limits;
    limits.max_stacks = 1 + rng() % 6;
    limits.max_depth = 1 + rng() % 6;
    limits.max_expansions = 1 + rng() % 40;
    auto compiled = CompileWith(text, trie, limits);
    if (compiled == nullptr) continue;
    TokenMasker masker(0);
    if (!CompareRandomWalk(compiled, rng, 10, masker, text)) return;
  }
}

TEST(PositionMasks, ExhaustedBoundsFallBackToTheWalk) {
  std::mt19937 rng(3);
  auto trie = RandomTrie(rng, 50);
  PositionMaskLimits bounds;
  bounds.max_steps = 200;  // a few positions at most
  auto compiled = CompileWith(test::kJsonGbnf, trie, MatcherLimits{}, bounds);
  ASSERT_NE(compiled, nullptr);
  EXPECT_LT(compiled->positions->entries(), compiled->positions->positions());
  EXPECT_LE(compiled->positions->steps(), 200u);
  TokenMasker masker(0);
  ASSERT_TRUE(CompareRandomWalk(compiled, rng, 30, masker, "json"));
  EXPECT_GT(masker.counts().walked, 0u);

  bounds = PositionMaskLimits{};
  bounds.max_bytes = 1;  // the first entry only
  compiled = CompileWith(test::kJsonGbnf, trie, MatcherLimits{}, bounds);
  EXPECT_EQ(compiled->positions->entries(), 1u);
  ASSERT_TRUE(CompareRandomWalk(compiled, rng, 30, masker, "json"));
}

// Grammars built to make the precomputation expensive: as many positions as
// the grammar limits allow, ambiguity that multiplies expansions per byte,
// deep nesting. The work stays within the budget and the masks exact.
TEST(PositionMasks, HostileGrammarsStayWithinTheBudget) {
  std::mt19937 rng(17);
  auto trie = RandomTrie(rng, 4000);
  std::string many = "root ::= ";
  for (int r = 0; r < 30; ++r) many += "(\"a\" [a-c]{0,100} \"b\")? ";
  std::string ambiguous = "root ::= x*\nx ::= ";
  for (int a = 0; a < 60; ++a) {
    ambiguous += a == 0 ? "" : "| ";
    for (int k = 0; k <= a % 3; ++k) ambiguous += "y ";
  }
  ambiguous += "\ny ::= [a-c] | [a-c] [a-c]? | \"\\\"\"";
  const std::string deep = "root ::= \"a\" root? \"b\" | [a-c]+ | \"1\"";
  for (const std::string& text : {many, ambiguous, deep}) {
    SCOPED_TRACE(text.substr(0, 80));
    for (uint64_t budget : {uint64_t{1} << 16, PositionMaskLimits{}.max_steps}) {
      PositionMaskLimits bounds;
      bounds.max_steps = budget;
      auto compiled = CompileWith(text, trie, MatcherLimits{}, bounds);
      ASSERT_NE(compiled, nullptr);
      EXPECT_LE(compiled->positions->steps(), budget);
      EXPECT_LE(compiled->positions->memory_bytes(),
                bounds.max_bytes + 2 * compiled->grammar->symbols.size() * sizeof(int32_t) +
                    sizeof(uint64_t) * static_cast<size_t>(trie->vocab_size()));
      TokenMasker masker;
      ASSERT_TRUE(CompareRandomWalk(compiled, rng, 4, masker, text.substr(0, 80)));
    }
  }
}

std::shared_ptr<const TokenTrie> WordTrie(const std::vector<std::string>& words) {
  std::vector<std::string> texts;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, static_cast<char>(b)));
  texts.insert(texts.end(), words.begin(), words.end());
  std::vector<TokenClass> classes(texts.size(), TokenClass::kText);
  texts.push_back("</s>");
  classes.push_back(TokenClass::kEog);
  return *TokenTrie::Build(std::move(texts), std::move(classes));
}

int32_t Id(const TokenTrie& trie, const std::string& text) {
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    if (trie.token_class(id) == TokenClass::kText && trie.bytes(id) == text) return id;
  }
  return -1;
}

// Tokens that leave the rule they start in: the escape frame makes them
// context-dependent, and the real stacks decide them.
TEST(PositionMasks, TokensCrossingRuleBoundariesAreDecidedByTheContext) {
  auto trie = WordTrie({"x1", "1,", "1,x", "1]", "x1,x2", ",x", "]"});
  auto compiled = test::Compile(
      "root ::= \"[\" item (\",\" item)* \"]\" | \"(\" item \")\"\nitem ::= \"x\" [0-9]+", trie);
  const PositionMask* digit = nullptr;
  for (uint32_t pos = 0; pos < compiled->grammar->symbols.size(); ++pos) {
    const PositionMask* e = compiled->positions->Find(pos);
    if (e != nullptr && !e->dependent.empty()) digit = e;
  }
  ASSERT_NE(digit, nullptr);  // some position has context-dependent tokens
  GrammarMatcher m = MakeMatcher(compiled);
  ASSERT_TRUE(m.AcceptBytes("[x"));
  TokenMasker masker;
  TokenMask mask;
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_EQ(masker.counts().from_positions, 1u);
  EXPECT_TRUE(mask.Allowed(Id(*trie, "1,")));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "1,x")));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "1]")));
  EXPECT_FALSE(mask.Allowed(Id(*trie, "x1")));
  GrammarMatcher paren = MakeMatcher(compiled);
  ASSERT_TRUE(paren.AcceptBytes("(x"));
  ASSERT_TRUE(masker.Compute(paren, mask).ok());
  EXPECT_FALSE(mask.Allowed(Id(*trie, "1,")));  // the same item position, another context
  EXPECT_FALSE(mask.Allowed(Id(*trie, "1]")));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "1")));
  EXPECT_EQ(masker.counts().walked, 0u);
  std::mt19937 rng(5);
  ASSERT_TRUE(CompareRandomWalk(compiled, rng, 20, masker, "items"));
}

// Loops of several bounds over one character rule share its entries, which
// leave to the real count the tokens that go through several iterations: each
// mask along the strings comes from the positions and equals brute force.
TEST(PositionMasks, CountedLoopsDecideTokensByTheRealCount) {
  auto trie = WordTrie({"a", "ab", "abc", "abcd", "bcdab", "a\"", "ab\",", "\"", "\",\"", ","});
  auto compiled = test::Compile(
      "root ::= \"\\\"\" c{0,3} \"\\\",\\\"\" c{2,5} \"\\\"\"\nc ::= [a-d]", trie);
  const PositionMask* loop = nullptr;
  for (uint32_t pos = 0; pos < compiled->grammar->symbols.size(); ++pos) {
    const PositionMask* e = compiled->positions->Find(pos);
    if (e != nullptr && e->counted) loop = e;
  }
  ASSERT_NE(loop, nullptr);
  EXPECT_FALSE(loop->counted_ids.empty());  // "abc" needs three iterations
  GrammarMatcher m = MakeMatcher(compiled);
  ASSERT_TRUE(m.AcceptBytes("\"ab"));
  TokenMasker masker(0);
  TokenMask mask;
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_TRUE(mask.Allowed(Id(*trie, "a")));   // the third character
  EXPECT_FALSE(mask.Allowed(Id(*trie, "ab")));  // a fourth: past {0,3}
  EXPECT_TRUE(mask.Allowed(Id(*trie, "a\"")));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "\",\"")));
  GrammarMatcher second = MakeMatcher(compiled);
  ASSERT_TRUE(second.AcceptBytes("\"\",\"a"));
  ASSERT_TRUE(masker.Compute(second, mask).ok());
  EXPECT_TRUE(mask.Allowed(Id(*trie, "abcd")));   // five in all
  EXPECT_FALSE(mask.Allowed(Id(*trie, "bcdab")));  // six
  EXPECT_FALSE(mask.Allowed(Id(*trie, "\"")));      // one, short of {2,5}
  EXPECT_EQ(masker.counts().walked, 0u);
  std::mt19937 rng(9);
  for (int walk = 0; walk < 40; ++walk) ASSERT_TRUE(CompareRandomWalk(compiled, rng, 12, masker, "loops"));
  EXPECT_EQ(masker.counts().walked, 0u);
}

std::string Bytes(const ByteSet& set) {
  std::string out;
  for (int b = 0; b < 256; ++b) {
    if (set.Has(static_cast<uint8_t>(b))) out += static_cast<char>(b);
  }
  return out;
}

uint32_t RuleNamed(const Grammar& g, const std::string& name) {
  for (uint32_t r = 0; r < g.rule_count(); ++r) {
    if (g.rule_names[r] == name) return r;
  }
  return g.rule_count();
}

// What may follow a rule: after each reference, through rules whose rest can
// be empty, another iteration inside a loop, and nothing after the root.
TEST(PositionMasks, FollowSetsSeeThroughEveryReference) {
  Result<Grammar> g = ParseGbnf(
      "root ::= \"(\" list \")\" end\n"
      "list ::= item (\",\" item)*\n"
      "item ::= [a-c]{1,3} tail?\n"
      "tail ::= \"!\"\n"
      "end ::= \";\"?");
  ASSERT_TRUE(g.ok()) << g.status().message();
  uint64_t budget = 1u << 20;
  const FollowSets follow = FollowSets::Compute(*g, budget);
  EXPECT_EQ(Bytes(follow.AfterRule(RuleNamed(*g, "item"))), "),");
  EXPECT_EQ(Bytes(follow.AfterRule(RuleNamed(*g, "tail"))), "),");
  EXPECT_EQ(Bytes(follow.AfterRule(RuleNamed(*g, "list"))), ")");
  EXPECT_EQ(Bytes(follow.AfterRule(RuleNamed(*g, "end"))), "");
  EXPECT_EQ(Bytes(follow.AfterRule(RuleNamed(*g, "root"))), "");
  uint64_t none = 0;  // out of budget: every byte, which is always safe
  EXPECT_EQ(Bytes(FollowSets::Compute(*g, none).AfterRule(RuleNamed(*g, "end"))).size(), 256u);
}

TEST(PositionMasks, EndOfGenerationWithRootedPositions) {
  auto trie = WordTrie({"ab", "abc", "bc", "cc"});
  auto compiled = test::Compile("root ::= \"a\" \"b\" \"c\"*", trie);
  const int32_t eog = trie->vocab_size() - 1;
  GrammarMatcher m = MakeMatcher(compiled);
  TokenMasker masker;
  TokenMask mask;
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_FALSE(mask.Allowed(eog));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "abc")));
  ASSERT_TRUE(m.AcceptToken(Id(*trie, "ab")).ok());
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_TRUE(mask.Allowed(eog));
  EXPECT_TRUE(mask.Allowed(Id(*trie, "cc")));
  EXPECT_FALSE(mask.Allowed(Id(*trie, "bc")));
  EXPECT_EQ(mask.Count(), 3);  // "c", "cc" and the end
  EXPECT_EQ(masker.counts().walked, 0u);
  ASSERT_TRUE(m.AcceptToken(eog).ok());
  EXPECT_FALSE(masker.Compute(m, mask).ok());
}

TEST(PositionMasks, JsonIsCoveredWithinBounds) {
  std::mt19937 rng(11);
  auto trie = RandomTrie(rng, 200);
  auto compiled = test::Compile(test::kJsonGbnf, trie);
  const PositionMasks& positions = *compiled->positions;
  EXPECT_EQ(positions.entries(), positions.positions());
  EXPECT_GT(positions.memory_bytes(), 0u);
  EXPECT_LE(positions.memory_bytes(), PositionMaskLimits{}.max_bytes);
  TokenMasker masker;
  ASSERT_TRUE(CompareRandomWalk(compiled, rng, 60, masker, "json"));
  EXPECT_EQ(masker.counts().walked, 0u);
}

}  // namespace
}  // namespace valet
