// EncodeOptions::literal on the real vocabularies of ../shared: a range over
// all of the input is special-token parsing off, ranges without control texts
// change nothing, and content between two control tokens of markup tokenizes
// exactly as that content alone with parsing off (BPE pre-tokenizers and
// SentencePiece's space prefix included).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModels[] = {"llama3-bpe-q4_k_m.gguf", "qwen3-q4_k_m.gguf", "phi3-q4_0.gguf",
                                   "llama2-tiny-random.gguf", "stories260K.gguf"};

// Plain pieces: scripts, digits, whitespace runs, and fragments of special texts.
constexpr const char* kWords[] = {"hello",  " world", "\n",    "  ",  "\n\n", "123456", " ünïcödé", "日本語",
                                  "<",      "|>",     "[INST]", "<|", "im",   "'s",     " don't",   "\t x",
                                  "émoji 🙂", "ab  ", ">",     "</", "s>"};

constexpr int kCases = 150;

class LiteralRangesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const fs::path path = fs::path(VALET_SHARED_DIR) / "models" / GetParam();
    if (!fs::exists(path)) GTEST_SKIP() << "shared data absent: " << path.string();
    Result<GgufFile> file = GgufFile::Open(path.string());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    Result<Vocabulary> vocab = Vocabulary::FromGguf(*file);
    ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
    Result<std::unique_ptr<Tokenizer>> tok =
        Tokenizer::Create(std::make_shared<const Vocabulary>(std::move(vocab).value()));
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tok_ = std::move(tok).value();
    const Vocabulary& v = tok_->vocabulary();
    for (int32_t id : v.SplittingTokens()) {
      (v.Type(id) == TokenType::kUserDefined ? user_defined_ : control_).push_back(v.TokenText(id));
    }
    ASSERT_FALSE(control_.empty());
  }

  // Words, control texts and user-defined texts.
  std::string RandomText(std::mt19937& rng) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) {
      const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
      if (kind < 3) {
        text += control_[rng() % control_.size()];
      } else if (kind == 3 && !user_defined_.empty()) {
        text += user_defined_[rng() % user_defined_.size()];
      } else {
        text += kWords[rng() % std::size(kWords)];
      }
    }
    return text;
  }

  std::vector<int32_t> Encode(std::string_view text, bool parse, std::span<const ByteRange> literal = {}) const {
    return tok_->Encode(text, {.add_bos = false, .add_eos = false, .parse_special = parse, .literal = literal});
  }

  // A range over all of the input is parsing off.
  void ExpectAllLiteralIsParsingOff();
  // Ranges that no control text overlaps change nothing.
  void ExpectRangesWithoutControlTextsChangeNothing();
  // Content between two markup control tokens is that content alone, parsing off.
  void ExpectContentBetweenMarkupIsContentAlone();

  std::unique_ptr<Tokenizer> tok_;
  std::vector<std::string> control_;
  std::vector<std::string> user_defined_;
};

void LiteralRangesTest::ExpectAllLiteralIsParsingOff() {
  std::mt19937 rng(1);
  for (int i = 0; i < kCases; ++i) {
    const std::string text = RandomText(rng);
    const std::vector<ByteRange> all = {{0, text.size()}};
    EXPECT_EQ(Encode(text, true, all), Encode(text, false)) << text;
  }
}

void LiteralRangesTest::ExpectRangesWithoutControlTextsChangeNothing() {
  std::mt19937 rng(2);
  for (int i = 0; i < kCases; ++i) {
    const std::string text = RandomText(rng);
    // Every stretch no occurrence of a control text touches, one range each.
    std::vector<bool> covered(text.size(), false);
    for (const std::string& c : control_) {
      for (size_t at = text.find(c); at != std::string::npos; at = text.find(c, at + 1)) {
        std::fill(covered.begin() + static_cast<std::ptrdiff_t>(at),
                  covered.begin() + static_cast<std::ptrdiff_t>(at + c.size()), true);
      }
    }
    std::vector<ByteRange> free;
    for (size_t b = 0; b < text.size(); ++b) {
      if (covered[b]) continue;
      if (!free.empty() && free.back().end() == b) {
        ++free.back().length;
      } else {
        free.push_back({b, 1});
      }
    }
    EXPECT_EQ(Encode(text, true, free), Encode(text, true)) << text;
  }
}

void LiteralRangesTest::ExpectContentBetweenMarkupIsContentAlone() {
  const std::string& open = control_.front();  // the longest control text
  const std::string& close = control_.back();
  std::mt19937 rng(3);
  for (int i = 0; i < kCases; ++i) {
    const std::string head = RandomText(rng) + open;
    std::string content = RandomText(rng);
    // Phi-3 drops whitespace after a control token; content that starts with some is cut differently.
    if (content.find_first_not_of(" \t\n\r\v\f") != 0) content.insert(content.begin(), 'x');
    const std::string tail = close + RandomText(rng);
    const std::vector<ByteRange> literal = {{head.size(), content.size()}};
    std::vector<int32_t> expected = Encode(head, true);
    for (int32_t id : Encode(content, false)) expected.push_back(id);
    for (int32_t id : Encode(tail, true)) expected.push_back(id);
    EXPECT_EQ(Encode(head + content + tail, true, literal), expected) << head << content << tail;
  }
}

// One test per vocabulary: building it is the expensive part.
TEST_P(LiteralRangesTest, LiteralRangesAreParsingOffThereAndNothingElse) {
  ExpectAllLiteralIsParsingOff();
  ExpectRangesWithoutControlTextsChangeNothing();
  ExpectContentBetweenMarkupIsContentAlone();
}

INSTANTIATE_TEST_SUITE_P(SharedModels, LiteralRangesTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(0, name.find_first_of("-."));
                           return name;
                         });

}  // namespace
}  // namespace valet
