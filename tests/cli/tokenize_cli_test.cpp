// `valet tokenize` as a user runs it, against llama.cpp's tokens for the
// golden prompts (../shared/golden), and its one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/cli_run.h"
#include <vector>

#include "common/json.h"

namespace valet {
namespace {

namespace fs = std::filesystem;

using valet::testing::CliRun;

CliRun Valet(const std::string& args) { return valet::testing::RunValet(args); }

const fs::path kShared = VALET_SHARED_DIR;

// The golden's case `index`: its prompt (free of single quotes, so it can be
// passed through the shell) and llama.cpp's tokens for it.
struct GoldenPrompt {
  std::string prompt;
  std::vector<int32_t> tokens;
};

GoldenPrompt LoadCase(const std::string& golden, size_t index) {
  Result<Json> json = ReadJsonFile((kShared / "golden" / golden).string());
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  if (!json.ok()) return {};
  const Json& c = json->at("cases").at(index);
  GoldenPrompt g{c.at("prompt").get<std::string>(), {}};
  for (const Json& v : c.at("prompt_tokens")) {
    g.tokens.push_back(static_cast<int32_t>(v.get<double>()));
  }
  EXPECT_EQ(g.prompt.find('\''), std::string::npos);
  return g;
}

std::string Json(const std::vector<int32_t>& ids) {
  std::string s = "{\"tokens\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]}\n";
}

#define SKIP_WITHOUT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << "shared data absent: " << (path).string()

TEST(TokenizeCliTest, JsonMatchesLlamaCppWithSpecialTokensParsed) {
  const fs::path model = kShared / "models" / "qwen3-q4_k_m.gguf";
  SKIP_WITHOUT(model);
  const GoldenPrompt chat = LoadCase("qwen3-q4_k_m.json", 2);  // ChatML text
  CliRun r = Valet("tokenize -m " + model.string() + " -p '" + chat.prompt + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, Json(chat.tokens));
  // --no-special: "<|im_start|>" is text, so its token id does not appear.
  CliRun plain =
      Valet("tokenize -m " + model.string() + " -p '" + chat.prompt + "' --json --no-special");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out.find(std::to_string(chat.tokens.front())), std::string::npos) << plain.out;
}

TEST(TokenizeCliTest, BosIsAddedUnlessNoBos) {
  const fs::path model = kShared / "models" / "llama3-bpe-q4_k_m.gguf";
  SKIP_WITHOUT(model);
  const GoldenPrompt g = LoadCase("llama3-bpe-q4_k_m.json", 0);
  CliRun with_bos = Valet("tokenize -m " + model.string() + " -p '" + g.prompt + "'");
  ASSERT_EQ(with_bos.exit_code, 0) << with_bos.out;
  std::string plain_ids;
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    if (i > 0) plain_ids += ' ';
    plain_ids += std::to_string(g.tokens[i]);
  }
  EXPECT_EQ(with_bos.out, plain_ids + "\n");
  CliRun no_bos = Valet("tokenize -m " + model.string() + " -p '" + g.prompt + "' --json --no-bos");
  ASSERT_EQ(no_bos.exit_code, 0) << no_bos.out;
  EXPECT_EQ(no_bos.out, Json(std::vector<int32_t>(g.tokens.begin() + 1, g.tokens.end())));
}

TEST(TokenizeCliTest, BadInputIsAOneLineErrorWithExitCode2) {
  CliRun no_model = Valet("tokenize -p hi");
  EXPECT_EQ(no_model.exit_code, 2) << no_model.out;
  EXPECT_NE(no_model.out.find("--model is required"), std::string::npos) << no_model.out;
  CliRun missing = Valet("tokenize -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/model.gguf"), std::string::npos) << missing.out;
}

// Writes `bytes` to a file named for the test, removed when it goes.
class BytesFile {
 public:
  BytesFile(const std::string& name, const std::string& bytes)
      : path_(fs::temp_directory_path() / ("valet_tokenize_" + name + "_" + std::to_string(getpid()))) {
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~BytesFile() { fs::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// Bytes as they are: emoji, CJK, a combining mark and U+0000 reach the
// tokenizer, which the shell's -p cannot carry.
TEST(TokenizeCliTest, PromptFileBytesAreTheText) {
  const fs::path model = kShared / "models" / "stories260K.gguf";
  SKIP_WITHOUT(model);
  const BytesFile plain("plain", "Once upon a time");
  CliRun from_file = Valet("tokenize -m " + model.string() + " --prompt-file " + plain.path() + " --json");
  CliRun from_flag = Valet("tokenize -m " + model.string() + " -p 'Once upon a time' --json");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.out;
  EXPECT_EQ(from_file.out, from_flag.out);
  static const char kText[] = "Hi \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87 e\xCC\x81 a\0b";
  const std::string text(kText, sizeof kText - 1);
  const BytesFile mixed("mixed", text);
  CliRun r = Valet("tokenize -m " + model.string() + " --prompt-file " + mixed.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // stories260K's vocabulary: byte fallback <0x00> is token 3, after unk, BOS and EOS.
  EXPECT_NE((" " + r.out).find(" 3 "), std::string::npos) << r.out;
  CliRun before_nul = Valet("tokenize -m " + model.string() + " --prompt-file " +
                            BytesFile("cut", text.substr(0, text.find('\0'))).path());
  ASSERT_EQ(before_nul.exit_code, 0) << before_nul.out;
  EXPECT_EQ(r.out.rfind(before_nul.out.substr(0, before_nul.out.size() - 1), 0), 0u) << r.out;
  EXPECT_GT(r.out.size(), before_nul.out.size());
}

TEST(TokenizeCliTest, PromptFileErrorsAreOneLine) {
  const fs::path model = kShared / "models" / "stories260K.gguf";
  SKIP_WITHOUT(model);
  const BytesFile plain("both", "x");
  CliRun both = Valet("tokenize -m " + model.string() + " -p x --prompt-file " + plain.path());
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_NE(both.out.find("exactly one of --prompt and --prompt-file"), std::string::npos) << both.out;
  CliRun missing = Valet("tokenize -m " + model.string() + " --prompt-file /nonexistent/prompt.txt");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/prompt.txt"), std::string::npos) << missing.out;
  const BytesFile huge("huge", "");
  fs::resize_file(huge.path(), (std::uintmax_t{64} << 20) + 1);  // sparse: nothing is written
  CliRun too_big = Valet("tokenize -m " + model.string() + " --prompt-file " + huge.path());
  EXPECT_EQ(too_big.exit_code, 2) << too_big.out;
  EXPECT_NE(too_big.out.find("more than the 64 MiB"), std::string::npos) << too_big.out;
}

TEST(TokenizeCliTest, InfoReportsTheTokenizer) {
  const fs::path model = kShared / "models" / "stories260K.gguf";
  SKIP_WITHOUT(model);
  CliRun r = Valet("info -m " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("tokenizer: spm, pre-tokenizer default, 512 tokens"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace valet
