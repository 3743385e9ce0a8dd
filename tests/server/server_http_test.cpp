// The server's endpoints over HTTP against the fake engine: response shapes,
// streaming, usage, tiers, lifecycle, tasks, metrics and disconnects.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "../sched/sched_test_util.h"
#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;

// What the scheduler library itself answers for a request, run alone on a
// fresh fake engine: the oracle for the HTTP path.
TaskResult RunDirect(TaskRequest request) {
  FakeEngine engine;
  SchedulerOptions so;
  so.clock = engine.ClockFunction();
  std::unique_ptr<Scheduler> scheduler = std::move(Scheduler::Create(engine, so)).value();
  TaskResult out;
  request.callbacks.on_done = [&](TaskId, const TaskResult& r) { out = r; };
  EXPECT_TRUE(scheduler->Submit(std::move(request)).ok());
  scheduler->WaitIdle();
  return out;
}

TaskRequest ChatRequest(const std::string& system, const std::string& user, int32_t max_tokens, uint64_t seed) {
  TaskRequest r;
  r.system_prompt = system;
  r.messages = {{"user", user}};
  r.max_tokens = max_tokens;
  r.sampling.seed = seed;
  return r;
}

json ChatBody(const std::string& user, int max_tokens, uint64_t seed) {
  return {{"model", "m"},
          {"messages", json::array({{{"role", "system"}, {"content", "You are terse."}},
                                    {{"role", "user"}, {"content", user}}})},
          {"max_tokens", max_tokens},
          {"seed", seed},
          {"temperature", 0.7},
          {"some_unknown_field", {1, 2, 3}}};
}

double MetricValue(const std::string& metrics, const std::string& series) {
  const size_t at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return -1.0;
  return std::stod(metrics.substr(at + series.size() + 2));
}

class ServerHttpTest : public ServerFixture {
 protected:
  // Polls /metrics until `series` reads `value`.
  void WaitMetric(const std::string& series, double value) const {
    while (MetricValue(Get("/metrics")->body, series) != value) std::this_thread::yield();
  }
};

TEST_F(ServerHttpTest, ChatCompletionMatchesTheSchedulerRunAlone) {
  StartServer();
  httplib::Result res = Post("/v1/chat/completions", ChatBody("Hello there", 12, 5));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = ParseJson(res->body);
  const TaskResult want = RunDirect(ChatRequest("You are terse.", "Hello there", 12, 5));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "valet");  // the served model's name, not the request's "m"
  EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(body["choices"][0]["message"]["content"], want.text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], want.stop_reason == StopReason::kMaxTokens ? "length" : "stop");
  EXPECT_EQ(body["usage"]["prompt_tokens"], want.metrics.prompt_tokens);
  EXPECT_EQ(body["usage"]["completion_tokens"], want.metrics.generated_tokens);
  EXPECT_EQ(body["usage"]["total_tokens"], want.metrics.prompt_tokens + want.metrics.generated_tokens);
}

TEST_F(ServerHttpTest, StreamedChatCarriesTheSameTextAndUsage) {
  StartServer();
  json req = ChatBody("Stream me", 20, 9);
  const std::string whole = ParseJson(Post("/v1/chat/completions", req)->body)["choices"][0]["message"]["content"];
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  httplib::Result res = Post("/v1/chat/completions", req);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  const SseEvents events = ParseSse(res->body);
  ASSERT_TRUE(events.well_formed) << res->body;
  ASSERT_TRUE(events.done);
  ASSERT_GE(events.chunks.size(), 3u);
  EXPECT_EQ(events.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 1 < events.chunks.size(); ++i) {
    const json& c = events.chunks[i];
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    if (c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, whole);
  EXPECT_EQ(events.chunks[events.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  const json& usage_chunk = events.chunks.back();
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_EQ(usage_chunk["usage"]["completion_tokens"], 20);
}

// logprobs end to end: one entry per generated token, whole or streamed, in
// each endpoint's shape; the fake's pieces are single bytes, so the tokens
// spell the text.
TEST_F(ServerHttpTest, LogprobsWholeAndStreamed) {
  StartServer();
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    json chat = ChatBody("Log me", 9, 4);
    chat["logprobs"] = true;
    chat["top_logprobs"] = 2;
    chat["stream"] = stream;
    json text = {{"prompt", "Log me"}, {"max_tokens", 9}, {"logprobs", 3}, {"stream", stream}};
    for (const json& body : {chat, text}) {
      const bool is_chat = body.contains("messages");
      httplib::Result res = Post(is_chat ? "/v1/chat/completions" : "/v1/completions", body);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      std::vector<json> choices;
      if (stream) {
        for (const json& c : ParseSse(res->body).chunks) choices.push_back(c["choices"][0]);
      } else {
        choices.push_back(ParseJson(res->body)["choices"][0]);
      }
      std::string content, spelled;
      size_t entries = 0;
      for (const json& c : choices) {
        content += is_chat ? c[stream ? "delta" : "message"].value("content", "") : c["text"].get<std::string>();
        if (c["logprobs"].is_null()) continue;
        const json& lp = c["logprobs"];
        const json& list = is_chat ? lp["content"] : lp["tokens"];
        for (size_t i = 0; i < list.size(); ++i, ++entries) {
          if (is_chat) {
            spelled += list[i]["token"].get<std::string>();
            EXPECT_EQ(list[i]["top_logprobs"].size(), 2u);
            EXPECT_LE(list[i]["logprob"].get<double>(), 0.0);
          } else {
            spelled += list[i].get<std::string>();
            EXPECT_EQ(lp["text_offset"][i], entries) << "offsets run on across chunks";
            EXPECT_LE(lp["top_logprobs"][i].size(), 4u);
          }
        }
      }
      EXPECT_EQ(entries, 9u);
      EXPECT_EQ(spelled, content);
    }
  }
}

std::string TextOf(const FakeEngine& engine, const std::vector<int32_t>& tokens) {
  std::string text;
  for (int32_t t : tokens) text += engine.TokenPiece(t);
  return text;
}

TEST_F(ServerHttpTest, CompletionsTakeTextAndMatchTheFakeEngine) {
  StartServer();
  const std::string prompt = "Once upon a time";
  const std::string want = TextOf(*engine_, ExpectedAlone(*engine_, prompt, 3, 10));
  for (const json& p : {json(prompt), json::array({prompt})}) {
    httplib::Result res = Post("/v1/completions", json{{"prompt", p}, {"max_tokens", 10}, {"seed", 3}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = ParseJson(res->body);
    EXPECT_EQ(body["object"], "text_completion");
    EXPECT_EQ(body["choices"][0]["text"], want) << p.dump();
    EXPECT_EQ(body["usage"]["prompt_tokens"], static_cast<int>(prompt.size()) + 1);  // + BOS
  }
}

TEST_F(ServerHttpTest, TokenIdPromptsAreFedExactly) {
  StartServer();
  // No BOS, and a BOS in the middle: no text tokenizes to these ids.
  std::vector<int32_t> ids = engine_->Tokenize("Once", false);
  ids.push_back(FakeEngine::kBos);
  const std::vector<int32_t> upon = engine_->Tokenize(" upon", false);
  ids.insert(ids.end(), upon.begin(), upon.end());
  const std::string want = TextOf(*engine_, ExpectedAlone(*engine_, ids, 3, 10));
  ASSERT_NE(want, TextOf(*engine_, ExpectedAlone(*engine_, engine_->Tokenize(TextOf(*engine_, ids), true), 3, 10)))
      << "the fake engine cannot tell re-tokenized text from exact ids here";
  for (const json& p : {json(ids), json::array({ids})}) {
    httplib::Result res = Post("/v1/completions", json{{"prompt", p}, {"max_tokens", 10}, {"seed", 3}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json body = ParseJson(res->body);
    EXPECT_EQ(body["choices"][0]["text"], want) << p.dump();
    EXPECT_EQ(body["usage"]["prompt_tokens"], static_cast<int>(ids.size()));
  }
}

TEST_F(ServerHttpTest, StreamedCompletionEndsWithDone) {
  StartServer();
  httplib::Result res =
      Post("/v1/completions", json{{"prompt", "abc"}, {"max_tokens", 5}, {"stream", true}, {"seed", 1}});
  ASSERT_TRUE(res);
  const SseEvents events = ParseSse(res->body);
  ASSERT_TRUE(events.well_formed && events.done) << res->body;
  std::string text;
  for (const json& c : events.chunks) {
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_FALSE(c.contains("usage"));
    text += c["choices"][0]["text"].get<std::string>();
  }
  std::string want;
  for (int32_t t : ExpectedAlone(*engine_, "abc", 1, 5)) want += engine_->TokenPiece(t);
  EXPECT_EQ(text, want);
  EXPECT_EQ(events.chunks.back()["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerHttpTest, StopStringEndsTheTextBeforeIt) {
  StartServer();
  std::string full;
  for (int32_t t : ExpectedAlone(*engine_, "stop test", 4, 30)) full += engine_->TokenPiece(t);
  const std::string stop = full.substr(10, 3);
  const size_t cut = full.find(stop);
  httplib::Result res =
      Post("/v1/completions", json{{"prompt", "stop test"}, {"max_tokens", 30}, {"seed", 4}, {"stop", stop}});
  ASSERT_TRUE(res);
  const json body = ParseJson(res->body);
  EXPECT_EQ(body["choices"][0]["text"], full.substr(0, cut));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServerHttpTest, SharedSystemPromptIsReportedAsCachedTokens) {
  StartServer();
  const json first = ParseJson(Post("/v1/chat/completions", ChatBody("one", 4, 1))->body);
  const json second = ParseJson(Post("/v1/chat/completions", ChatBody("two", 4, 1))->body);
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, second["usage"]["prompt_tokens"].get<int>());
}

TEST_F(ServerHttpTest, TierComesFromFieldPriorityOrHeader) {
  StartServer();
  struct Case {
    json extra;
    httplib::Headers headers;
    std::string endpoint;
    std::string tier;
  };
  const std::vector<Case> cases = {
      {{{"tier", "background_summary"}}, {}, "/v1/chat/completions", "background_summary"},
      {{{"priority", 5}}, {}, "/v1/chat/completions", "inline_suggestion"},
      {{{"priority", 100}}, {{"X-Valet-Tier", "foreground_chat"}}, "/v1/chat/completions", "offline_indexing"},
      {{}, {{"X-Valet-Tier", "offline_indexing"}}, "/v1/chat/completions", "offline_indexing"},
      {{}, {}, "/v1/chat/completions", "foreground_chat"},
      {{}, {}, "/v1/completions", "inline_suggestion"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    json body = cases[i].endpoint == "/v1/completions" ? json{{"prompt", "x"}} : ChatBody("x", 2, 1);
    body["max_tokens"] = 2;
    if (cases[i].extra.is_object()) body.update(cases[i].extra);
    httplib::Result res = Post(cases[i].endpoint, body, cases[i].headers);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json tasks = Tasks();
    ASSERT_EQ(tasks.size(), i + 1);
    EXPECT_EQ(tasks.back()["tier"], cases[i].tier) << i;
    EXPECT_EQ(tasks.back()["state"], "DONE");
    EXPECT_EQ(tasks.back()["tokens_done"], 2);
  }
}

TEST_F(ServerHttpTest, ChatArrivalParksIndexingVisiblyInTasksAndMetrics) {
  StartServer();
  gate_.Close();
  std::thread indexer([&] {
    httplib::Result r = Post("/v1/completions", json{{"prompt", "index me"}, {"max_tokens", 40}, {"tier", "offline_indexing"}});
    EXPECT_TRUE(r && r->status == 200);
  });
  gate_.WaitHeld();  // the indexer's first step is in the engine
  std::thread chat([&] {
    httplib::Result r = Post("/v1/chat/completions", ChatBody("urgent", 8, 2));
    EXPECT_TRUE(r && r->status == 200);
  });
  WaitTasks([](const json& t) { return t.size() == 2; });
  gate_.Open();
  chat.join();
  indexer.join();
  const json tasks = Tasks();
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0]["tier"], "offline_indexing");
  EXPECT_GE(tasks[0]["parks"].get<int>(), 1);
  EXPECT_EQ(tasks[1]["parks"], 0);
  const std::string metrics = Get("/metrics")->body;
  double parks = 0;
  for (const char* kind : {"resident", "snapshot_ram", "snapshot_disk", "partial", "full"}) {
    parks += MetricValue(metrics, std::string("valet_parks_total{kind=\"") + kind + "\"}");
  }
  EXPECT_GE(parks, 1.0);
  EXPECT_EQ(MetricValue(metrics, "valet_ttft_seconds_count{tier=\"foreground_chat\"}"), 1.0);
  EXPECT_EQ(MetricValue(metrics, "valet_ttft_seconds_count{tier=\"offline_indexing\"}"), 1.0);
  EXPECT_EQ(MetricValue(metrics, "valet_ttft_seconds_bucket{tier=\"foreground_chat\",le=\"+Inf\"}"), 1.0);
  EXPECT_EQ(MetricValue(metrics, "valet_generated_tokens_total{tier=\"offline_indexing\"}"), 40.0);
}

TEST_F(ServerHttpTest, LifecycleEventsAreOrderedAndGateWork) {
  StartServer();
  auto event = [&](const char* e) { return Post("/v1/lifecycle", json{{"event", e}}); };
  httplib::Result r = event("ON_PAUSE");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(ParseJson(r->body)["state"], "STARTED");
  ASSERT_EQ(event("ON_STOP")->status, 200);
  r = event("ON_PAUSE");
  ASSERT_EQ(r->status, 409);
  EXPECT_EQ(ParseJson(r->body)["state"], "CREATED");
  EXPECT_EQ(ParseJson(r->body)["error"]["code"], "invalid_lifecycle_transition");
  EXPECT_EQ(event("ON_HOLIDAY")->status, 400);
  ASSERT_EQ(event("ON_DESTROY")->status, 200);
  EXPECT_EQ(MetricValue(Get("/metrics")->body, "valet_lifecycle_state{state=\"DESTROYED\"}"), 1.0);
  // Nothing runs while destroyed: the request waits, visibly queued.
  std::thread summary([&] {
    httplib::Result s = Post("/v1/completions", json{{"prompt", "later"}, {"max_tokens", 3}, {"tier", "background_summary"}});
    EXPECT_TRUE(s && s->status == 200);
  });
  WaitTasks([](const json& t) { return t.size() == 1 && t[0]["state"] == "QUEUED"; });
  EXPECT_EQ(MetricValue(Get("/metrics")->body, "valet_queue_depth{tier=\"background_summary\"}"), 1.0);
  ASSERT_EQ(event("on_create")->status, 200);
  summary.join();
  EXPECT_EQ(Tasks()[0]["state"], "DONE");
}

// POST /v1/power: partial reports merge into the last one; a low battery holds
// the indexer (visibly queued) while the chat answers, charging lets it run.
TEST_F(ServerHttpTest, PowerEventsMergeAndGateTheIndexer) {
  StartServer();
  httplib::Result r = Post("/v1/power", json{{"charging", false}, {"battery_percent", 9}});
  ASSERT_EQ(r->status, 200) << r->body;
  r = Post("/v1/power", json{{"battery_low", true}});
  ASSERT_EQ(r->status, 200) << r->body;
  const json merged = ParseJson(r->body);
  EXPECT_EQ(merged["charging"], false);
  EXPECT_EQ(merged["battery_percent"], 9);
  EXPECT_EQ(merged["battery_low"], true);
  EXPECT_EQ(merged["power_save"], false);
  const std::string metrics = Get("/metrics")->body;
  EXPECT_EQ(MetricValue(metrics, "valet_battery_percent"), 9.0);
  EXPECT_EQ(MetricValue(metrics, "valet_battery_low"), 1.0);
  EXPECT_EQ(MetricValue(metrics, "valet_power_charging"), 0.0);
  for (const json& bad : {json::object(), json{{"charging", "yes"}}, json{{"battery_percent", 101}},
                          json{{"battery_percent", 5.5}}, json{{"voltage", 3.7}}, json::array()}) {
    httplib::Result b = Post("/v1/power", bad);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, 400) << bad.dump();
  }
  EXPECT_EQ(ParseJson(Post("/v1/power", json{{"power_save", false}})->body)["battery_percent"], 9)
      << "a refused report changed nothing";

  std::thread indexer([&] {
    httplib::Result s = Post("/v1/completions", json{{"prompt", "later"}, {"max_tokens", 3}, {"tier", "offline_indexing"}});
    EXPECT_TRUE(s && s->status == 200);
  });
  WaitTasks([](const json& t) { return t.size() == 1 && t[0]["state"] == "QUEUED"; });
  httplib::Result chat = Post("/v1/chat/completions",
                              json{{"messages", json::array({json{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}});
  ASSERT_EQ(chat->status, 200);
  EXPECT_EQ(Tasks()[0]["state"], "QUEUED");
  ASSERT_EQ(Post("/v1/power", json{{"charging", true}})->status, 200);
  indexer.join();
  EXPECT_EQ(Tasks()[0]["state"], "DONE");
}

TEST_F(ServerHttpTest, ModelsAndHealth) {
  ServerOptions o;
  o.model_name = "tiny-model";
  StartServer(o);
  const json models = ParseJson(Get("/v1/models")->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "tiny-model");
  EXPECT_EQ(models["data"][0]["context_length"], engine_->context_length());
  httplib::Result health = Get("/health");
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(ParseJson(health->body)["status"], "ok");
}

TEST_F(ServerHttpTest, TokenizeAnswersAsLlamaServerDoes) {
  StartServer();
  const std::string text = "Once upon";
  for (bool special : {false, true}) {
    httplib::Result res = Post("/tokenize", json{{"content", text}, {"add_special", special}});
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(ParseJson(res->body)["tokens"].get<std::vector<int32_t>>(), engine_->Tokenize(text, special));
  }
  EXPECT_EQ(ParseJson(Post("/tokenize", json{{"content", text}})->body)["tokens"].size(), text.size());
  for (const json& bad : {json{{"text", text}}, json{{"content", 5}}, json{{"content", text}, {"add_special", "yes"}}}) {
    httplib::Result res = Post("/tokenize", bad);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad.dump();
    EXPECT_TRUE(ParseJson(res->body)["error"].is_object()) << res->body;
  }
}

// Connects, sends a request and closes at once, without reading a reply.
// Sends a request on a raw socket, left open for the caller to close.
int SendRaw(int port, const std::string& path, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  return fd;
}

TEST_F(ServerHttpTest, ClientThatLeavesWhileQueuedCancelsItsTask) {
  StartServer();
  gate_.Close();
  const int fd = SendRaw(server_->port(), "/v1/chat/completions", ChatBody("bye", 50, 1).dump());
  WaitTasks([](const json& t) { return t.size() == 1; });
  close(fd);
  // The task's first step is held in the engine; the cancel applies after it.
  WaitMetric("valet_client_disconnects_total", 1.0);
  gate_.Open();
  scheduler_->WaitIdle();
  EXPECT_EQ(scheduler_->Stats().cancelled, 1);
  EXPECT_EQ(Tasks()[0]["state"], "CANCELLED");
}

TEST_F(ServerHttpTest, ClientThatLeavesMidStreamCancelsItsTask) {
  StartServer();
  gate_.Close();
  gate_.Allow(1);  // the prompt's one step: it samples the first token
  std::thread client([&] {
    httplib::Client c = Client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.set_header("Content-Type", "application/json");
    req.body = json{{"prompt", "stream then leave"}, {"max_tokens", 200}, {"stream", true}}.dump();
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
    c.send(req);  // fails: the receiver gave up after the first chunk
  });
  client.join();
  WaitMetric("valet_client_disconnects_total", 1.0);
  gate_.Open();
  scheduler_->WaitIdle();
  const json task = Tasks()[0];
  EXPECT_EQ(task["state"], "CANCELLED");
  EXPECT_LT(task["tokens_done"].get<int>(), 200);
  EXPECT_EQ(scheduler_->Stats().cancelled, 1);
}

}  // namespace
}  // namespace valet::testing
