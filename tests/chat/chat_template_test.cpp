// Every case of ../shared/chat-templates/expected.json, rendered by
// @huggingface/jinja: valet's render must be byte-identical, or fail with
// the template's own raise_exception message.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <cctype>
#include <ctime>
#include <optional>
#include <ostream>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/json.h"

namespace valet::chat {
namespace {

// ../shared's templates and the repository's own (tests/chat/templates:
// Gemma 3's, rendered by scripts/render-chat-templates.mjs), in one format.
const std::string kDir = std::string(VALET_SHARED_DIR) + "/chat-templates";
const std::string kRepoDir = VALET_REPO_TEMPLATES;

struct Case {
  std::string dir;
  std::string name;
  Json json;                 // null: the shared directory is absent
  std::optional<std::time_t> now;  // the oracle's render date
};

// gtest prints parameters in test listings: the case name, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The oracle's render date ("30 Nov 2026"), as noon UTC.
std::optional<std::time_t> OracleDate(const Json& root) {
  const Json* date = FindMember(root, "date");
  if (date == nullptr || !date->is_string()) return std::nullopt;
  std::tm tm{};
  if (strptime(date->get<std::string>().c_str(), "%d %b %Y", &tm) == nullptr) return std::nullopt;
  tm.tm_hour = 12;
  return timegm(&tm);
}

std::vector<Case> LoadCases(const std::string& dir) {
  std::vector<Case> cases;
  Result<Json> root = ReadJsonFile(dir + "/expected.json");
  if (!root.ok() || FindMember(*root, "cases") == nullptr) return cases;
  for (const Json& c : root->at("cases")) {
    std::string name = c.at("template").get<std::string>() + "_" + c.at("conversation").get<std::string>() +
                       (c.at("add_generation_prompt").get<bool>() ? "_gen" : "_nogen");
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    cases.push_back({dir, name, c, OracleDate(*root)});
  }
  return cases;
}

class SharedChatTemplates : public ::testing::TestWithParam<Case> {};

TEST_P(SharedChatTemplates, RendersLikeTheReference) {
  if (GetParam().json.is_null()) GTEST_SKIP() << "no chat-template cases at " << kDir;
  const Json& c = GetParam().json;
  const std::string path = GetParam().dir + "/" + c.at("template").get<std::string>();
  Result<ChatTemplate> tmpl = ChatTemplate::Parse(ReadFile(path));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ChatRenderInput input;
  input.messages = c.at("messages");
  input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  input.bos_token = c.at("bos_token").get<std::string>();
  input.eos_token = c.at("eos_token").get<std::string>();
  if (const Json* vars = FindMember(c, "variables")) input.variables = *vars;
  input.now = GetParam().now;
  ASSERT_TRUE(input.now.has_value()) << "expected.json has no parsable \"date\"";

  Result<std::string> out = tmpl->Render(input);
  if (const Json* error = FindMember(c, "expected_error")) {
    ASSERT_FALSE(out.ok()) << "rendered instead of failing:\n" << *out;
    EXPECT_EQ(out.status().message(), error->get<std::string>());
    return;
  }
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, c.at("expected").get<std::string>());
}

// The split for prefix caching always adds back up to the reference render,
// and in ChatML templates the shared head is exactly the system turn.
TEST_P(SharedChatTemplates, SplitSharesTheSystemHead) {
  if (GetParam().json.is_null()) GTEST_SKIP() << "no chat-template cases at " << kDir;
  const Json& c = GetParam().json;
  if (FindMember(c, "expected") == nullptr) GTEST_SKIP() << "the template refuses this conversation";
  Result<ChatTemplate> tmpl = ChatTemplate::Parse(ReadFile(GetParam().dir + "/" + c.at("template").get<std::string>()));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  ChatRenderInput input;
  input.messages = c.at("messages");
  input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
  input.bos_token = c.at("bos_token").get<std::string>();
  input.eos_token = c.at("eos_token").get<std::string>();
  if (const Json* vars = FindMember(c, "variables")) input.variables = *vars;
  input.now = GetParam().now;
  Result<SplitPrompt> split = tmpl->RenderSplit(input);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(split->shared + split->own, c.at("expected").get<std::string>());
  const Json& first = input.messages[0];
  if (first.at("role").get<std::string>() != "system") {
    EXPECT_EQ(split->shared, "");
  } else if (c.at("template").get<std::string>().rfind("Qwen-", 0) == 0) {
    EXPECT_EQ(split->shared, "<|im_start|>system\n" + first.at("content").get<std::string>() + "<|im_end|>\n");
  }
}

std::vector<Case> CasesOrPlaceholder() {
  std::vector<Case> cases = LoadCases(kDir);
  if (cases.empty()) cases.push_back({kDir, "shared_dir_absent", Json(), std::nullopt});
  for (Case& c : LoadCases(kRepoDir)) cases.push_back(std::move(c));
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Expected, SharedChatTemplates, ::testing::ValuesIn(CasesOrPlaceholder()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::to_string(info.index) + "_" + info.param.name;
                         });

}  // namespace
}  // namespace valet::chat
