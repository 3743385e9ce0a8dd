// SpmTokenizer on small hand-made vocabularies whose expected segmentations
// are worked out by hand in the comments.
#include "tokenizer/spm_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace valet {
namespace {

constexpr const char* kSp = "\xE2\x96\x81";  // U+2581

struct Piece {
  std::string text;
  float score;
  TokenType type = TokenType::kNormal;
};

// <unk>=0, <s>=1, </s>=2, then (optionally) the 256 byte tokens, then `pieces`.
class VocabBuilder {
 public:
  explicit VocabBuilder(bool byte_fallback = true) {
    Add("<unk>", 0, TokenType::kUnknown);
    Add("<s>", 0, TokenType::kControl);
    Add("</s>", 0, TokenType::kControl);
    if (byte_fallback) {
      for (int b = 0; b < 256; ++b) {
        char text[8];
        std::snprintf(text, sizeof(text), "<0x%02X>", b);
        Add(text, 0, TokenType::kByte);
      }
    }
    parts_.unk_id = 0;
    parts_.bos_id = 1;
    parts_.eos_id = 2;
  }

  int32_t Add(const std::string& text, float score, TokenType type = TokenType::kNormal) {
    parts_.tokens.push_back(text);
    parts_.scores.push_back(score);
    parts_.types.push_back(type);
    return static_cast<int32_t>(parts_.tokens.size() - 1);
  }

  VocabularyParts& parts() { return parts_; }

  SpmTokenizer Build() {
    Result<Vocabulary> vocab = Vocabulary::FromParts(parts_);
    EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
    return SpmTokenizer(std::make_shared<const Vocabulary>(std::move(vocab).value()));
  }

 private:
  VocabularyParts parts_;
};

int32_t ByteId(uint8_t b) { return 3 + b; }

constexpr EncodeOptions kNoBos{.add_bos = false};

class SpmTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sp_ = builder_.Add(kSp, -1.0f);
    a_ = builder_.Add("a", -2.0f);
    b_ = builder_.Add("b", -2.0f);
    c_ = builder_.Add("c", -2.0f);
    ab_ = builder_.Add("ab", -0.5f);
    bc_ = builder_.Add("bc", -0.1f);
    sp_a_ = builder_.Add(std::string(kSp) + "a", -0.3f);
    abc_ = builder_.Add("abc", -0.2f);
    aa_ = builder_.Add("aa", -0.4f);
    e_acute_ = builder_.Add("\xC3\xA9", -3.0f);  // é
  }

  VocabBuilder builder_;
  int32_t sp_, a_, b_, c_, ab_, bc_, sp_a_, abc_, aa_, e_acute_;
};

TEST_F(SpmTokenizerTest, HighestScoreMergesFirst) {
  SpmTokenizer tok = builder_.Build();
  // "▁abc": candidates ▁a(-0.3) ab(-0.5) bc(-0.1): bc first, then a+bc=abc(-0.2)
  // beats ▁a(-0.3); "▁abc" is no token, so ▁ stays alone.
  EXPECT_EQ(tok.Encode("abc", kNoBos), (std::vector<int32_t>{sp_, abc_}));
}

TEST_F(SpmTokenizerTest, TiesGoToTheLeftmostPair) {
  builder_.parts().add_space_prefix = false;
  SpmTokenizer tok = builder_.Build();
  // "aaa": (0,1) and (1,2) both score -0.4; the left pair merges, "aaa" is no token.
  EXPECT_EQ(tok.Encode("aaa", kNoBos), (std::vector<int32_t>{aa_, a_}));
}

TEST_F(SpmTokenizerTest, SpacesBecomeMarkersAndEveryInputGetsAPrefix) {
  SpmTokenizer tok = builder_.Build();
  // " a" -> "▁▁a": "▁▁" is no token, "▁a" is.
  EXPECT_EQ(tok.Encode(" a", kNoBos), (std::vector<int32_t>{sp_, sp_a_}));
  // "a a" -> "▁a▁a".
  EXPECT_EQ(tok.Encode("a a", kNoBos), (std::vector<int32_t>{sp_a_, sp_a_}));
}

TEST_F(SpmTokenizerTest, NoSpacePrefixWhenTheVocabularySaysSo) {
  builder_.parts().add_space_prefix = false;
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("a b", kNoBos), (std::vector<int32_t>{a_, sp_, b_}));
}

TEST_F(SpmTokenizerTest, EmptyTextGivesOnlyBos) {
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode(""), (std::vector<int32_t>{1}));
  EXPECT_TRUE(tok.Encode("", kNoBos).empty());
}

TEST_F(SpmTokenizerTest, BosFollowsTheVocabularyFlag) {
  builder_.parts().add_bos = false;
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("a"), (std::vector<int32_t>{sp_a_}));
}

TEST_F(SpmTokenizerTest, EosWhenTheVocabularyAddsIt) {
  builder_.parts().add_eos = true;
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("a"), (std::vector<int32_t>{1, sp_a_, 2}));
  EXPECT_EQ(tok.Encode("a", {.add_bos = false, .add_eos = false}), (std::vector<int32_t>{sp_a_}));
}

TEST_F(SpmTokenizerTest, MissingPiecesFallBackToBytes) {
  SpmTokenizer tok = builder_.Build();
  // "z" is no token; the UTF-8 character "ü" (C3 BC) is none either.
  EXPECT_EQ(tok.Encode("z\xC3\xBC", kNoBos),
            (std::vector<int32_t>{sp_, ByteId('z'), ByteId(0xC3), ByteId(0xBC)}));
}

TEST_F(SpmTokenizerTest, MultibyteCharacterStaysWhole) {
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("\xC3\xA9", kNoBos), (std::vector<int32_t>{sp_, e_acute_}));
}

TEST_F(SpmTokenizerTest, TruncatedUtf8IsEncodedAsBytes) {
  SpmTokenizer tok = builder_.Build();
  // A lone lead byte at the end and a stray continuation byte.
  EXPECT_EQ(tok.Encode("a\xE2", kNoBos), (std::vector<int32_t>{sp_a_, ByteId(0xE2)}));
  EXPECT_EQ(tok.Encode("\xA9"
                       "a",
                       kNoBos),
            (std::vector<int32_t>{sp_, ByteId(0xA9), a_}));
}

// A lead byte announces its sequence length whatever follows, as in llama.cpp,
// so an invalid lead byte swallows the next bytes, an escaped space included.
TEST_F(SpmTokenizerTest, InvalidLeadByteSwallowsFollowingBytes) {
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("\xFF\xFE a", kNoBos),
            (std::vector<int32_t>{sp_, ByteId(0xFF), ByteId(0xFE), ByteId(0xE2), ByteId(0x96),
                                  ByteId(0x81), a_}));
}

TEST(SpmTokenizerNoBytesTest, UnknownCharacterBecomesOneUnk) {
  VocabBuilder builder(/*byte_fallback=*/false);
  const int32_t sp = builder.Add(kSp, -1.0f);
  const int32_t a = builder.Add("a", -1.0f);
  SpmTokenizer tok = builder.Build();
  EXPECT_EQ(tok.Encode("a\xC3\xBC"
                       "a",
                       kNoBos),
            (std::vector<int32_t>{sp, a, 0, a}));
}

TEST_F(SpmTokenizerTest, SpecialTextIsLiteralUnlessParsed) {
  SpmTokenizer tok = builder_.Build();
  const std::vector<int32_t> parsed =
      tok.Encode("a<s>a", {.add_bos = false, .parse_special = true});
  // Fragments "a", <s>, "a": each text fragment at the start or after a special
  // token gets the space prefix.
  EXPECT_EQ(parsed, (std::vector<int32_t>{sp_a_, 1, sp_a_}));
  const std::vector<int32_t> literal = tok.Encode("a<s>", kNoBos);
  EXPECT_EQ(literal, (std::vector<int32_t>{sp_a_, ByteId('<'), ByteId('s'), ByteId('>')}));
}

TEST_F(SpmTokenizerTest, LiteralSpecialTextJoinsTheTextAroundIt) {
  SpmTokenizer tok = builder_.Build();
  // "<s>" parsed, then content "a<s>a" whose "<s>" is literal: one text run
  // after a special token, so one space prefix, as if encoded on its own.
  const std::vector<ByteRange> content = {{4, 3}};
  const std::vector<int32_t> ids =
      tok.Encode("<s>a<s>a", {.add_bos = false, .parse_special = true, .literal = content});
  std::vector<int32_t> expected = {1};
  for (int32_t id : tok.Encode("a<s>a", kNoBos)) expected.push_back(id);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, sp_a_, ByteId('<'), ByteId('s'), ByteId('>'), a_}));
}

TEST_F(SpmTokenizerTest, SpecialTokenAloneAddsNoPrefixPiece) {
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("<s></s>", {.parse_special = true}), (std::vector<int32_t>{1, 1, 2}));
}

TEST_F(SpmTokenizerTest, UserDefinedTokensAreAlwaysSplitOut) {
  const int32_t tool = builder_.Add("<tool>", 0.0f, TokenType::kUserDefined);
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("a<tool>a", kNoBos), (std::vector<int32_t>{sp_a_, tool, sp_a_}));
}

TEST_F(SpmTokenizerTest, LongerSpecialTokenWins) {
  const int32_t start = builder_.Add("<s>x", 0.0f, TokenType::kControl);
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.Encode("<s>x<s>", {.add_bos = false, .parse_special = true}),
            (std::vector<int32_t>{start, 1}));
}

TEST_F(SpmTokenizerTest, TokenToPiece) {
  const int32_t tool = builder_.Add("<tool>", 0.0f, TokenType::kUserDefined);
  const int32_t unused = builder_.Add("zz", 0.0f, TokenType::kUnused);
  SpmTokenizer tok = builder_.Build();
  EXPECT_EQ(tok.TokenToPiece(sp_a_), " a");
  EXPECT_EQ(tok.TokenToPiece(ByteId(0x41)), "A");
  EXPECT_EQ(tok.TokenToPiece(ByteId(0xFF)), "\xFF");
  EXPECT_EQ(tok.TokenToPiece(1), "");
  EXPECT_EQ(tok.TokenToPiece(0), "");
  EXPECT_EQ(tok.TokenToPiece(1, {.unparse_special = true}), "<s>");
  EXPECT_EQ(tok.TokenToPiece(tool), "<tool>");
  EXPECT_EQ(tok.TokenToPiece(unused), "");
  EXPECT_EQ(tok.TokenToPiece(-1), "");
  EXPECT_EQ(tok.TokenToPiece(100000), "");
}

TEST_F(SpmTokenizerTest, DecodeStripsTheFirstPiecesSpace) {
  SpmTokenizer tok = builder_.Build();
  const std::vector<int32_t> plain{sp_a_, sp_a_};
  EXPECT_EQ(tok.Decode(plain), "a a");
  // A kept BOS is the first piece: its (empty) text takes the strip.
  const std::vector<int32_t> with_bos{1, sp_a_, sp_a_};
  EXPECT_EQ(tok.Decode(with_bos), " a a");
  // A removed BOS turns the strip off.
  EXPECT_EQ(tok.Decode(with_bos, {.remove_special = true}), " a a");
}

TEST_F(SpmTokenizerTest, DecodeKeepsSpacesWithoutPrefixFlag) {
  builder_.parts().add_space_prefix = false;
  SpmTokenizer tok = builder_.Build();
  const std::vector<int32_t> ids{sp_a_};
  EXPECT_EQ(tok.Decode(ids), " a");
}

TEST_F(SpmTokenizerTest, DecodeRemovesEosOnlyWhenTheVocabularyAddsIt) {
  SpmTokenizer tok = builder_.Build();
  const std::vector<int32_t> ids{a_, 2};
  EXPECT_EQ(tok.Decode(ids, {.remove_special = true, .unparse_special = true}), "a</s>");
  builder_.parts().add_eos = true;
  SpmTokenizer with_eos = builder_.Build();
  EXPECT_EQ(with_eos.Decode(ids, {.remove_special = true, .unparse_special = true}), "a");
}

TEST_F(SpmTokenizerTest, RoundTrip) {
  SpmTokenizer tok = builder_.Build();
  const std::vector<std::string> texts = {"abc",
                                          "a b  c",
                                          "  leading",
                                          "trailing ",
                                          "\xC3\xA9t\xC3\xA9",
                                          "tab\there\nnewline",
                                          "\xF0\x9F\x98\x80 emoji",
                                          "aaaaaaaaaaaaaaab",
                                          "<s> literal"};
  for (const std::string& text : texts) {
    EXPECT_EQ(tok.Decode(tok.Encode(text, kNoBos)), text) << text;
    EXPECT_EQ(tok.Decode(tok.Encode(text), {.remove_special = true}), " " + text) << text;
  }
}

TEST_F(SpmTokenizerTest, LongInputEncodesAndRoundTrips) {
  SpmTokenizer tok = builder_.Build();
  std::string text;
  for (int i = 0; i < 20000; ++i) text += (i % 7 == 0) ? "abc " : "ab\xC3\xA9 a";
  const std::vector<int32_t> ids = tok.Encode(text, kNoBos);
  EXPECT_EQ(tok.Decode(ids), text);
  // Every "abc" in the input should come out as one token.
  int abc_count = 0;
  for (int32_t id : ids) abc_count += id == abc_ ? 1 : 0;
  EXPECT_EQ(abc_count, 20000 / 7 + 1);
}

}  // namespace
}  // namespace valet
