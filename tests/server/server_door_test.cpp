// The HTTP door gives nothing away (issue 37): a reply's size does not grow
// with what the request carries, slots go to clients that talk, and a client
// that half-closes after its request still gets the answer. Every wait is on
// an event (a reply, an EOF, an interim response); none is on time.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

#include "raw_http.h"
#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;

std::string PostRequest(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string GetRequest(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

json Chat(const std::string& user, int max_tokens, bool stream) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", user}}})}, {"max_tokens", max_tokens},
               {"seed", 3}};
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

// The text a chat stream carries, from its chunks' deltas.
std::string StreamedText(const SseEvents& events) {
  std::string text;
  for (const json& c : events.chunks) {
    if (c.contains("choices") && !c["choices"].empty()) text += c["choices"][0]["delta"].value("content", "");
  }
  return text;
}

class ServerDoorTest : public ServerFixture {
 protected:
  static constexpr const char* kModel = "served-model";
  void Start(ServerOptions o = {}) {
    o.model_name = kModel;
    StartServer(std::move(o));
  }
};

// ---- 4. Nothing a client sends is echoed unbounded.

TEST_F(ServerDoorTest, AStreamsSizeFollowsTheGeneratedTextNotTheRequest) {
  ServerOptions o;
  o.max_body_bytes = size_t{4} << 20;
  Start(o);
  json small = Chat("tell me", 24, /*stream=*/true);
  small["model"] = "m";
  small["user"] = "u";
  json big = small;
  big["model"] = std::string(size_t{1} << 20, 'M');
  big["user"] = std::string(100'000, 'U');
  big["metadata"] = {{"note", std::string(100'000, 'N')}};
  const std::string big_body = big.dump();

  httplib::Result small_reply = Post("/v1/chat/completions", small);
  httplib::Result big_reply = Post("/v1/chat/completions", big_body);
  ASSERT_TRUE(small_reply && big_reply);
  ASSERT_EQ(big_reply->status, 200) << big_reply->body.substr(0, 300);
  const SseEvents events = ParseSse(big_reply->body);
  ASSERT_TRUE(events.well_formed && events.done);
  for (const json& chunk : events.chunks) EXPECT_EQ(chunk["model"], kModel);
  // Bytes per event are a small constant (the envelope) plus the text it carries.
  const std::string text = StreamedText(events);
  constexpr size_t kPerEvent = 512;
  EXPECT_LE(big_reply->body.size(), (events.chunks.size() + 1) * kPerEvent + text.size());
  // The same answer to a request 1.2 MB smaller: the same bytes, give or take
  // the digits of ids and clocks.
  EXPECT_EQ(StreamedText(ParseSse(small_reply->body)), text);
  EXPECT_LE(big_reply->body.size(), small_reply->body.size() + 64);
  EXPECT_GT(big_body.size(), 100 * big_reply->body.size());

  // Whole, too.
  big.erase("stream");
  big.erase("stream_options");
  httplib::Result whole = Post("/v1/chat/completions", big);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200);
  const json body = ParseJson(whole->body);
  EXPECT_EQ(body["model"], kModel);
  EXPECT_LE(whole->body.size(), kPerEvent + body["choices"][0]["message"]["content"].get<std::string>().size());
}

TEST_F(ServerDoorTest, ErrorsQuoteAtMostAShortPrefixOfWhatTheClientSent) {
  ServerOptions o;
  o.max_body_bytes = size_t{4} << 20;
  Start(o);
  constexpr size_t kSmallReply = 1024;
  const std::string huge(size_t{1} << 20, 'R');
  json role = Chat("x", 4, false);
  role["messages"][0]["role"] = huge;
  httplib::Result r = Post("/v1/chat/completions", role);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_LE(r->body.size(), kSmallReply) << r->body.substr(0, 300);
  EXPECT_NE(ParseJson(r->body)["error"]["message"].get<std::string>().find("(1048576 bytes)"), std::string::npos);

  json tools = Chat("x", 4, false);
  tools["tools"] = json::array({{{"type", "function"}, {"function", {{"name", std::string(100'000, 'T')}}}}});
  r = Post("/v1/chat/completions", tools);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_LE(r->body.size(), kSmallReply);

  r = Post("/v1/chat/completions", Chat("x", 4, false), {{"X-Valet-Tier", std::string(8000, 'H')}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_LE(r->body.size(), kSmallReply);

  r = Get("/" + std::string(10'000, 'P'));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_LE(r->body.size(), kSmallReply);
}

// ---- 5. Slots go to clients that talk.

TEST_F(ServerDoorTest, ASilentConnectionIsClosedAtTheHeaderDeadline) {
  ServerOptions o;
  o.header_timeout = std::chrono::milliseconds(50);
  Start(o);
  RawConnection silent(server_->port());
  RawConnection partial(server_->port());
  ASSERT_TRUE(partial.Send("GET /health HTTP/1.1\r\nHo"));
  EXPECT_EQ(silent.ReadAll(), "");  // closed, without a word: it asked nothing
  const std::string reply = partial.ReadAll();
  EXPECT_EQ(reply.rfind("HTTP/1.1 408 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("request_timeout"), std::string::npos);
}

TEST_F(ServerDoorTest, AFullTableClosesItsIdlestConnectionForANewcomer) {
  ServerOptions o;
  o.max_connections = 3;
  Start(o);
  RawConnection keep_alive(server_->port());  // between requests: idle since its reply
  ASSERT_TRUE(keep_alive.Send(GetRequest("/health")));
  ASSERT_TRUE(keep_alive.ReadResponse());
  RawConnection silent(server_->port());  // owes its head since it connected, after that reply
  RawConnection busy(server_->port());    // its head is in, its body awaited: not idle
  const std::string body = json{{"prompt", "still here"}, {"max_tokens", 2}}.dump();
  const std::string request = PostRequest("/v1/completions", body, "Expect: 100-continue\r\n");
  ASSERT_TRUE(busy.Send(request.substr(0, request.size() - body.size())));
  ASSERT_TRUE(busy.ReadUntil("100 Continue"));

  httplib::Result health = Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(keep_alive.ReadAll(), "");  // the idlest made room
  ASSERT_TRUE(busy.Send(body));
  std::optional<RawResponse> answer = busy.ReadResponse();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200) << answer->body;
}

// Each connection is a descriptor on both ends, both in this process.
bool RaiseOpenFileLimit(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= wanted) return true;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted) limit.rlim_max = wanted;  // root may
  limit.rlim_cur = wanted;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

TEST_F(ServerDoorTest, AThousandSilentConnectionsLeaveHealthLifecycleAndChatAnswered) {
  constexpr int kSilent = 1000;
  if (!RaiseOpenFileLimit(2 * kSilent + 256)) GTEST_SKIP() << "cannot raise RLIMIT_NOFILE";
  ServerOptions o;
  o.max_connections = kSilent;
  // Room for every handshake: connections are then accepted in the order
  // they were made, so the first silent one is the idlest.
  o.listen_backlog = 2 * kSilent;
  Start(o);
  std::vector<std::unique_ptr<RawConnection>> silent;
  for (int i = 0; i < kSilent; ++i) {
    silent.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(silent.back()->connected()) << i;
  }
  httplib::Result health = Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;
  EXPECT_EQ(silent.front()->ReadAll(), "");  // closed to make room
  EXPECT_EQ(Post("/v1/lifecycle", json{{"event", "ON_PAUSE"}})->status, 200);
  EXPECT_EQ(Post("/v1/lifecycle", json{{"event", "ON_RESUME"}})->status, 200);
  httplib::Result chat = Post("/v1/chat/completions", Chat("hello", 3, false));
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 200) << chat->body;
}

// ---- 6. Half-closed clients get their answer.

TEST_F(ServerDoorTest, AHalfClosedClientIsAnsweredThenClosed) {
  Start();
  {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send(GetRequest("/health") + GetRequest("/v1/models")));  // pipelined, then EOF
    ASSERT_TRUE(c.ShutdownWrite());
    std::optional<RawResponse> health = c.ReadResponse();
    std::optional<RawResponse> models = c.ReadResponse();
    ASSERT_TRUE(health && models);
    EXPECT_EQ(ParseJson(health->body)["status"], "ok");
    EXPECT_EQ(ParseJson(models->body)["data"][0]["id"], kModel);
    EXPECT_EQ(c.ReadAll(), "");
  }
  {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send(PostRequest("/v1/chat/completions", Chat("hi", 5, false).dump())));
    ASSERT_TRUE(c.ShutdownWrite());
    std::optional<RawResponse> r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(ParseJson(r->body)["usage"]["completion_tokens"], 5);
    EXPECT_EQ(c.ReadAll(), "");
  }
  EXPECT_EQ(scheduler_->Stats().cancelled, 0);
}

// While the answer is pending the server probes the half-closed client (an
// interim 100 Continue) and, finding it there, runs the stream to its end.
TEST_F(ServerDoorTest, AHalfClosedClientsStreamRunsToItsEnd) {
  Start();
  gate_.Close();
  RawConnection c(server_->port());
  ASSERT_TRUE(c.Send(PostRequest("/v1/chat/completions", Chat("stream it", 6, true).dump())));
  ASSERT_TRUE(c.ShutdownWrite());
  ASSERT_TRUE(c.ReadUntil("HTTP/1.1 100 Continue\r\n\r\n"));
  gate_.Open();
  std::optional<RawResponse> r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  const SseEvents events = ParseSse(r->body);
  ASSERT_TRUE(events.well_formed && events.done) << r->body;
  ASSERT_GE(events.chunks.size(), 2u);
  EXPECT_EQ(events.chunks[events.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(events.chunks.back()["usage"]["completion_tokens"], 6);
  EXPECT_EQ(c.ReadAll(), "");
  scheduler_->WaitIdle();
  EXPECT_EQ(scheduler_->Stats().cancelled, 0);
}

// EOF in mid-stream: the probe is an SSE comment, which readers skip.
TEST_F(ServerDoorTest, AClientThatHalfClosesMidStreamGetsTheRest) {
  Start();
  gate_.Close();
  gate_.Allow(1);  // the prompt's step: the first token, then the stream waits
  RawConnection c(server_->port());
  ASSERT_TRUE(c.Send(PostRequest("/v1/completions", json{{"prompt", "go on"}, {"max_tokens", 8}, {"stream", true}}.dump())));
  ASSERT_TRUE(c.ReadUntil("data: "));
  ASSERT_TRUE(c.ShutdownWrite());
  ASSERT_TRUE(c.ReadUntil("\r\n:\n\n\r\n"));  // the probe, as one chunk
  gate_.Open();
  std::optional<RawResponse> r = c.ReadResponse();
  ASSERT_TRUE(r);
  const SseEvents events = ParseSse(r->body);
  ASSERT_TRUE(events.well_formed && events.done) << r->body;
  EXPECT_EQ(events.chunks.back()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c.ReadAll(), "");
  scheduler_->WaitIdle();
  EXPECT_EQ(scheduler_->Stats().cancelled, 0);
}

TEST_F(ServerDoorTest, AClientThatHalfClosesBeforeAWholeRequestIsJustClosed) {
  Start();
  const std::string post = PostRequest("/v1/completions", R"({"prompt": "cut short"})");
  // A head cut short, and a whole head with its body cut short.
  for (const std::string& part : {std::string("GET /health HTTP/1.1\r\nHost: x\r\n"), post.substr(0, post.size() - 5)}) {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send(part));
    ASSERT_TRUE(c.ShutdownWrite());
    EXPECT_EQ(c.ReadAll(), "") << part;
  }
  EXPECT_TRUE(Tasks().empty());
}

}  // namespace
}  // namespace valet::testing
