// The hand-written pre-tokenizer expressions, on inputs whose splits follow
// from the regular expressions llama.cpp uses, and the generated Unicode classes.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/unicode.h"

namespace valet {
namespace {

std::vector<std::string> Words(PreTokenizerKind kind, std::string_view text) {
  const std::vector<char32_t> cpts = DecodeUtf8(text);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t length : PreTokenizer(kind).Split(cpts)) {
    std::string word;
    for (size_t i = start; i < start + length; ++i) AppendUtf8(cpts[i], word);
    words.push_back(word);
    start += length;
  }
  EXPECT_EQ(start, cpts.size());
  return words;
}

using W = std::vector<std::string>;

TEST(UnicodeTest, ClassesComeFromTheUnicodeData) {
  EXPECT_TRUE(IsLetter(U'a'));
  EXPECT_TRUE(IsLetter(U'é'));
  EXPECT_TRUE(IsLetter(U'中'));
  EXPECT_TRUE(IsNumber(U'7'));
  EXPECT_TRUE(IsNumber(U'\u0663'));  // ARABIC-INDIC DIGIT THREE
  EXPECT_TRUE(IsNumber(U'²'));
  EXPECT_TRUE(IsPunctuation(U'!'));
  EXPECT_TRUE(IsPunctuation(U'¿'));
  EXPECT_EQ(ClassOf(U'$'), CharClass::kOther);  // a symbol (Sc), not punctuation
  EXPECT_EQ(ClassOf(U'🙂'), CharClass::kOther);
  EXPECT_TRUE(IsWhitespace(U' '));
  EXPECT_TRUE(IsWhitespace(U'\u3000'));
  EXPECT_TRUE(IsWhitespace(U'\u0085'));
  EXPECT_FALSE(IsWhitespace(U'\u001C'));  // not White_Space, though Python's isspace says so
  EXPECT_FALSE(IsWhitespace(U'\u200B'));
}

TEST(UnicodeTest, Utf8DecodingReplacesMalformedBytes) {
  EXPECT_EQ(DecodeUtf8("a\xC3\xA9\xF0\x9F\x99\x82"), (std::vector<char32_t>{U'a', U'é', U'🙂'}));
  EXPECT_EQ(DecodeUtf8("\xC3(\xFF"), (std::vector<char32_t>{0xFFFD, U'(', 0xFFFD}));
  std::string out;
  for (char32_t c : {U'a', U'é', U'€', U'🙂'}) AppendUtf8(c, out);
  EXPECT_EQ(out, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x99\x82");
}

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_EQ(Words(PreTokenizerKind::kGpt2, "Hello world's  test\n"),
            (W{"Hello", " world", "'s", " ", " test", "\n"}));
  // Contractions are lower-case only; numbers and symbols take one optional space.
  EXPECT_EQ(Words(PreTokenizerKind::kGpt2, "I'M 2024 ?!"), (W{"I", "'", "M", " 2024", " ?!"}));
  // A single whitespace before a word that does not take it stands alone.
  EXPECT_EQ(Words(PreTokenizerKind::kGpt2, "a\tb"), (W{"a", "\t", "b"}));
}

TEST(PreTokenizerTest, Llama3) {
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "12345 x"), (W{"123", "45", " x"}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "I'M ok"), (W{"I", "'M", " ok"}));
  // \s*[\r\n]+ takes spaces up to the last newline; (?!\S) leaves one space to the word.
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "a \n\n  x"), (W{"a", " \n\n", " ", " x"}));
  // One non-letter, non-digit character may lead a word; symbols keep trailing newlines.
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "(foo) ...\n\nbar"),
            (W{"(foo", ")", " ...\n\n", "bar"}));
  EXPECT_EQ(Words(PreTokenizerKind::kLlama3, "   "), (W{"   "}));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, "x 123"), (W{"x", " ", "1", "2", "3"}));
}

TEST(PreTokenizerTest, StarcoderSplitsDigitsFirst) {
  // The digits are cut out first, so the look-ahead of \s+(?!\S) ends at them.
  EXPECT_EQ(Words(PreTokenizerKind::kStarcoder, "a  12"), (W{"a", "  ", "1", "2"}));
}

TEST(PreTokenizerTest, DeepseekCoder) {
  // "\s?\p{L}+" takes " 中文" whole; the later CJK expression cuts the space back off.
  EXPECT_EQ(Words(PreTokenizerKind::kDeepseekCoder,
                  "foo, \xE4\xB8\xAD\xE6\x96\x87"
                  "1\n"),
            (W{"foo", ",", " ", "\xE4\xB8\xAD\xE6\x96\x87", "1", "\n"}));
}

TEST(PreTokenizerTest, DeepseekLlm) {
  // Cased letters and ASCII punctuation runs take one leading space; trailing spaces stay together.
  EXPECT_EQ(Words(PreTokenizerKind::kDeepseekLlm, "Hi there!!  "), (W{"Hi", " there", "!!", "  "}));
  EXPECT_EQ(Words(PreTokenizerKind::kDeepseekLlm, "x 42"), (W{"x", " ", "42"}));
}

TEST(PreTokenizerTest, EmptyInputHasNoWords) {
  EXPECT_TRUE(Words(PreTokenizerKind::kLlama3, "").empty());
}

TEST(PreTokenizerTest, NamesMapAsInLlamaCpp) {
  Result<PreTokenizerInfo> llama3 = PreTokenizerForName("llama-bpe");
  ASSERT_TRUE(llama3.ok());
  EXPECT_EQ(llama3->kind, PreTokenizerKind::kLlama3);
  EXPECT_TRUE(llama3->ignore_merges);
  Result<PreTokenizerInfo> smaug = PreTokenizerForName("smaug-bpe");
  ASSERT_TRUE(smaug.ok());
  EXPECT_EQ(smaug->kind, PreTokenizerKind::kLlama3);
  EXPECT_FALSE(smaug->ignore_merges);
  EXPECT_EQ(PreTokenizerForName("qwen2")->kind, PreTokenizerKind::kQwen2);
  EXPECT_EQ(PreTokenizerForName("refact")->kind, PreTokenizerKind::kStarcoder);
  EXPECT_EQ(PreTokenizerForName("mpt")->kind, PreTokenizerKind::kGpt2);
  EXPECT_EQ(PreTokenizerForName("")->kind, PreTokenizerKind::kDefault);
  Result<PreTokenizerInfo> unknown = PreTokenizerForName("klingon-bpe");
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(unknown.status().message().find("klingon-bpe"), std::string::npos);
}

}  // namespace
}  // namespace valet
