// Byte-level BPE on hand-made vocabularies: merge order, the byte mapping,
// special tokens, decoding, and the factory's dispatch.
#include "tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace valet {
namespace {

// GPT-2's byte-to-unicode table, written from its definition.
std::string ByteText(int b) {
  const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
  char32_t cpt = static_cast<char32_t>(b);
  if (!printable) {
    cpt = 0x100;
    for (int x = 0; x < b; ++x) {
      if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) ++cpt;
    }
  }
  std::string s;
  AppendUtf8(cpt, s);
  return s;
}

// Tokens 0..255 are the 256 byte texts; `extra` follow from id 256.
VocabularyParts ByteLevelParts(std::vector<std::string> extra, std::vector<std::string> merges,
                               std::string pre = "gpt-2") {
  VocabularyParts parts;
  parts.model = "gpt2";
  parts.pre = std::move(pre);
  for (int b = 0; b < 256; ++b) parts.tokens.push_back(ByteText(b));
  for (std::string& t : extra) parts.tokens.push_back(std::move(t));
  parts.merges = std::move(merges);
  parts.add_bos = false;
  parts.add_space_prefix = false;
  return parts;
}

std::unique_ptr<Tokenizer> Make(VocabularyParts parts) {
  Result<Vocabulary> vocab = Vocabulary::FromParts(std::move(parts));
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  Result<std::unique_ptr<Tokenizer>> tok =
      Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

constexpr EncodeOptions kPlain{.add_bos = false, .add_eos = false, .parse_special = false};

TEST(BpeTokenizerTest, MergesApplyByRankNotPosition) {
  // "b c" outranks "a b", so "abc" becomes a + bc, then abc.
  auto tok = Make(ByteLevelParts({"ab", "bc", "abc"}, {"b c", "a b", "a bc"}));
  EXPECT_EQ(tok->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok->Encode("abc", kPlain), (std::vector<int32_t>{258}));
  EXPECT_EQ(tok->Encode("ab", kPlain), (std::vector<int32_t>{256}));
  EXPECT_EQ(tok->Encode("abab", kPlain), (std::vector<int32_t>{256, 256}));
  // Without "a bc", the early "b c" merge blocks "a b".
  auto partial = Make(ByteLevelParts({"ab", "bc"}, {"b c", "a b"}));
  EXPECT_EQ(partial->Encode("abc", kPlain), (std::vector<int32_t>{'a', 257}));
}

TEST(BpeTokenizerTest, EqualRanksMergeLeftmostFirst) {
  auto tok = Make(ByteLevelParts({"aa"}, {"a a"}));
  EXPECT_EQ(tok->Encode("aaa", kPlain), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(tok->Encode("aaaa", kPlain), (std::vector<int32_t>{256, 256}));
}

TEST(BpeTokenizerTest, SpacesAndBytesUseTheByteMapping) {
  const std::string space = ByteText(' ');  // "Ġ"
  auto tok = Make(ByteLevelParts({space + "a"}, {space + " a"}));
  EXPECT_EQ(tok->Encode("a a", kPlain), (std::vector<int32_t>{'a', 256}));
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{'a', 256}), "a a");
  // Every byte of a multi-byte character is one byte token when nothing merges.
  const std::string text = "\xC3\xA9\n\t\xE2\x82\xAC";  // é, newline, tab, €
  const std::vector<int32_t> ids = tok->Encode(text, kPlain);
  EXPECT_EQ(ids, (std::vector<int32_t>{0xC3, 0xA9, '\n', '\t', 0xE2, 0x82, 0xAC}));
  EXPECT_EQ(tok->Decode(ids), text);
}

TEST(BpeTokenizerTest, PreTokenizerWordsAreMergedSeparately) {
  // gpt-2 splits "ab ab" into "ab" and " ab"; no merge crosses the boundary.
  const std::string space = ByteText(' ');
  auto tok = Make(ByteLevelParts({"ab", "b" + space}, {"b " + space, "a b"}));
  EXPECT_EQ(tok->Encode("ab ab", kPlain), (std::vector<int32_t>{256, ' ', 256}));
}

TEST(BpeTokenizerTest, Llama3EmitsWholeWordTokensWithoutMerging) {
  // "abc" is a token no merge reaches; llama-bpe (ignore_merges) uses it directly.
  auto llama3 = Make(ByteLevelParts({"abc"}, {}, "llama-bpe"));
  EXPECT_EQ(llama3->Encode("abc", kPlain), (std::vector<int32_t>{256}));
  auto gpt2 = Make(ByteLevelParts({"abc"}, {}, "gpt-2"));
  EXPECT_EQ(gpt2->Encode("abc", kPlain), (std::vector<int32_t>{'a', 'b', 'c'}));
}

TEST(BpeTokenizerTest, SpecialTokensAreParsedOnlyWhenAsked) {
  VocabularyParts parts = ByteLevelParts({"<|im_start|>", "<|im_end|>", "<tool>"}, {});
  parts.types.assign(parts.tokens.size(), TokenType::kNormal);
  parts.types[256] = TokenType::kControl;
  parts.types[257] = TokenType::kControl;
  parts.types[258] = TokenType::kUserDefined;
  auto tok = Make(std::move(parts));
  EncodeOptions special = kPlain;
  special.parse_special = true;
  EXPECT_EQ(tok->Encode("<|im_start|>x<|im_end|>", special), (std::vector<int32_t>{256, 'x', 257}));
  const std::vector<int32_t> plain = tok->Encode("<|im_end|>", kPlain);
  EXPECT_EQ(plain.size(), std::string("<|im_end|>").size());
  EXPECT_EQ(tok->Decode(plain), "<|im_end|>");
  // User-defined tokens are always split out, as in llama.cpp.
  EXPECT_EQ(tok->Encode("a<tool>", kPlain), (std::vector<int32_t>{'a', 258}));
  // Control tokens decode to nothing unless asked for; user-defined ones to their text.
  EXPECT_EQ(tok->TokenToPiece(257), "");
  EXPECT_EQ(tok->TokenToPiece(257, {.unparse_special = true}), "<|im_end|>");
  EXPECT_EQ(tok->TokenToPiece(258), "<tool>");
  EXPECT_EQ(tok->TokenToPiece(-1), "");
  EXPECT_EQ(tok->TokenToPiece(100000), "");
}

// Control <|im_start|> (256), <|im_end|> (257), "aba" (259); user-defined <tool> (258).
std::unique_ptr<Tokenizer> MakeChatMl() {
  VocabularyParts parts = ByteLevelParts({"<|im_start|>", "<|im_end|>", "<tool>", "aba"}, {});
  parts.types.assign(parts.tokens.size(), TokenType::kNormal);
  parts.types[256] = TokenType::kControl;
  parts.types[257] = TokenType::kControl;
  parts.types[258] = TokenType::kUserDefined;
  parts.types[259] = TokenType::kControl;
  return Make(std::move(parts));
}

std::vector<int32_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

TEST(BpeTokenizerTest, LiteralRangesKeepControlTextsAsText) {
  auto tok = MakeChatMl();
  // Markup, then content "<|im_start|>x" at [12, 25), then markup.
  const std::string text = "<|im_start|><|im_start|>x<|im_end|>";
  const std::vector<ByteRange> content = {{12, 13}};
  EncodeOptions literal{.add_bos = false, .add_eos = false, .parse_special = true, .literal = content};
  std::vector<int32_t> expected = {256};
  for (int32_t b : Bytes("<|im_start|>x")) expected.push_back(b);
  expected.push_back(257);
  EXPECT_EQ(tok->Encode(text, literal), expected);
  // A range that only touches part of a control text still keeps all of it text.
  const std::vector<ByteRange> last_byte = {{34, 1}};
  literal.literal = last_byte;
  expected = {256, 256, 'x'};
  for (int32_t b : Bytes("<|im_end|>")) expected.push_back(b);
  EXPECT_EQ(tok->Encode(text, literal), expected);
  // Without special parsing the ranges change nothing.
  EXPECT_EQ(tok->Encode(text, {.add_bos = false, .add_eos = false, .parse_special = false, .literal = content}),
            tok->Encode(text, kPlain));
}

TEST(BpeTokenizerTest, LiteralRangesWithoutControlTextsChangeNothing) {
  auto tok = MakeChatMl();
  const std::string text = "<|im_start|>user\nhello<tool> there<|im_end|>\n";
  const std::vector<ByteRange> ranges = {{12, 5}, {17, 11}, {29, 5}};  // "user\n", "hello<tool>", "there"
  EncodeOptions special = kPlain;
  special.parse_special = true;
  EncodeOptions literal = special;
  literal.literal = ranges;
  const std::vector<int32_t> ids = tok->Encode(text, literal);
  EXPECT_EQ(ids, tok->Encode(text, special));
  // User-defined tokens are recognised inside ranges, as with parsing off.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 258), 1);
}

TEST(BpeTokenizerTest, AnOccurrenceInsideARefusedOneIsStillFound) {
  auto tok = MakeChatMl();
  // "ababa": "aba" at 0 overlaps the range and stays text; "aba" at 2 is free.
  const std::vector<ByteRange> first_byte = {{0, 1}};
  EXPECT_EQ(tok->Encode("ababa", {.add_bos = false, .add_eos = false, .parse_special = true, .literal = first_byte}),
            (std::vector<int32_t>{'a', 'b', 259}));
  EXPECT_EQ(tok->Encode("ababa", {.add_bos = false, .add_eos = false, .parse_special = true}),
            (std::vector<int32_t>{259, 'b', 'a'}));
}

TEST(BpeTokenizerTest, Phi3DropsWhitespaceAfterMostSpecialTokens) {
  VocabularyParts parts = ByteLevelParts({"<|user|>", "<|endoftext|>"}, {});
  parts.types.assign(parts.tokens.size(), TokenType::kNormal);
  parts.types[256] = TokenType::kControl;
  parts.types[257] = TokenType::kControl;
  VocabularyParts phi3 = parts;
  phi3.strip_after_special = true;
  EncodeOptions special = kPlain;
  special.parse_special = true;
  EXPECT_EQ(Make(std::move(phi3))->Encode("<|user|>\n x<|endoftext|> y", special),
            (std::vector<int32_t>{256, 'x', 257, ' ', 'y'}));
  EXPECT_EQ(Make(std::move(parts))->Encode("<|user|>\n x", special),
            (std::vector<int32_t>{256, '\n', ' ', 'x'}));
}

TEST(BpeTokenizerTest, BosIsAddedAndRemovedWhenTheVocabularySaysSo) {
  VocabularyParts parts = ByteLevelParts({"<|begin|>"}, {});
  parts.types.assign(parts.tokens.size(), TokenType::kNormal);
  parts.types[256] = TokenType::kControl;
  parts.bos_id = 256;
  parts.add_bos = true;
  auto tok = Make(std::move(parts));
  const std::vector<int32_t> ids = tok->Encode(" x");
  EXPECT_EQ(ids, (std::vector<int32_t>{256, ' ', 'x'}));
  // No space-prefix stripping: byte-level BPE decodes exactly.
  EXPECT_EQ(tok->Decode(ids, {.remove_special = true}), " x");
  EXPECT_EQ(tok->Decode(ids, {.unparse_special = true}), "<|begin|> x");
}

TEST(BpeTokenizerTest, EndOfGenerationTokensAreFoundByText) {
  VocabularyParts parts = ByteLevelParts({"<|endoftext|>", "<|im_end|>", "<|eom_id|>"}, {});
  parts.eos_id = 256;
  Result<Vocabulary> vocab = Vocabulary::FromParts(std::move(parts));
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->eog_ids().size(), 3u);
  for (int32_t id : {256, 257, 258}) {
    EXPECT_TRUE(vocab->IsEog(id)) << id;
    // Typed normal in the file, they become control tokens as in llama.cpp.
    EXPECT_EQ(vocab->Type(id), TokenType::kControl) << id;
  }
  EXPECT_FALSE(vocab->IsEog('a'));
  EXPECT_EQ(vocab->eom_id(), 258);
  EXPECT_NE(vocab->eot_id(), Vocabulary::kNoToken);
}

TEST(BpeTokenizerTest, UnknownModelsAndPreTokenizersAreUnsupported) {
  VocabularyParts parts = ByteLevelParts({}, {}, "klingon-bpe");
  Result<Vocabulary> vocab = Vocabulary::FromParts(std::move(parts));
  ASSERT_TRUE(vocab.ok());
  Result<std::unique_ptr<Tokenizer>> tok =
      Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
  EXPECT_EQ(tok.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(tok.status().message().find("klingon-bpe"), std::string::npos);
  EXPECT_EQ(Tokenizer::Create(nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(BpeTokenizerTest, LongInputsEncodeAndRoundTrip) {
  const std::string space = ByteText(' ');
  auto tok = Make(ByteLevelParts({"ab", space + space}, {"a b", space + " " + space}, "llama-bpe"));
  std::string text;
  for (int i = 0; i < 20000; ++i) text += (i % 7 == 0) ? "   " : "ab";
  const std::vector<int32_t> ids = tok->Encode(text, kPlain);
  EXPECT_LT(ids.size(), text.size());
  EXPECT_EQ(tok->Decode(ids), text);
}

}  // namespace
}  // namespace valet
