// The server under the load it exists to order and under hostile clients:
// waiting requests and slow clients hold no thread, malformed and oversize
// requests get their status, pipelining and HTTP/1.0 work, Stop ends streams
// cleanly.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "raw_http.h"
#include "server_fixture.h"

namespace valet::testing {
namespace {

using nlohmann::json;

class ServerLoadTest : public ServerFixture {};

std::string PostRequest(const std::string& path, const std::string& body, const std::string& version = "HTTP/1.1",
                        const std::string& extra_headers = "") {
  return "POST " + path + " " + version + "\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string GetRequest(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

std::string ErrorCode(const RawResponse& r) { return ParseJson(r.body)["error"].value("code", ""); }

TEST_F(ServerLoadTest, ControlEndpointsAndChatAnswerWhileBackgroundWaitsAndSlowClientsHold) {
  StartServer();
  gate_.Close();  // nothing finishes: every indexing request keeps waiting
  constexpr int kIndexers = 40;
  constexpr int kSlow = 32;
  std::vector<std::unique_ptr<RawConnection>> indexers, slow;
  for (int i = 0; i < kIndexers; ++i) {
    indexers.push_back(std::make_unique<RawConnection>(server_->port()));
    const json body = {{"prompt", "document " + std::to_string(i)}, {"max_tokens", 4}, {"tier", "offline_indexing"}};
    ASSERT_TRUE(indexers.back()->Send(PostRequest("/v1/completions", body.dump())));
  }
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(slow.back()->Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"));  // and no more
  }
  // More requests wait than the old server had threads, and all are queued.
  WaitTasks([](const json& t) { return t.size() == kIndexers; });
  EXPECT_EQ(Get("/health")->status, 200);
  EXPECT_EQ(Get("/metrics")->status, 200);
  EXPECT_EQ(Post("/v1/lifecycle", json{{"event", "ON_PAUSE"}})->status, 200);
  EXPECT_EQ(Post("/v1/lifecycle", json{{"event", "ON_RESUME"}})->status, 200);

  std::thread chat([&] {
    const json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 3}};
    httplib::Result r = Post("/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  });
  WaitTasks([](const json& t) { return t.size() == kIndexers + 1; });
  gate_.Open();
  chat.join();
  for (auto& c : indexers) {
    std::optional<RawResponse> r = c->ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  }
}

TEST_F(ServerLoadTest, AClientTooSlowToSendItsRequestGets408) {
  ServerOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  StartServer(o);
  RawConnection c(server_->port());
  ASSERT_TRUE(c.Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{\"pro"));
  const std::string reply = c.ReadAll();  // the server closes after its answer
  EXPECT_EQ(reply.rfind("HTTP/1.1 408 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("request_timeout"), std::string::npos);
}

TEST_F(ServerLoadTest, AnIdleKeepAliveConnectionIsClosed) {
  ServerOptions o;
  o.idle_timeout = std::chrono::milliseconds(200);
  StartServer(o);
  RawConnection c(server_->port());
  ASSERT_TRUE(c.Send(GetRequest("/health")));
  std::optional<RawResponse> r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(c.ReadAll(), "");  // closed by the server, without a reply
}

TEST_F(ServerLoadTest, ChunkedBodiesAreDecodedAndCountedAgainstTheLimit) {
  ServerOptions o;
  o.max_body_bytes = 4096;
  StartServer(o);
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  {
    const std::string body = json{{"prompt", "chunked"}, {"max_tokens", 3}}.dump();
    RawConnection c(server_->port());
    const size_t half = body.size() / 2;
    std::string chunks;
    for (const std::string& piece : {body.substr(0, half), body.substr(half)}) {
      char size[16];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      chunks += size + piece + "\r\n";
    }
    ASSERT_TRUE(c.Send(head + chunks + "0\r\n\r\n"));
    std::optional<RawResponse> r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(ParseJson(r->body)["usage"]["completion_tokens"], 3);
  }
  {
    RawConnection c(server_->port());
    ASSERT_TRUE(c.Send(head));
    const std::string chunk = "3e8\r\n" + std::string(1000, 'a') + "\r\n";
    for (int i = 0; i < 10 && c.Send(chunk); ++i) {
    }
    std::optional<RawResponse> r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(ErrorCode(*r), "body_too_large");
  }
}

TEST_F(ServerLoadTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  RawConnection c(server_->port());
  const std::string completion = json{{"prompt", "pipelined"}, {"max_tokens", 2}}.dump();
  ASSERT_TRUE(c.Send(GetRequest("/health") + PostRequest("/v1/completions", completion) + GetRequest("/v1/models")));
  std::optional<RawResponse> health = c.ReadResponse(), done = c.ReadResponse(), models = c.ReadResponse();
  ASSERT_TRUE(health && done && models);
  EXPECT_EQ(ParseJson(health->body)["status"], "ok");
  EXPECT_EQ(ParseJson(done->body)["object"], "text_completion");
  EXPECT_EQ(ParseJson(models->body)["object"], "list");
}

TEST_F(ServerLoadTest, AnHttp10StreamEndsWithTheConnectionNotChunks) {
  StartServer();
  RawConnection c(server_->port());
  const std::string body = json{{"prompt", "old client"}, {"max_tokens", 3}, {"stream", true}}.dump();
  ASSERT_TRUE(c.Send(PostRequest("/v1/completions", body, "HTTP/1.0")));
  const std::string reply = c.ReadAll();
  const size_t head_end = reply.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << reply;
  const std::string head = reply.substr(0, head_end);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  const SseEvents events = ParseSse(reply.substr(head_end + 4));
  EXPECT_TRUE(events.well_formed);
  EXPECT_TRUE(events.done);
}

TEST_F(ServerLoadTest, MalformedRequestsGetTheirStatusAndTheServerLivesOn) {
  StartServer();
  struct Case {
    std::string request;
    int status;
    const char* code;
  };
  const Case cases[] = {
      {"GARBAGE\r\n\r\n", 400, "bad_request"},
      {"GET /health HTTP/2.0\r\n\r\n", 505, "http_version_not_supported"},
      {"GET /health HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "bad_request"},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400,
       "bad_request"},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "bad_request"},
      {"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "unsupported_transfer_encoding"},
      {"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, "body_too_large"},
      {"GET /health HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n", 431, "headers_too_large"},
      {"GET /health HTTP/1.1\r\nExpect: teapot\r\n\r\n", 417, "expectation_failed"},
      {"DELETE /health HTTP/1.1\r\n\r\n", 405, "method_not_allowed"},
  };
  for (const Case& c : cases) {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.Send(c.request));
    std::optional<RawResponse> r = conn.ReadResponse();
    ASSERT_TRUE(r) << c.request.substr(0, 60);
    EXPECT_EQ(r->status, c.status) << c.request.substr(0, 60);
    EXPECT_EQ(ErrorCode(*r), c.code) << r->body;
  }
  EXPECT_EQ(Get("/health")->status, 200);
}

// Only when no connection is idle: an idle one would be closed for the
// newcomer (server_door_test.cpp).
TEST_F(ServerLoadTest, ConnectionsPastTheLimitAre503WhenNoneIsIdle) {
  ServerOptions o;
  o.max_connections = 3;
  StartServer(o);
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawConnection>(server_->port()));
    // Busy: its head is in and the body is awaited. The 100 Continue proves
    // the connection was accepted before the next one.
    ASSERT_TRUE(held.back()->Send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                  "Content-Length: 100\r\n\r\n"));
    ASSERT_TRUE(held.back()->ReadUntil("100 Continue"));
  }
  RawConnection extra(server_->port());
  std::optional<RawResponse> r = extra.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(ErrorCode(*r), "too_many_connections");
  held.clear();
  // Served again once the server has seen those connections close.
  while (true) {
    httplib::Result health = Get("/health");
    if (health && health->status == 200) break;
  }
}

TEST_F(ServerLoadTest, StopEndsAStreamWithAnErrorEventAndDone) {
  ServerOptions o;
  o.stop_grace = std::chrono::minutes(5);
  StartServer(o);
  gate_.Close();
  gate_.Allow(1);  // the prompt's step: the first token, then the stream waits
  const int port = server_->port();
  RawConnection c(port);
  const std::string body = json{{"prompt", "interrupted"}, {"max_tokens", 100}, {"stream", true}}.dump();
  ASSERT_TRUE(c.Send(PostRequest("/v1/completions", body, "HTTP/1.0")));
  ASSERT_TRUE(c.ReadUntil("data: "));
  // Stop cancels the server's tasks before it closes the listening socket:
  // once connecting fails, the cancellation is queued and the engine may go on.
  std::thread opener([&] {
    while (RawConnection(port).connected()) {
    }
    gate_.Open();
  });
  server_->Stop();
  opener.join();
  const std::string reply = c.ReadAll();
  const SseEvents events = ParseSse(reply.substr(reply.find("\r\n\r\n") + 4));
  ASSERT_TRUE(events.well_formed) << reply;
  EXPECT_TRUE(events.done);
  ASSERT_FALSE(events.chunks.empty());
  EXPECT_EQ(events.chunks.back()["error"]["code"], "cancelled") << reply;
}

}  // namespace
}  // namespace valet::testing
