// Bad input over HTTP: every error is an OpenAI-style JSON body with the
// right status, nothing crashes, and under a concurrent mix of good and bad
// requests every good one completes. Plus UTF-8 safe streaming.
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;

json Chat(const std::string& user, int max_tokens) {
  return {{"messages", json::array({{{"role", "user"}, {"content", user}}})}, {"max_tokens", max_tokens}};
}

// Checks the {"error": {"message", "type", "param", "code"}} shape.
void ExpectError(const httplib::Result& res, int status, const std::string& param = "") {
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, status) << res->body;
  const json body = ParseJson(res->body);
  ASSERT_TRUE(body.is_object() && body.contains("error")) << res->body;
  const json& e = body["error"];
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param"));
  EXPECT_TRUE(e["code"].is_string() && !e["code"].get<std::string>().empty()) << res->body;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << res->body;
  }
}

class ServerErrorsTest : public ServerFixture {};

TEST_F(ServerErrorsTest, MalformedJsonAndWrongTypesAre400) {
  StartServer();
  const std::vector<std::pair<std::string, std::string>> chat_cases = {
      {"{", ""},
      {"[]", ""},
      {"null", ""},
      {"\xff\xfe", ""},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1.5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tier": "urgent"})", "tier"},
      {R"({"messages": [{"role": "user", "content": "x"}], "priority": "high"})", "priority"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 2.5})", "presence_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 1e3})", "seed"},
  };
  for (const auto& [body, param] : chat_cases) {
    SCOPED_TRACE(body);
    ExpectError(Post("/v1/chat/completions", body), 400, param);
  }
  for (const char* body : {R"({"prompt": {}})", R"({"prompt": [[1, 2], [3]]})", R"({"prompt": [-1]})",
                           R"({"prompt": ""})", R"({"max_tokens": 3})"}) {
    SCOPED_TRACE(body);
    ExpectError(Post("/v1/completions", std::string(body)), 400, "prompt");
  }
  ExpectError(Post("/v1/chat/completions", Chat("x", 2), {{"X-Valet-Tier", "vip"}}), 400, "X-Valet-Tier");
  ExpectError(Post("/v1/lifecycle", std::string("{\"event\": 3}")), 400, "event");
  EXPECT_EQ(scheduler_->Stats().submitted, 0);
}

TEST_F(ServerErrorsTest, BodyOverTheLimitIs413) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  ExpectError(Post("/v1/chat/completions", Chat(std::string(4096, 'a'), 2)), 413);
  ASSERT_EQ(Post("/v1/chat/completions", Chat("short", 2))->status, 200);
}

TEST_F(ServerErrorsTest, TierOverItsTaskLimitIs429WithRetryAfter) {
  ServerOptions o;
  o.max_tasks_per_tier[static_cast<size_t>(Tier::kOfflineIndexing)] = 1;
  StartServer(o);
  gate_.Close();
  std::thread first([&] {
    httplib::Result r = Post("/v1/completions", json{{"prompt", "a"}, {"max_tokens", 4}, {"tier", "offline_indexing"}});
    EXPECT_TRUE(r && r->status == 200);
  });
  gate_.WaitHeld();
  httplib::Result second =
      Post("/v1/completions", json{{"prompt", "b"}, {"max_tokens", 4}, {"tier", "offline_indexing"}});
  ExpectError(second, 429);
  EXPECT_EQ(second->get_header_value("Retry-After"), "1");
  EXPECT_EQ(ParseJson(second->body)["error"]["code"], "queue_full");
  gate_.Open();
  first.join();
  // Room again once the first finished.
  EXPECT_EQ(Post("/v1/completions", json{{"prompt", "c"}, {"max_tokens", 4}, {"tier", "offline_indexing"}})->status,
            200);
}

TEST_F(ServerErrorsTest, PromptOverTheContextIs400NamingTheNumbers) {
  FakeEngineOptions eo;
  eo.context_length = 64;
  StartServer({}, eo);
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    httplib::Result res = Post("/v1/completions", json{{"prompt", std::string(100, 'x')}, {"max_tokens", 10},
                                                       {"stream", stream}});
    ExpectError(res, 400);
    const std::string message = ParseJson(res->body)["error"]["message"];
    EXPECT_NE(message.find("101"), std::string::npos) << message;  // 100 bytes + BOS
    EXPECT_NE(message.find("64"), std::string::npos) << message;
    EXPECT_EQ(ParseJson(res->body)["error"]["code"], "context_length_exceeded");
  }
  ExpectError(Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 64}}), 400);
}

// Without max_tokens the answer runs to the end of the context, as OpenAI's
// and llama-server's do: a prompt near the context is a 200 with "length",
// not a 400 naming a default the client never sent.
TEST_F(ServerErrorsTest, NoMaxTokensNearTheContextEndsWithLength) {
  FakeEngineOptions eo;
  eo.context_length = 64;
  StartServer({}, eo);
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    const json bodies[] = {
        {{"prompt", std::string(60, 'x')}, {"stream", stream}, {"stream_options", {{"include_usage", stream}}}},
        {{"messages", {{{"role", "user"}, {"content", "hello"}}}}, {"stream", stream},
         {"stream_options", {{"include_usage", stream}}}}};
    for (const json& body : bodies) {
      const bool chat = body.contains("messages");
      httplib::Result res = Post(chat ? "/v1/chat/completions" : "/v1/completions", body);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      json usage, finish;
      if (stream) {
        const SseEvents events = ParseSse(res->body);
        ASSERT_TRUE(events.done && events.chunks.size() >= 2);
        usage = events.chunks.back()["usage"];
        finish = events.chunks[events.chunks.size() - 2]["choices"][0]["finish_reason"];
      } else {
        const json reply = ParseJson(res->body);
        usage = reply["usage"];
        finish = reply["choices"][0]["finish_reason"];
      }
      EXPECT_EQ(finish, "length");
      EXPECT_EQ(usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>(), 64) << usage.dump();
      if (!chat) {
        EXPECT_EQ(usage["completion_tokens"], 3);  // 60 bytes + BOS
      }
    }
  }
}

// The scheduler refuses a task that cannot fit the KV pool even alone; it
// ends FAILED through on_done, after Submit handed out its id.
TEST_F(ServerErrorsTest, RequestOverTheKvPoolIs400NamingTheNumbers) {
  FakeEngineOptions eo;
  eo.kv_bytes_per_token = 1000;
  eo.pool_capacity_bytes = 50'000;  // 50 tokens; the context (4096) is not the limit
  StartServer({}, eo);
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream);
    httplib::Result res = Post("/v1/completions", json{{"prompt", std::string(100, 'x')}, {"max_tokens", 10},
                                                       {"stream", stream}});
    ExpectError(res, 400);
    const std::string message = ParseJson(res->body)["error"]["message"];
    EXPECT_NE(message.find("111 tokens"), std::string::npos) << message;  // 100 bytes + BOS + 10
    EXPECT_NE(message.find("50000"), std::string::npos) << message;
    EXPECT_EQ(ParseJson(res->body)["error"]["code"], "context_length_exceeded");
  }
  EXPECT_EQ(Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 8}})->status, 200);
  EXPECT_EQ(scheduler_->Stats().failed, 2);
}

TEST_F(ServerErrorsTest, ApiKeyIsRequiredWhenSet) {
  ServerOptions o;
  o.api_key = "s3cret";
  StartServer(o);
  ExpectError(Post("/v1/chat/completions", Chat("x", 2)), 401);
  ExpectError(Post("/v1/chat/completions", Chat("x", 2), {{"Authorization", "Bearer s3creT"}}), 401);
  ExpectError(Post("/v1/chat/completions", Chat("x", 2), {{"Authorization", "Bearer s3cret2"}}), 401);
  ExpectError(Get("/metrics"), 401);
  ExpectError(Post("/tokenize", json{{"content", "x"}}), 401);
  EXPECT_EQ(Post("/v1/chat/completions", Chat("x", 2), {{"Authorization", "Bearer s3cret"}})->status, 200);
  EXPECT_EQ(Get("/health")->status, 200);
}

TEST_F(ServerErrorsTest, UnknownRouteIs404Json) {
  StartServer();
  ExpectError(Get("/v1/nothing"), 404);
}

// A few hundred requests from concurrent clients, a third of them broken in
// different ways: every broken one gets a 4xx, every valid one completes.
TEST_F(ServerErrorsTest, ConcurrentMixOfValidAndMalformedRequests) {
  ServerOptions o;
  o.max_tasks_per_tier = {1000, 1000, 1000, 1000};
  StartServer(o);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 42;
  std::atomic<int> valid{0}, valid_ok{0}, invalid{0}, invalid_4xx{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(failures_mu);
    failures.push_back(std::move(what));
  };
  auto worker = [&](int t) {
    httplib::Client c = Client();
    std::mt19937 rng(static_cast<uint32_t>(t));
    for (int i = 0; i < kPerThread; ++i) {
      const int kind = (t + i) % 6;
      if (kind == 0 || kind == 1 || kind == 5) {
        ++valid;
        json body = kind == 0 ? Chat("hello " + std::to_string(i), 8)
                              : json{{"prompt", json::array({70, 71, 72})}, {"max_tokens", 8}};
        if (kind == 1) body["stream"] = true;
        if (kind == 5) body["tier"] = "offline_indexing";
        const std::string path = kind == 0 ? "/v1/chat/completions" : "/v1/completions";
        httplib::Result r = c.Post(path.c_str(), body.dump(), "application/json");
        bool ok = r && r->status == 200;
        if (ok && kind == 1) {
          const SseEvents ev = ParseSse(r->body);
          ok = ev.well_formed && ev.done && ev.chunks.back()["choices"][0]["finish_reason"] == "length";
        } else if (ok) {
          ok = ParseJson(r->body)["usage"]["completion_tokens"] == 8;
        }
        if (ok) ++valid_ok; else fail(path + " " + (r ? r->body : std::string("no response")));
        continue;
      }
      ++invalid;
      std::string body;
      if (kind == 2) body = Chat("cut", 4).dump().substr(0, 10 + i % 7);
      if (kind == 3) body = R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "many"})";
      if (kind == 4) {
        body.resize(1 + rng() % 64);
        for (char& ch : body) ch = static_cast<char>(rng());
      }
      httplib::Result r = c.Post("/v1/chat/completions", body, "application/json");
      if (r && r->status >= 400 && r->status < 500) ++invalid_4xx; else fail("bad request got " + (r ? std::to_string(r->status) : "nothing"));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(valid_ok.load(), valid.load());
  EXPECT_EQ(invalid_4xx.load(), invalid.load());
  EXPECT_EQ(valid.load() + invalid.load(), kThreads * kPerThread);
  scheduler_->WaitIdle();
  const SchedulerStats stats = scheduler_->Stats();
  EXPECT_EQ(stats.done, valid.load());
  EXPECT_EQ(stats.failed + stats.cancelled, 0);
  EXPECT_EQ(Get("/health")->status, 200);
}

// Emits a fixed byte script instead of its sampled tokens, one byte per
// token, so multi-byte characters arrive split across tokens.
class ScriptedEngine : public FakeEngine {
 public:
  explicit ScriptedEngine(std::string script) : script_(std::move(script)) {}
  Result<StepResult> Step(std::span<const StepItem> items) override {
    Result<StepResult> r = FakeEngine::Step(items);
    if (!r.ok()) return r;
    for (StepOutput& out : r->outputs) {
      size_t& pos = position_[out.seq];
      out.token = Tokenize(std::string(1, script_[pos++ % script_.size()]), false)[0];
    }
    return r;
  }

 private:
  std::string script_;
  std::map<SequenceId, size_t> position_;
};

constexpr char kScript[] = "h\xC3\xA9llo w\xC3\xB6rld \xE2\x82\xAC \xF0\x9F\x98\x80 ";  // "héllo wörld € 😀 "

class ServerUtf8Test : public ServerFixture {
 protected:
  std::unique_ptr<FakeEngine> MakeEngine(const FakeEngineOptions&) override {
    return std::make_unique<ScriptedEngine>(kScript);
  }
};

TEST_F(ServerUtf8Test, StreamedTextArrivesWholeWhereverTokensSplitCharacters) {
  StartServer();
  const std::string script = kScript;
  // Lengths that end on a character boundary (23: the whole script). Each
  // token's text is sent as it arrives, so the chunks follow the tokens'
  // splits; the assembler's unit tests cover every split.
  for (int n : {1, 6, 14, 18, 23}) {
    SCOPED_TRACE(n);
    const json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                       {"max_tokens", n},
                       {"stream", true}};
    httplib::Result res = Post("/v1/chat/completions", body);
    ASSERT_TRUE(res);
    const SseEvents events = ParseSse(res->body);
    ASSERT_TRUE(events.well_formed && events.done) << res->body;
    std::string text;
    for (const json& c : events.chunks) {
      const json& delta = c["choices"][0]["delta"];
      if (delta.contains("content")) text += delta["content"].get<std::string>();
    }
    // A chunk ending inside a character would have had its bytes replaced by U+FFFD.
    EXPECT_EQ(text, script.substr(0, n));
  }
}

}  // namespace
}  // namespace valet::testing
