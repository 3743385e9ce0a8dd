// The tokenizers against reference data made with llama.cpp (../shared): the
// tokenizer test vectors of every vocabulary and the prompts of every golden file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/json.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

const fs::path kShared = VALET_SHARED_DIR;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Inputs are separated by lines "__ggml_vocab_test__"; an input's own final
// newline belongs to the separator (llama.cpp's harness strips it).
std::vector<std::string> ReadVocabInputs(const fs::path& path) {
  std::vector<std::string> inputs;
  std::string current;
  bool has_line = false;
  for (const std::string& line : SplitLines(ReadFile(path))) {
    if (line == "__ggml_vocab_test__") {
      inputs.push_back(current);
      current.clear();
      has_line = false;
      continue;
    }
    if (has_line) current += '\n';
    current += line;
    has_line = true;
  }
  return inputs;
}

std::vector<std::vector<int32_t>> ReadVocabOutputs(const fs::path& path) {
  std::vector<std::vector<int32_t>> outputs;
  for (const std::string& line : SplitLines(ReadFile(path))) {
    std::istringstream in(line);
    std::vector<int32_t> ids;
    for (int32_t id; in >> id;) ids.push_back(id);
    outputs.push_back(ids);
  }
  return outputs;
}

std::shared_ptr<const Vocabulary> LoadVocabulary(const fs::path& path) {
  Result<GgufFile> file = GgufFile::Open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  Result<Vocabulary> vocab = Vocabulary::FromGguf(*file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  if (!vocab.ok()) return nullptr;
  return std::make_shared<const Vocabulary>(std::move(vocab).value());
}

std::string HexToBytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<int32_t> ToIds(const Json& array) {
  std::vector<int32_t> ids;
  for (const Json& v : array) ids.push_back(static_cast<int32_t>(v.get<double>()));
  return ids;
}

#define SKIP_WITHOUT(path)                                \
  if (!fs::exists(path))                                  \
  GTEST_SKIP() << "test data absent: " << (path).string() \
               << " (../shared is not laid out beside the repo)"

std::unique_ptr<Tokenizer> CreateTokenizer(std::shared_ptr<const Vocabulary> vocab) {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::Create(std::move(vocab));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

struct VectorCase {
  const char* name;   // ggml-vocab-<name>.gguf.{inp,out}
  const char* model;  // the GGUF holding the vocabulary, under ../shared
};

void PrintTo(const VectorCase& c, std::ostream* os) { *os << c.name << " / " << c.model; }

class VocabVectorsTest : public ::testing::TestWithParam<VectorCase> {};

// llama.cpp's harness encodes without BOS and without special-token parsing.
void ExpectVectors(const fs::path& gguf, const fs::path& stem) {
  std::unique_ptr<Tokenizer> tok = CreateTokenizer(LoadVocabulary(gguf));
  ASSERT_NE(tok, nullptr);
  const std::vector<std::string> inputs = ReadVocabInputs(stem.string() + ".inp");
  const std::vector<std::vector<int32_t>> expected = ReadVocabOutputs(stem.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 30u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok->Encode(inputs[i], {.add_bos = false}), expected[i])
        << "case " << i << ": '" << inputs[i] << "'";
    // Every input is valid UTF-8 that byte fallback or byte-level BPE covers.
    EXPECT_EQ(tok->Decode(expected[i]), inputs[i]) << "case " << i;
  }
}

TEST_P(VocabVectorsTest, EncodeMatchesAndDecodeRestoresTheInput) {
  const fs::path gguf = kShared / GetParam().model;
  const fs::path stem =
      kShared / "vocab" / (std::string("ggml-vocab-") + GetParam().name + ".gguf");
  SKIP_WITHOUT(gguf);
  SKIP_WITHOUT(fs::path(stem.string() + ".inp"));
  ExpectVectors(gguf, stem);
}

// Gemma's real SentencePiece vocabularies, kept in the repository
// (tests/tokenizer/gemma2, gemma3; scripts/gemma-vocab.py): llama-spm's
// inputs plus chat markup, HTML (user-defined pieces, matched without special
// parsing), scripts, emoji and whitespace runs; Gemma 2's add its own
// user-defined pieces (HTML tags, [toxicity=0], tab runs) and "</s>", which
// valet, like llama.cpp, turns into a control token. The expected ids are
// llama-golden's on a model synthesized with the vocabulary (valet
// synth-model --vocab).
struct RepoVocabCase {
  const char* name;
  const char* vocab;    // the vocabulary-only GGUF the test build unpacked
  const char* vectors;  // the stem of its .inp/.out
  int32_t n_tokens;
  // As llama.cpp's load log lists them: <eos>, <end_of_turn>, and </s> by its text.
  std::vector<int32_t> eog;
};

void PrintTo(const RepoVocabCase& c, std::ostream* os) { *os << c.name; }

class RepoVocabularyTest : public ::testing::TestWithParam<RepoVocabCase> {};

TEST_P(RepoVocabularyTest, MatchesLlamaCpp) {
  const RepoVocabCase& c = GetParam();
  ExpectVectors(c.vocab, c.vectors);
  std::shared_ptr<const Vocabulary> vocab = LoadVocabulary(c.vocab);
  ASSERT_NE(vocab, nullptr);
  EXPECT_EQ(vocab->size(), c.n_tokens);
  EXPECT_FALSE(vocab->add_space_prefix());
  const std::span<const int32_t> eog = vocab->eog_ids();
  EXPECT_EQ(std::vector<int32_t>(eog.begin(), eog.end()), c.eog);
  // "</s>", user-defined in the file, becomes a control token as in llama.cpp
  // (the vectors then leave it in text when special tokens are not parsed).
  for (int32_t id : c.eog) EXPECT_EQ(vocab->Type(id), TokenType::kControl) << id;
}

INSTANTIATE_TEST_SUITE_P(
    Gemma, RepoVocabularyTest,
    ::testing::Values(
        RepoVocabCase{"gemma2", VALET_GEMMA2_VOCAB, VALET_GEMMA2_VECTORS, 256000, {1, 107, 213}},
        RepoVocabCase{"gemma3", VALET_GEMMA3_VOCAB, VALET_GEMMA3_VECTORS, 262144, {1, 106, 212}}),
    [](const ::testing::TestParamInfo<RepoVocabCase>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Shared, VocabVectorsTest,
    ::testing::Values(VectorCase{"llama-spm", "vocab/ggml-vocab-llama-spm.gguf"},
                      VectorCase{"gpt-2", "vocab/ggml-vocab-gpt-2.gguf"},
                      VectorCase{"deepseek-llm", "vocab/ggml-vocab-deepseek-llm.gguf"},
                      VectorCase{"deepseek-coder", "vocab/ggml-vocab-deepseek-coder.gguf"},
                      VectorCase{"mpt", "vocab/ggml-vocab-mpt.gguf"},
                      VectorCase{"refact", "vocab/ggml-vocab-refact.gguf"},
                      VectorCase{"starcoder", "vocab/ggml-vocab-starcoder.gguf"},
                      VectorCase{"llama-bpe", "models/llama3-bpe-q4_k_m.gguf"},
                      VectorCase{"qwen2", "models/qwen3-q4_k_m.gguf"},
                      VectorCase{"qwen2", "models/qwen2-q4_0.gguf"},
                      VectorCase{"phi-3", "models/phi3-q4_0.gguf"}),
    [](const ::testing::TestParamInfo<VectorCase>& info) {
      std::string name = fs::path(info.param.model).stem().string();
      std::replace_if(
          name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
      return name;
    });

// Seeded random text from mixed scripts: valid UTF-8 round-trips exactly through
// both tokenizer kinds, and arbitrary bytes (malformed UTF-8, NULs) give ids
// inside the vocabulary without failing.
TEST(TokenizerVectorsTest, RandomTextRoundTripsAndArbitraryBytesAreSafe) {
  const char* const kPieces[] = {"a",
                                 "Z",
                                 "7",
                                 " ",
                                 "  ",
                                 "\t",
                                 "\n",
                                 "'s",
                                 "!?",
                                 "\xC3\xA9",
                                 "\xE4\xB8\xAD",
                                 "\xD0\xB6",
                                 "\xF0\x9F\x99\x82",
                                 "<",
                                 "|",
                                 "\xE3\x80\x80"};
  for (const char* model : {"llama3-bpe-q4_k_m.gguf", "phi3-q4_0.gguf"}) {
    const fs::path path = kShared / "models" / model;
    SKIP_WITHOUT(path);
    std::unique_ptr<Tokenizer> tok = CreateTokenizer(LoadVocabulary(path));
    ASSERT_NE(tok, nullptr);
    std::mt19937 rng(42);
    for (int i = 0; i < 200; ++i) {
      std::string text;
      std::string bytes;
      const int n = static_cast<int>(rng() % 60) + 1;
      for (int k = 0; k < n; ++k) {
        text += kPieces[rng() % std::size(kPieces)];
        bytes.push_back(static_cast<char>(rng() % 256));
      }
      const std::vector<int32_t> ids = tok->Encode(text, {.add_bos = false});
      EXPECT_EQ(tok->Decode(ids), text) << model << ": '" << text << "'";
      for (int32_t id : tok->Encode(bytes, {.parse_special = true})) {
        EXPECT_TRUE(tok->vocabulary().Contains(id)) << model << " id " << id;
      }
    }
  }
}

// The end-of-generation sets llama.cpp reports for these files (its load log's
// "EOG token" lines), including texts it recognises and FIM markers.
TEST(TokenizerVectorsTest, EndOfGenerationTokensMatchLlamaCpp) {
  const struct {
    const char* path;
    std::vector<int32_t> eog;
  } kCases[] = {
      {"models/llama3-bpe-q4_k_m.gguf", {128001, 128009}},
      {"models/qwen3-q4_k_m.gguf", {128247, 151643, 151645, 151662, 151663, 151664}},
      {"models/phi3-q4_0.gguf", {2, 32000, 32007}},
      {"vocab/ggml-vocab-llama-spm.gguf", {2}},
      {"vocab/ggml-vocab-gpt-2.gguf", {50256}},
      {"vocab/ggml-vocab-deepseek-coder.gguf", {32014}},
      {"vocab/ggml-vocab-refact.gguf", {0, 4, 18}},
      {"vocab/ggml-vocab-starcoder.gguf", {0, 4}},
  };
  for (const auto& c : kCases) {
    const fs::path path = kShared / c.path;
    SKIP_WITHOUT(path);
    std::shared_ptr<const Vocabulary> vocab = LoadVocabulary(path);
    ASSERT_NE(vocab, nullptr);
    const std::span<const int32_t> eog = vocab->eog_ids();
    EXPECT_EQ(std::vector<int32_t>(eog.begin(), eog.end()), c.eog) << c.path;
    for (int32_t id : c.eog) EXPECT_EQ(vocab->Type(id), TokenType::kControl) << c.path << " " << id;
  }
}

// `prompt` with a space after each special token of `tokens` that a text run
// follows, when the tokenizer is SentencePiece with add_space_prefix (its
// decoder keeps the prefix space it gave that run).
std::string WithSpmPrefixSpaces(const Tokenizer& tok, std::span<const int32_t> tokens,
                                const std::string& prompt) {
  const Vocabulary& vocab = tok.vocabulary();
  if (tok.kind() != TokenizerKind::kSpm || !vocab.add_space_prefix()) return prompt;
  auto is_special = [&vocab](int32_t id) { return vocab.Type(id) == TokenType::kControl; };
  std::string out;
  size_t cursor = 0;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (!is_special(tokens[i]) || is_special(tokens[i + 1])) continue;
    const std::string& text = vocab.TokenText(tokens[i]);
    const size_t at = prompt.find(text, cursor);
    if (at == std::string::npos) continue;
    out.append(prompt, cursor, at + text.size() - cursor);
    out.push_back(' ');
    cursor = at + text.size();
  }
  out.append(prompt, cursor, std::string::npos);
  return out;
}

TEST(TokenizerVectorsTest, GoldenPromptsAndContinuations) {
  const fs::path golden_dir = kShared / "golden";
  SKIP_WITHOUT(golden_dir);
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(golden_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  int cases = 0;
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    Result<Json> golden = ReadJsonFile(path.string());
    ASSERT_TRUE(golden.ok()) << golden.status().ToString();
    const Json* model = FindMember(*golden, "model");
    const Json* golden_cases = FindMember(*golden, "cases");
    ASSERT_TRUE(model != nullptr && model->is_string());
    ASSERT_TRUE(golden_cases != nullptr && golden_cases->is_array());
    std::unique_ptr<Tokenizer> tok =
        CreateTokenizer(LoadVocabulary(kShared / "models" / model->get<std::string>()));
    // The newer reference files (those stating a logits_form) render special
    // tokens in their continuations ("<s>"); the first ones left them out.
    const bool renders_special = FindMember(*golden, "logits_form") != nullptr;
    ASSERT_NE(tok, nullptr);
    for (const Json& c : *golden_cases) {
      const std::string& prompt = c.at("prompt").get<std::string>();
      const std::vector<int32_t> prompt_tokens = ToIds(c.at("prompt_tokens"));
      // The reference parsed special tokens and added BOS where the file asks for it.
      EXPECT_EQ(tok->Encode(prompt, {.parse_special = true}), prompt_tokens) << prompt;
      ASSERT_FALSE(prompt_tokens.empty());
      const bool has_bos = tok->vocabulary().add_bos();
      const std::vector<int32_t> body(prompt_tokens.begin() + (has_bos ? 1 : 0),
                                      prompt_tokens.end());
      // Decoding with special tokens rendered restores the prompt, plus, for SPM,
      // the prefix space of every text run that follows a special token.
      EXPECT_EQ(tok->Decode(body, {.unparse_special = true}),
                WithSpmPrefixSpaces(*tok, body, prompt));

      std::string continuation;
      for (const Json& step : c.at("steps")) {
        continuation += tok->TokenToPiece(static_cast<int32_t>(step.at("token").get<double>()),
                                          {.unparse_special = renders_special});
      }
      EXPECT_EQ(continuation, HexToBytes(c.at("greedy_bytes_hex").get<std::string>())) << prompt;
      ++cases;
    }
  }
  EXPECT_GE(cases, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace valet
