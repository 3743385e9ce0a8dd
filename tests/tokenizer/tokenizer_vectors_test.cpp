// The tokenizer against reference data made with llama.cpp (../shared):
// the llama-spm tokenizer test vectors and the prompts of every golden file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "common/json_value.h"
#include "tokenizer/spm_tokenizer.h"
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

std::vector<int32_t> ToIds(const JsonValue& array) {
  std::vector<int32_t> ids;
  for (const JsonValue& v : array.items()) ids.push_back(static_cast<int32_t>(v.AsNumber()));
  return ids;
}

#define SKIP_WITHOUT(path)                                \
  if (!fs::exists(path))                                  \
  GTEST_SKIP() << "test data absent: " << (path).string() \
               << " (../shared is not laid out beside the repo)"

TEST(TokenizerVectorsTest, LlamaSpmVocabTestVectors) {
  const fs::path gguf = kShared / "vocab" / "ggml-vocab-llama-spm.gguf";
  SKIP_WITHOUT(gguf);
  std::shared_ptr<const Vocabulary> vocab = LoadVocabulary(gguf);
  ASSERT_NE(vocab, nullptr);
  SpmTokenizer tok(vocab);
  const std::vector<std::string> inputs = ReadVocabInputs(gguf.string() + ".inp");
  const std::vector<std::vector<int32_t>> expected = ReadVocabOutputs(gguf.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok.Encode(inputs[i], {.add_bos = false}), expected[i])
        << "case " << i << ": '" << inputs[i] << "'";
    // Every input is valid UTF-8 covered by byte fallback, so decoding restores it.
    EXPECT_EQ(tok.Decode(expected[i]), inputs[i]) << "case " << i;
  }
}

TEST(TokenizerVectorsTest, BpeVocabulariesAreReportedUnsupported) {
  const fs::path gguf = kShared / "vocab" / "ggml-vocab-gpt-2.gguf";
  SKIP_WITHOUT(gguf);
  Result<GgufFile> file = GgufFile::Open(gguf.string());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Result<Vocabulary> vocab = Vocabulary::FromGguf(*file);
  EXPECT_EQ(vocab.status().code(), StatusCode::kUnsupported);
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
    Result<JsonValue> golden = ReadJsonFile(path.string());
    ASSERT_TRUE(golden.ok()) << golden.status().ToString();
    const JsonValue* model = golden->Find("model");
    const JsonValue* golden_cases = golden->Find("cases");
    ASSERT_TRUE(model != nullptr && model->is_string());
    ASSERT_TRUE(golden_cases != nullptr && golden_cases->is_array());
    std::shared_ptr<const Vocabulary> vocab =
        LoadVocabulary(kShared / "models" / model->AsString());
    ASSERT_NE(vocab, nullptr);
    SpmTokenizer tok(vocab);
    for (const JsonValue& c : golden_cases->items()) {
      const std::string& prompt = c.Find("prompt")->AsString();
      const std::vector<int32_t> prompt_tokens = ToIds(*c.Find("prompt_tokens"));
      EXPECT_EQ(tok.Encode(prompt), prompt_tokens) << prompt;
      ASSERT_FALSE(prompt_tokens.empty());
      const std::span<const int32_t> without_bos(prompt_tokens.data() + 1,
                                                 prompt_tokens.size() - 1);
      EXPECT_EQ(tok.Decode(without_bos), prompt);
      EXPECT_EQ(tok.Decode(prompt_tokens, {.remove_special = true}), " " + prompt);

      std::string continuation;
      for (const JsonValue& step : c.Find("steps")->items()) {
        continuation += tok.TokenToPiece(static_cast<int32_t>(step.Find("token")->AsNumber()));
      }
      EXPECT_EQ(continuation, HexToBytes(c.Find("greedy_bytes_hex")->AsString())) << prompt;
      ++cases;
    }
  }
  EXPECT_GE(cases, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace valet
