// bench-serve's client side without a server: the requests it builds, the
// streamed replies it reads, and the report's p99-or-max rule.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/bench/http_scenario_sink.h"
#include "testing/bench/serve_bench.h"

namespace valet {
using namespace valet::testing;
namespace {

using nlohmann::json;

TaskRequest ChatTask() {
  TaskRequest t;
  t.tier = Tier::kForegroundChat;
  t.system_prompt = "be brief";
  t.messages = {{"user", "hello"}};
  t.max_tokens = 7;
  t.sampling.seed = 42;
  return t;
}

TEST(BuildHttpRequestTest, ChatGoesToChatCompletionsWithTheSystemPromptFirstAndUsage) {
  LoadTarget target;
  target.model = "m";
  const HttpTaskRequest r = BuildHttpRequest(ChatTask(), target);
  EXPECT_EQ(r.path, "/v1/chat/completions");
  const json body = json::parse(r.body);
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][0]["content"], "be brief");
  EXPECT_EQ(body["messages"][1]["content"], "hello");
  EXPECT_EQ(body["max_tokens"], 7);
  EXPECT_EQ(body["seed"], 42);
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["tier"], "foreground_chat");
}

TEST(BuildHttpRequestTest, APromptTaskIsACompletionAndLlamaCppGetsNoTier) {
  TaskRequest doc;
  doc.tier = Tier::kOfflineIndexing;
  doc.prompt = "a long document";
  LoadTarget target;
  json body = json::parse(BuildHttpRequest(doc, target).body);
  EXPECT_EQ(BuildHttpRequest(doc, target).path, "/v1/completions");
  EXPECT_EQ(body["prompt"], "a long document");
  EXPECT_EQ(body["tier"], "offline_indexing");
  target.api = ApiFlavor::kLlamaCpp;
  body = json::parse(BuildHttpRequest(doc, target).body);
  EXPECT_FALSE(body.contains("tier"));
  EXPECT_FALSE(json::parse(BuildHttpRequest(ChatTask(), target).body).contains("tier"));
}

TEST(BuildHttpRequestTest, ATargetTemperatureReplacesEveryTasks) {
  TaskRequest chat = ChatTask();
  chat.sampling.temperature = 0.8f;
  LoadTarget target;
  EXPECT_FLOAT_EQ(json::parse(BuildHttpRequest(chat, target).body)["temperature"].get<float>(), 0.8f);
  target.temperature = 0.0f;
  EXPECT_EQ(json::parse(BuildHttpRequest(chat, target).body)["temperature"].get<float>(), 0.0f);
}

TEST(ApiFlavorTest, NamesRoundTripAndOthersAreRefused) {
  for (ApiFlavor a : {ApiFlavor::kOpenAi, ApiFlavor::kLlamaCpp}) EXPECT_EQ(*ApiFlavorFromName(ApiFlavorName(a)), a);
  EXPECT_FALSE(ApiFlavorFromName("vllm").ok());
}

// A chat stream as valet serve and llama-server send it: a role-only first
// chunk, text chunks, a finish chunk, the usage chunk, [DONE].
std::string ChatStream() {
  const char* chunks[] = {
      R"({"choices":[{"delta":{"role":"assistant","content":""}}]})",
      R"({"choices":[{"delta":{"content":"Hel"}}]})",
      R"({"choices":[{"delta":{"content":"lo"}}]})",
      R"({"choices":[{"delta":{},"finish_reason":"length"}]})",
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":9}}})",
  };
  std::string s;
  for (const char* chunk : chunks) s += std::string("data: ") + chunk + "\n\n";
  return s + "data: [DONE]\n\n";
}

TEST(SseCompletionReaderTest, ReadsAStreamFedByteByByte) {
  const std::string stream = ChatStream();
  // The byte that completes the first text event: the second newline after it.
  const size_t first_text_end = stream.find("\n\n", stream.find("Hel")) + 1;
  SseCompletionReader r;
  double first_text_at = -1.0;
  for (size_t i = 0; i < stream.size(); ++i) {
    r.Feed(stream.substr(i, 1), static_cast<double>(i));
    if (first_text_at < 0 && r.first_text_time() >= 0) first_text_at = static_cast<double>(i);
  }
  EXPECT_TRUE(r.saw_done());
  EXPECT_EQ(r.text(), "Hello");
  EXPECT_EQ(r.text_chunks(), 2);
  EXPECT_EQ(first_text_at, static_cast<double>(first_text_end));
  EXPECT_EQ(r.first_text_time(), static_cast<double>(first_text_end));
  EXPECT_EQ(r.prompt_tokens(), 12);
  EXPECT_EQ(r.completion_tokens(), 3);
  EXPECT_EQ(r.cached_tokens(), 9);
  EXPECT_TRUE(r.error().empty());
}

TEST(SseCompletionReaderTest, ReadsCompletionTextAndErrorEvents) {
  SseCompletionReader r;
  r.Feed("data: {\"choices\":[{\"text\":\"abc\"}]}\r\n", 1.0);
  EXPECT_EQ(r.text(), "");  // the event is not complete before its blank line
  r.Feed("\r\ndata: {\"choices\":[{\"text\":\"de\"}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n", 2.0);
  EXPECT_EQ(r.text(), "abcde");
  EXPECT_EQ(r.first_text_time(), 2.0);
  EXPECT_NE(r.error().find("boom"), std::string::npos);
  EXPECT_FALSE(r.saw_done());
  EXPECT_EQ(r.completion_tokens(), -1);
}

ServeBenchReport ReportWithSamples(int n) {
  ServeBenchReport report;
  ServeArmStats s;
  s.name = "idle";
  s.planned = s.completed = n;
  std::vector<double> v;
  for (int i = 1; i <= n; ++i) v.push_back(i);
  s.ttft_ms = s.tpot_ms = s.e2e_ms = ComputePercentiles(v);
  report.arms.push_back(s);
  return report;
}

TEST(ServeReportTest, P99OnlyWithEnoughSamplesElseMax) {
  for (int n : {5, static_cast<int>(kMinSamplesForP99)}) {
    const ServeBenchReport report = ReportWithSamples(n);
    const json j = json::parse(ServeReportJson(report));
    const json& ttft = j["arms"]["idle"]["ttft_ms"];
    EXPECT_EQ(ttft["max"], n) << n;
    EXPECT_EQ(ttft.contains("p99"), n >= kMinSamplesForP99) << n;
    const std::string text = ServeReportText(report);
    EXPECT_EQ(text.find("P99 TTFT (ms):") != std::string::npos, n >= kMinSamplesForP99) << text;
    EXPECT_NE(text.find("Max TTFT (ms):"), std::string::npos) << text;
    EXPECT_NE(text.find("Median TPOT (ms):"), std::string::npos) << text;
    EXPECT_NE(text.find("Mean E2EL (ms):"), std::string::npos) << text;
  }
}

TEST(ServeReportTest, AllCompletedNeedsEveryPlannedTurnDone) {
  ServeBenchReport report = ReportWithSamples(3);
  EXPECT_TRUE(report.all_completed());
  report.arms[0].completed = 2;
  EXPECT_FALSE(report.all_completed());
}

TEST(ServeLoadConfigTest, KeepsBenchContentionShapesWithoutSideTasksOrLifecycle) {
  ServeBenchOptions o;
  o.seed = 7;
  o.turns = 5;
  const ScenarioConfig c = ServeLoadConfig(o);
  const ScenarioConfig contention;
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.turns, 5);
  EXPECT_EQ(c.system_tokens, contention.system_tokens);
  EXPECT_EQ(c.user_tokens, contention.user_tokens);
  EXPECT_EQ(c.answer_tokens, contention.answer_tokens);
  EXPECT_EQ(c.doc_tokens, contention.doc_tokens);
  EXPECT_EQ(c.summary_chance, 0.0);
  EXPECT_EQ(c.suggestion_chance, 0.0);
  EXPECT_EQ(c.lifecycle_after_turn, -1);
  EXPECT_EQ(c.indexers, 1);
  o.indexers = 8;
  EXPECT_EQ(ServeLoadConfig(o).indexers, 8);
}

}  // namespace
}  // namespace valet
