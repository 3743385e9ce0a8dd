#include "tokenizer/vocabulary.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "testing/gguf/gguf_writer.h"

namespace valet {
using namespace valet::testing;
namespace {

VocabularyParts SmallParts() {
  VocabularyParts parts;
  parts.tokens = {"<unk>",
                  "<s>",
                  "</s>",
                  "<0x41>",
                  "a",
                  "\xE2\x96\x81"
                  "a",
                  "<extra>",
                  "a"};
  parts.scores = {0, 0, 0, 0, -1, -2, 0, -3};
  parts.types = {TokenType::kUnknown,     TokenType::kControl, TokenType::kControl,
                 TokenType::kByte,        TokenType::kNormal,  TokenType::kNormal,
                 TokenType::kUserDefined, TokenType::kNormal};
  parts.unk_id = 0;
  parts.bos_id = 1;
  parts.eos_id = 2;
  return parts;
}

TEST(VocabularyTest, FromPartsKeepsEverything) {
  Result<Vocabulary> vocab = Vocabulary::FromParts(SmallParts());
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->size(), 8);
  EXPECT_EQ(vocab->model(), "llama");
  EXPECT_EQ(vocab->TokenText(5),
            "\xE2\x96\x81"
            "a");
  EXPECT_FLOAT_EQ(vocab->Score(5), -2.0f);
  EXPECT_EQ(vocab->Type(6), TokenType::kUserDefined);
  EXPECT_EQ(vocab->ByteValue(3), 0x41);
  EXPECT_EQ(vocab->bos_id(), 1);
  EXPECT_EQ(vocab->eos_id(), 2);
  EXPECT_EQ(vocab->unk_id(), 0);
  EXPECT_EQ(vocab->pad_id(), Vocabulary::kNoToken);
  EXPECT_TRUE(vocab->add_bos());
  EXPECT_FALSE(vocab->add_eos());
  EXPECT_TRUE(vocab->add_space_prefix());
}

TEST(VocabularyTest, LookupPrefersTheLastDuplicate) {
  Result<Vocabulary> vocab = Vocabulary::FromParts(SmallParts());
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->Lookup("a"), 7);
  EXPECT_EQ(vocab->Lookup("<s>"), 1);
  EXPECT_EQ(vocab->Lookup("missing"), Vocabulary::kNoToken);
  EXPECT_EQ(vocab->Lookup(""), Vocabulary::kNoToken);
}

TEST(VocabularyTest, ByteTokensPreferHexFormThenRawByte) {
  Result<Vocabulary> vocab = Vocabulary::FromParts(SmallParts());
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->ByteToken('A'), 3);
  EXPECT_EQ(vocab->ByteToken('a'), 7);  // no <0x61>: the token "a" stands in
  EXPECT_EQ(vocab->ByteToken('b'), Vocabulary::kNoToken);
}

TEST(VocabularyTest, SplittingTokensAreLongestFirst) {
  Result<Vocabulary> vocab = Vocabulary::FromParts(SmallParts());
  ASSERT_TRUE(vocab.ok());
  const std::vector<int32_t> got(vocab->SplittingTokens().begin(), vocab->SplittingTokens().end());
  EXPECT_EQ(got, (std::vector<int32_t>{6, 0, 2, 1}));
}

TEST(VocabularyTest, MissingScoresAndTypesDefault) {
  VocabularyParts parts;
  parts.tokens = {"x", "y"};
  Result<Vocabulary> vocab = Vocabulary::FromParts(parts);
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(vocab->Type(1), TokenType::kNormal);
  EXPECT_FLOAT_EQ(vocab->Score(1), 0.0f);
}

TEST(VocabularyTest, RejectsMismatchedArrays) {
  VocabularyParts parts = SmallParts();
  parts.scores.pop_back();
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
  parts = SmallParts();
  parts.types.push_back(TokenType::kNormal);
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
}

TEST(VocabularyTest, RejectsBadIdsAndTypes) {
  VocabularyParts parts = SmallParts();
  parts.bos_id = 8;
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
  parts = SmallParts();
  parts.pad_id = -2;
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
  parts = SmallParts();
  parts.types[4] = static_cast<TokenType>(9);
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
  parts = SmallParts();
  parts.types[4] = TokenType::kByte;  // "a" is not <0xNN>
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
  parts = SmallParts();
  parts.tokens.clear();
  parts.scores.clear();
  parts.types.clear();
  parts.bos_id = parts.eos_id = parts.unk_id = -1;
  EXPECT_EQ(Vocabulary::FromParts(parts).status().code(), StatusCode::kCorrupt);
}

TEST(VocabularyTest, OtherModelsAreUnsupported) {
  VocabularyParts parts = SmallParts();
  parts.model = "bert";
  Result<Vocabulary> vocab = Vocabulary::FromParts(parts);
  EXPECT_EQ(vocab.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(vocab.status().message().find("bert"), std::string::npos);
}

// --- FromGguf, over files built in memory ---

GgufWriter WriterFor(const VocabularyParts& parts) {
  GgufWriter w;
  w.SetString("tokenizer.ggml.model", parts.model);
  w.SetArray("tokenizer.ggml.tokens",
             GgufArray::OfStrings(std::span<const std::string>(parts.tokens)));
  w.SetArray("tokenizer.ggml.scores", GgufArray::Of(std::span<const float>(parts.scores)));
  std::vector<int32_t> types;
  for (TokenType t : parts.types) types.push_back(static_cast<int32_t>(t));
  w.SetArray("tokenizer.ggml.token_type", GgufArray::Of(std::span<const int32_t>(types)));
  return w;
}

Result<Vocabulary> LoadFrom(const GgufWriter& w) {
  Result<GgufFile> file = GgufFile::FromBuffer(w.Serialize(), "test.gguf");
  if (!file.ok()) return file.status();
  return Vocabulary::FromGguf(*file);
}

TEST(VocabularyGgufTest, DefaultsFollowLlamaCpp) {
  Result<Vocabulary> vocab = LoadFrom(WriterFor(SmallParts()));
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->size(), 8);
  EXPECT_EQ(vocab->bos_id(), 1);
  EXPECT_EQ(vocab->eos_id(), 2);
  EXPECT_EQ(vocab->unk_id(), 0);
  EXPECT_EQ(vocab->pad_id(), Vocabulary::kNoToken);
  EXPECT_TRUE(vocab->add_bos());
  EXPECT_FALSE(vocab->add_eos());
  EXPECT_TRUE(vocab->add_space_prefix());
  EXPECT_FLOAT_EQ(vocab->Score(7), -3.0f);
  EXPECT_EQ(vocab->Type(3), TokenType::kByte);
}

TEST(VocabularyGgufTest, ReadsKeysAndNoneSentinels) {
  GgufWriter w = WriterFor(SmallParts());
  w.SetUint32("tokenizer.ggml.bos_token_id", 2);
  w.SetUint32("tokenizer.ggml.eos_token_id", 1);
  w.SetUint32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.SetInt32("tokenizer.ggml.unknown_token_id", -1);
  w.SetBool("tokenizer.ggml.add_bos_token", false);
  w.SetBool("tokenizer.ggml.add_eos_token", true);
  w.SetBool("tokenizer.ggml.add_space_prefix", false);
  Result<Vocabulary> vocab = LoadFrom(w);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->bos_id(), 2);
  EXPECT_EQ(vocab->eos_id(), 1);
  EXPECT_EQ(vocab->pad_id(), Vocabulary::kNoToken);
  EXPECT_EQ(vocab->unk_id(), Vocabulary::kNoToken);
  EXPECT_FALSE(vocab->add_bos());
  EXPECT_TRUE(vocab->add_eos());
  EXPECT_FALSE(vocab->add_space_prefix());
}

TEST(VocabularyGgufTest, RejectsOutOfRangeIdAndBadFlagType) {
  GgufWriter w = WriterFor(SmallParts());
  w.SetUint32("tokenizer.ggml.bos_token_id", 8);
  EXPECT_EQ(LoadFrom(w).status().code(), StatusCode::kCorrupt);
  GgufWriter w2 = WriterFor(SmallParts());
  w2.SetString("tokenizer.ggml.add_bos_token", "yes");
  EXPECT_FALSE(LoadFrom(w2).ok());
}

TEST(VocabularyGgufTest, RejectsMismatchedArrayLengths) {
  VocabularyParts parts = SmallParts();
  GgufWriter w = WriterFor(parts);
  parts.scores.pop_back();
  w.SetArray("tokenizer.ggml.scores", GgufArray::Of(std::span<const float>(parts.scores)));
  Result<Vocabulary> vocab = LoadFrom(w);
  EXPECT_EQ(vocab.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(vocab.status().message().find("test.gguf"), std::string::npos);
}

TEST(VocabularyGgufTest, UnknownModelIsUnsupported) {
  VocabularyParts parts = SmallParts();
  parts.model = "bert";
  Result<Vocabulary> vocab = LoadFrom(WriterFor(parts));
  EXPECT_EQ(vocab.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(vocab.status().message().find("BPE"), std::string::npos);
}

TEST(VocabularyGgufTest, MissingModelKeyIsNotFound) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  EXPECT_EQ(LoadFrom(w).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace valet
