// The logprobs objects in OpenAI's two shapes, in bodies and stream chunks.
#include "server/openai_logprobs.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "server/openai_response.h"

namespace valet {
namespace {

using nlohmann::json;

std::vector<TokenLogprobs> TwoTokens() {
  TokenLogprobs a;
  a.sampled = {7, -0.5f, "He"};
  a.top = {{7, -0.5f, "He"}, {9, -1.25f, "\xe2\x82"}};
  TokenLogprobs b;
  b.sampled = {4, -std::numeric_limits<float>::infinity(), "llo"};
  b.top = {{5, -0.25f, "y"}};
  return {a, b};
}

TEST(OpenAiLogprobsTest, ChatShape) {
  const json j = json::parse(ChatLogprobs(TwoTokens()).dump(-1, ' ', false, json::error_handler_t::replace));
  ASSERT_EQ(j["content"].size(), 2u);
  EXPECT_TRUE(j["refusal"].is_null());
  const json& first = j["content"][0];
  EXPECT_EQ(first["token"], "He");
  EXPECT_EQ(first["logprob"], -0.5);
  EXPECT_EQ(first["bytes"], json::array({72, 101}));
  ASSERT_EQ(first["top_logprobs"].size(), 2u);
  EXPECT_EQ(first["top_logprobs"][1]["bytes"], json::array({0xe2, 0x82}));  // exact, though not UTF-8 alone
  EXPECT_EQ(first["top_logprobs"][1]["token"], "\xef\xbf\xbd");
  EXPECT_EQ(first["top_logprobs"][1]["logprob"], -1.25);
  EXPECT_EQ(j["content"][1]["logprob"], -9999.0);  // -inf has no JSON number
}

TEST(OpenAiLogprobsTest, CompletionShapeCountsOffsetsFromTheStart) {
  const json j = CompletionLogprobs(TwoTokens(), 10);
  EXPECT_EQ(j["tokens"], json::array({"He", "llo"}));
  EXPECT_EQ(j["token_logprobs"], json::array({-0.5, -9999.0}));
  EXPECT_EQ(j["text_offset"], json::array({10, 12}));
  ASSERT_EQ(j["top_logprobs"].size(), 2u);
  EXPECT_EQ(j["top_logprobs"][1], json({{"y", -0.25}, {"llo", -9999.0}}));  // the sampled token always included
  EXPECT_EQ(PieceBytes(TwoTokens()), 5u);
}

TEST(OpenAiLogprobsTest, BodiesAndChunksCarryThemOnlyWhenAsked) {
  TaskResult result;
  result.text = "Hello";
  result.logprobs = TwoTokens();
  for (Endpoint endpoint : {Endpoint::kChatCompletions, Endpoint::kCompletions}) {
    ResponseMeta meta = MakeResponseMeta(endpoint, 1, "m");
    EXPECT_TRUE(json::parse(CompletionBody(meta, result))["choices"][0]["logprobs"].is_null());
    meta.logprobs = true;
    const json body = json::parse(CompletionBody(meta, result));
    const json& lp = body["choices"][0]["logprobs"];
    EXPECT_EQ(endpoint == Endpoint::kChatCompletions ? lp["content"].size() : lp["tokens"].size(), 2u);
    ChunkOptions o;
    const std::vector<TokenLogprobs> tokens = TwoTokens();
    o.logprobs = std::span<const TokenLogprobs>(tokens).subspan(1);
    o.text_offset = 2;
    const std::string chunk = StreamChunk(meta, "", o);
    const json c = json::parse(chunk.substr(6));
    const json& clp = c["choices"][0]["logprobs"];
    if (endpoint == Endpoint::kChatCompletions) {
      EXPECT_EQ(clp["content"][0]["token"], "llo");
      EXPECT_EQ(c["choices"][0]["delta"]["content"], "");
    } else {
      EXPECT_EQ(clp["text_offset"], json::array({2}));
    }
    EXPECT_TRUE(json::parse(StreamChunk(meta, "x", {}).substr(6))["choices"][0]["logprobs"].is_null());
  }
}

}  // namespace
}  // namespace valet
