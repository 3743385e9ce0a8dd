// Chats on the real models of ../shared: each file's own chat template
// parses with valet's Jinja subset and drives the scheduler's rendering, a
// template that writes BOS itself gets exactly one, and generation stops at
// the template's end-of-turn token.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "engine/real_engine.h"
#include "sched/chat_renderer.h"

namespace valet {
namespace {

struct RealChatModel {
  const char* file;
  const char* end_of_turn;  // the template's end-of-turn token text
  bool renders_system;      // Phi-3's template drops system messages
};

constexpr RealChatModel kModels[] = {
    {"llama3-bpe-q4_k_m.gguf", "<|eot_id|>", true},
    {"qwen2-q4_0.gguf", "<|im_end|>", true},
    {"qwen3-q4_k_m.gguf", "<|im_end|>", true},
    {"phi3-q4_0.gguf", "<|end|>", false},
};

class ChatRealModelsTest : public ::testing::TestWithParam<RealChatModel> {
 protected:
  void SetUp() override {
    const std::string path = std::string(VALET_SHARED_DIR) + "/models/" + GetParam().file;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "shared data absent: " << path;
    RealEngineOptions o;
    o.engine.model_path = path;
    o.engine.n_threads = 1;
    o.engine.kv_capacity_bytes = 2u << 20;
    o.calibrate = false;
    Result<std::unique_ptr<RealEngine>> engine = RealEngine::Open(o);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
  }

  std::unique_ptr<RealEngine> engine_;
};

TEST_P(ChatRealModelsTest, TheModelsOwnTemplateRendersTheChat) {
  const ChatRenderer chat = ChatRenderer::ForFormat(engine_->chat_format());
  ASSERT_TRUE(chat.uses_model_template()) << chat.fallback_reason();
  Result<RenderedPrompt> r = chat.RenderChat("You are terse.", {{"user", "Hello!"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string full = r->shared + r->own;
  if (GetParam().renders_system) {
    EXPECT_NE(r->shared.find("You are terse."), std::string::npos) << r->shared;
  } else {
    EXPECT_EQ(full.find("You are terse."), std::string::npos) << full;
    EXPECT_EQ(r->shared, engine_->chat_format().bos_token) << "only what precedes the first turn is shared";
  }
  EXPECT_NE(r->own.find("Hello!"), std::string::npos) << r->own;
  EXPECT_NE(full.find(GetParam().end_of_turn), std::string::npos) << full;
}

TEST_P(ChatRealModelsTest, SpecialTokensParseAndBosIsNeverDoubled) {
  const ChatRenderer chat = ChatRenderer::ForFormat(engine_->chat_format());
  Result<RenderedPrompt> r = chat.RenderChat("You are terse.", {{"user", "Hello!"}});
  ASSERT_TRUE(r.ok());
  const std::vector<int32_t> tokens = engine_->Tokenize(r->shared + r->own, /*add_bos=*/true);
  const int32_t end_of_turn = engine_->Tokenize(GetParam().end_of_turn, false).front();
  EXPECT_EQ(engine_->Tokenize(GetParam().end_of_turn, false).size(), 1u) << "parsed as one special token";
  EXPECT_NE(std::find(tokens.begin(), tokens.end(), end_of_turn), tokens.end());
  ASSERT_GE(tokens.size(), 2u);
  EXPECT_FALSE(tokens[0] == tokens[1]) << "two BOS tokens";
}

TEST_P(ChatRealModelsTest, TheEndOfTurnTokenEndsGeneration) {
  const int32_t end_of_turn = engine_->Tokenize(GetParam().end_of_turn, false).front();
  const std::vector<int32_t> eog = engine_->eog_tokens();
  EXPECT_NE(std::find(eog.begin(), eog.end(), end_of_turn), eog.end()) << GetParam().end_of_turn;
}

INSTANTIATE_TEST_SUITE_P(Models, ChatRealModelsTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<RealChatModel>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('-'));
                           return name;
                         });

}  // namespace
}  // namespace valet
