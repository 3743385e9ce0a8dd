// The trie-walk mask against a brute-force reference (for every token, copy
// the matcher and feed the token), on a synthetic vocabulary, on the real
// Qwen3, Llama 3 and Phi-3 vocabularies in ../shared and on Gemma 3's (262k,
// kept in tests/tokenizer/gemma3); its application to the
// logits before sampling; the compiled-grammar cache.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "constrain/grammar_cache.h"
#include "constrain/sequence_constraint.h"
#include "constrain/tool_call_gbnf.h"
#include "constrain/token_mask.h"
#include "constrain/token_trie.h"
#include "gguf/gguf_file.h"
#include "grammar_test_util.h"
#include "sampling/sampler.h"
#include "test_grammars.h"
#include "tokenizer/tokenizer.h"

namespace valet {
namespace {

using test::BruteForce;
using test::Compile;
using test::MakeMatcher;

// Walks `text` byte by byte and compares the two masks at each of `steps`
// evenly spread positions; returns how many tokens the masks allowed in all.
int64_t CompareAlong(const std::shared_ptr<const CompiledGrammar>& compiled, const std::string& text,
                     size_t steps) {
  GrammarMatcher m = MakeMatcher(compiled);
  TokenMasker masker;
  TokenMask mask;
  int64_t allowed = 0;
  const size_t stride = std::max<size_t>(1, text.size() / steps);
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i % stride == 0 || i == text.size()) {
      EXPECT_TRUE(masker.Compute(m, mask).ok());
      const TokenMask expected = BruteForce(m);
      for (int32_t id = 0; id < mask.size(); ++id) {
        if (mask.Allowed(id) != expected.Allowed(id)) {
          ADD_FAILURE() << "token " << id << " '" << compiled->trie->bytes(id) << "' after '" << text.substr(0, i)
                        << "': mask " << mask.Allowed(id) << ", brute force " << expected.Allowed(id);
          return allowed;
        }
      }
      allowed += mask.Count();
    }
    if (i < text.size()) {
      EXPECT_TRUE(m.Accept(static_cast<uint8_t>(text[i]))) << text.substr(0, i + 1);
    }
  }
  return allowed;
}

std::shared_ptr<const TokenTrie> SyntheticTrie() {
  std::vector<std::string> texts;
  std::vector<TokenClass> classes;
  for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"{", "{\"", "\":", "\": ", "\",", "}", "},", "}}", "[", "[]", "],", "true", "tru", "truex",
                        "false", "null", "nul", " ", "  ", "   ", "\n", "\n  ", "12", "1.5", "-0", "0.",
                        "e+", "\"a", "a\"", "abc", "\xC3\xA9", "\xC3", "\xA9\"", "\\u00", "\\n", "\xE6\x97\xA5",
                        "\"}", "ab", "ab", "{}"}) {
    texts.push_back(t);
    classes.resize(texts.size() - 1, TokenClass::kText);
  }
  classes.resize(texts.size(), TokenClass::kText);
  texts.push_back("");  // an empty piece: never allowed
  classes.push_back(TokenClass::kText);
  texts.push_back("</s>");
  classes.push_back(TokenClass::kEog);
  texts.push_back("<|special|>");
  classes.push_back(TokenClass::kSpecial);
  Result<std::shared_ptr<const TokenTrie>> trie = TokenTrie::Build(std::move(texts), std::move(classes));
  EXPECT_TRUE(trie.ok()) << trie.status().ToString();
  return *trie;
}

TEST(TokenMask, SyntheticVocabularyMatchesBruteForce) {
  auto trie = SyntheticTrie();
  auto json = Compile(test::kJsonGbnf, trie);
  for (const char* doc : {"{\"a\": [1.5, -0, true], \"b\": {\"c\": \"x\\u00e9\\n\xC3\xA9\xE6\x97\xA5\"}}",
                          "[[], {}, null, false, 12e+3]", "\"abc\""}) {
    CompareAlong(json, doc, 1000);
  }
  auto digits = Compile("root ::= [0-9]{1,3} \"ab\"", trie);
  CompareAlong(digits, "12ab", 10);
}

TEST(TokenMask, EndOfGenerationExactlyWhenTheGrammarCanEnd) {
  auto trie = SyntheticTrie();
  const int32_t eog = trie->vocab_size() - 2;
  const int32_t special = trie->vocab_size() - 1;
  const int32_t empty = trie->vocab_size() - 3;
  auto c = Compile("root ::= \"ab\" \"c\"?", trie);
  GrammarMatcher m = MakeMatcher(c);
  TokenMasker masker;
  TokenMask mask;
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_FALSE(mask.Allowed(eog));
  EXPECT_TRUE(mask.Allowed('a'));
  EXPECT_TRUE(mask.Allowed(trie->vocab_size() - 5 /* "ab" */));
  EXPECT_FALSE(m.AcceptToken(eog).ok());
  ASSERT_TRUE(m.AcceptToken('a').ok());
  ASSERT_TRUE(m.AcceptToken('b').ok());
  ASSERT_TRUE(masker.Compute(m, mask).ok());
  EXPECT_TRUE(mask.Allowed(eog));
  EXPECT_TRUE(mask.Allowed('c'));
  EXPECT_FALSE(mask.Allowed(special));
  EXPECT_FALSE(mask.Allowed(empty));
  EXPECT_EQ(mask.Count(), 2);
  EXPECT_FALSE(m.AcceptToken(special).ok());
  ASSERT_TRUE(m.AcceptToken(eog).ok());
  EXPECT_TRUE(m.finished());
  EXPECT_FALSE(masker.Compute(m, mask).ok());
  EXPECT_FALSE(m.AcceptToken('c').ok());
}

TEST(TokenMask, AppliedBeforeSamplingOnlyAllowedTokensAreDrawn) {
  auto trie = SyntheticTrie();
  auto json = Compile(test::kJsonGbnf, trie);
  GrammarMatcher m = MakeMatcher(json);
  TokenMasker masker;
  TokenMask mask;
  SamplingParams params;
  params.temperature = 1.0f;
  params.seed = 7;
  Result<Sampler> sampler = Sampler::Create(params, trie->vocab_size());
  ASSERT_TRUE(sampler.ok());
  std::string out;
  for (int step = 0; step < 200 && !m.finished(); ++step) {
    std::vector<float> logits(static_cast<size_t>(trie->vocab_size()));
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919 + step * 31) % 97) / 10.0f;
    ASSERT_TRUE(masker.Compute(m, mask).ok());
    ASSERT_TRUE(ApplyTokenMask(mask, logits).ok());
    const int32_t token = sampler->Sample(logits);
    ASSERT_TRUE(mask.Allowed(token)) << token;
    ASSERT_TRUE(m.AcceptToken(token).ok());
    if (!m.finished()) out += trie->bytes(token);
  }
  // Whatever was drawn is a prefix of JSON; if it ended, a whole document.
  EXPECT_TRUE(test::IsPrefix(json, out)) << out;
  if (m.finished()) {
    EXPECT_TRUE(test::Matches(json, out)) << out;
  }
}

TEST(TokenMask, ApplyRefusesMismatchesAndEmptyMasks) {
  TokenMask mask;
  mask.Reset(4, false);
  mask.Allow(2);
  std::vector<float> logits = {1, 2, 3, 4};
  ASSERT_TRUE(ApplyTokenMask(mask, logits).ok());
  EXPECT_TRUE(std::isinf(logits[0]) && logits[0] < 0);
  EXPECT_EQ(logits[2], 3.0f);
  EXPECT_TRUE(std::isinf(logits[3]));
  std::vector<float> wrong(5);
  EXPECT_FALSE(ApplyTokenMask(mask, wrong).ok());
  mask.Reset(4, false);
  EXPECT_FALSE(ApplyTokenMask(mask, logits).ok());
  mask.Reset(70, true);
  EXPECT_EQ(mask.Count(), 70);
}

TEST(GrammarCache, SharesCompiledGrammarsPerTextAndVocabulary) {
  auto trie_a = SyntheticTrie();
  auto trie_b = SyntheticTrie();
  GrammarCache cache(2);
  auto first = cache.GetGbnf("root ::= \"a\"", trie_a);
  ASSERT_TRUE(first.ok());
  auto again = cache.GetGbnf("root ::= \"a\"", trie_a);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->get(), again->get());
  auto other_vocab = cache.GetGbnf("root ::= \"a\"", trie_b);
  ASSERT_TRUE(other_vocab.ok());
  EXPECT_NE(first->get(), other_vocab->get());
  EXPECT_FALSE(cache.GetGbnf("root ::= nope", trie_a).ok());
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_TRUE(cache.GetGbnf("root ::= \"b\"", trie_a).ok());  // evicts the least recently used
  EXPECT_EQ(cache.size(), 2u);
  auto reparsed = cache.GetGbnf("root ::= \"a\"", trie_a);
  ASSERT_TRUE(reparsed.ok());
  EXPECT_NE(first->get(), reparsed->get());
  EXPECT_EQ((*first)->grammar->symbols.size(), (*reparsed)->grammar->symbols.size());
}

// A bare file name is one of ../shared/models; a path is taken as it is.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& model) {
  const std::filesystem::path path = model.find('/') != std::string::npos
                                         ? std::filesystem::path(model)
                                         : std::filesystem::path(VALET_SHARED_DIR) / "models" / model;
  if (!std::filesystem::exists(path)) return nullptr;
  Result<GgufFile> file = GgufFile::Open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  Result<Vocabulary> vocab = Vocabulary::FromGguf(*file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  if (!vocab.ok()) return nullptr;
  Result<std::unique_ptr<Tokenizer>> tok =
      Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

class RealVocabulary : public ::testing::TestWithParam<const char*> {};

TEST_P(RealVocabulary, MaskMatchesBruteForce) {
  std::unique_ptr<Tokenizer> tok = LoadTokenizer(GetParam());
  if (tok == nullptr) GTEST_SKIP() << GetParam() << " is absent (../shared/models)";
  Result<std::shared_ptr<const TokenTrie>> trie = TokenTrie::FromTokenizer(*tok);
  ASSERT_TRUE(trie.ok()) << trie.status().ToString();
  // Control tokens never appear in the trie; end-of-generation ones are known.
  EXPECT_FALSE((*trie)->eog_tokens().empty());
  auto json = Compile(test::kJsonGbnf, *trie);
  const int64_t allowed =
      CompareAlong(json, "{\"name\": \"Ada \xC3\xA9\\n\", \"n\": [1, -2.5e3, true, null], \"o\": {}}", 8);
  EXPECT_GT(allowed, 1000);  // inside a string most of the vocabulary fits
  auto word = Compile("root ::= [a-z]+ (\" \" [a-z]+){0,2} \".\"", *trie);
  CompareAlong(word, "hello big world.", 4);
}

// Qwen writes its call marker as one (user-defined) token: under "auto" it is
// allowed in free text and wakes the call grammar, whose arguments then
// follow the tool's schema; a marker typed in pieces does the same.
TEST(RealVocabularyToolCalls, QwensMarkerTokenStartsTheCall) {
  std::unique_ptr<Tokenizer> tok = LoadTokenizer("qwen3-q4_k_m.gguf");
  if (tok == nullptr) GTEST_SKIP() << "qwen3-q4_k_m.gguf is absent (../shared/models)";
  std::shared_ptr<const TokenTrie> trie = TokenTrie::FromTokenizer(*tok).value();
  ToolCallSpec spec;
  spec.syntax = {.call_prefix = "<tool_call>\n", .call_suffix = "\n</tool_call>", .separator = "\n"};
  spec.tools = {{"get_weather", ParseJson(R"({"type":"object","properties":{"city":{"enum":["Oslo"]}},)"
                                          R"("required":["city"],"additionalProperties":false})").value()}};
  spec.text_allowed = true;
  GrammarCache cache;
  std::shared_ptr<const CompiledGrammar> c = cache.Get({ConstraintKind::kToolCall, ToolCallSpecText(spec)}, trie).value();
  EncodeOptions plain;
  plain.add_bos = plain.add_eos = false;
  const std::vector<int32_t> marker = tok->Encode("<tool_call>", plain);
  ASSERT_EQ(marker.size(), 1u) << "Qwen's <tool_call> is one token";
  const std::vector<int32_t> call = tok->Encode("\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}\n</tool_call>", plain);
  for (const std::vector<int32_t>& start : {marker, tok->Encode("Let me look. <tool_", plain)}) {
    SequenceConstraint s = SequenceConstraint::Create(c).value();
    std::vector<int32_t> tokens = tok->Encode("It is", plain);
    tokens.insert(tokens.end(), start.begin(), start.end());
    if (start != marker) {
      const std::vector<int32_t> rest = tok->Encode("call>", plain);
      tokens.insert(tokens.end(), rest.begin(), rest.end());
    }
    for (int32_t t : tokens) {
      ASSERT_TRUE(s.PrepareMask().ok());
      ASSERT_TRUE(s.Allows(t)) << t;
      ASSERT_TRUE(s.Accept(t).ok());
    }
    ASSERT_TRUE(s.PrepareMask().ok());
    for (int32_t eog : trie->eog_tokens()) EXPECT_FALSE(s.Allows(eog)) << "inside the call";
    EXPECT_FALSE(s.Allows(tok->Encode("x", plain).front())) << "inside the call";
    for (int32_t t : call) {
      ASSERT_TRUE(s.PrepareMask().ok());
      ASSERT_TRUE(s.Allows(t)) << t;
      ASSERT_TRUE(s.Accept(t).ok());
    }
    ASSERT_TRUE(s.PrepareMask().ok());
    EXPECT_TRUE(s.Allows(trie->eog_tokens().front()));
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, RealVocabulary,
                         ::testing::Values("qwen3-q4_k_m.gguf", "llama3-bpe-q4_k_m.gguf", "phi3-q4_0.gguf",
                                           VALET_GEMMA3_VOCAB));

}  // namespace
}  // namespace valet
