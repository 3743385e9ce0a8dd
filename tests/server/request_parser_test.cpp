#include "server/http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace valet::http {
namespace {

using Progress = RequestParser::Progress;

// Feeds `wire` in pieces of `step` bytes until the request completes or fails.
Progress FeedInSteps(RequestParser& p, const std::string& wire, size_t step, std::string* rest = nullptr) {
  std::string input;
  Progress last = Progress::kNeedMore;
  for (size_t i = 0; i < wire.size(); i += step) {
    input.append(wire, i, step);
    do {
      last = p.Feed(input);
    } while (last == Progress::kHead);
    if (last == Progress::kComplete || last == Progress::kError) break;
  }
  if (rest) *rest = input;
  return last;
}

ParserLimits Limits(size_t body) {
  ParserLimits l;
  l.max_body_bytes = body;
  return l;
}

TEST(RequestParserTest, ParsesTheSameWhateverThePieces) {
  const std::string wire =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"
      "{\"a\": true}";
  for (size_t step : {1u, 3u, 7u, 1000u}) {
    RequestParser p(Limits(1 << 20));
    ASSERT_EQ(FeedInSteps(p, wire, step), Progress::kComplete) << step;
    const HttpRequest& r = p.request();
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/v1/completions?x=1");
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.Header("content-type"), "application/json");
    EXPECT_EQ(r.body, "{\"a\": true}");
    EXPECT_TRUE(r.keep_alive);
  }
}

TEST(RequestParserTest, ChunkedBodiesAreJoinedAndTrailersDropped) {
  const std::string wire =
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-T: 1\r\n\r\n";
  for (size_t step : {1u, 4u, 1000u}) {
    RequestParser p(Limits(1 << 20));
    ASSERT_EQ(FeedInSteps(p, wire, step), Progress::kComplete) << step;
    EXPECT_EQ(p.request().body, "hello world");
  }
}

TEST(RequestParserTest, ChunkedBodiesStopAtTheLimitBeforeStoringMore) {
  // One declared chunk far over the limit: refused at its size line.
  RequestParser big(Limits(1000));
  EXPECT_EQ(FeedInSteps(big, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFF\r\n", 1000),
            Progress::kError);
  EXPECT_EQ(big.error().status, 413);
  // Many small chunks adding up past it.
  std::string wire = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 20; ++i) wire += "64\r\n" + std::string(100, 'x') + "\r\n";
  RequestParser many(Limits(1000));
  EXPECT_EQ(FeedInSteps(many, wire, 7), Progress::kError);
  EXPECT_EQ(many.error().status, 413);
  EXPECT_LE(many.request().body.size(), 1000u);
}

TEST(RequestParserTest, ContentLengthOverTheLimitIsRefusedAtTheHead) {
  RequestParser p(Limits(10));
  std::string input = "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
  EXPECT_EQ(p.Feed(input), Progress::kError);
  EXPECT_EQ(p.error().status, 413);
  EXPECT_EQ(p.error().code, "body_too_large");
}

TEST(RequestParserTest, AmbiguousOrUnsupportedFramingIsRefused) {
  struct Case {
    const char* wire;
    int status;
  };
  const Case cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\r\n continued\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: a\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/3.0\r\n\r\n", 505},
      {"GET / HTTX/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", 400},
  };
  for (const Case& c : cases) {
    RequestParser p(Limits(1 << 20));
    EXPECT_EQ(FeedInSteps(p, c.wire, 1000), Progress::kError) << c.wire;
    EXPECT_EQ(p.error().status, c.status) << c.wire;
  }
}

TEST(RequestParserTest, HeadsAreBounded) {
  ParserLimits l = Limits(1 << 20);
  l.max_head_bytes = 256;
  l.max_headers = 4;
  RequestParser endless(l);
  EXPECT_EQ(FeedInSteps(endless, "GET / HTTP/1.1\r\nX: " + std::string(10000, 'a'), 100), Progress::kError);
  EXPECT_EQ(endless.error().status, 431);
  RequestParser many(l);
  EXPECT_EQ(FeedInSteps(many, "GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n", 1000),
            Progress::kError);
  EXPECT_EQ(many.error().status, 431);
}

TEST(RequestParserTest, PipelinedRequestsAreParsedOneAfterAnother) {
  RequestParser p(Limits(1 << 20));
  std::string input = "\r\nGET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /c HTTP/1.1\r\n\r\n";
  ASSERT_EQ(p.Feed(input), Progress::kComplete);
  EXPECT_EQ(p.request().path, "/a");
  p.Reset();
  ASSERT_EQ(p.Feed(input), Progress::kHead);
  ASSERT_EQ(p.Feed(input), Progress::kComplete);
  EXPECT_EQ(p.request().path, "/b");
  EXPECT_EQ(p.request().body, "hi");
  p.Reset();
  ASSERT_EQ(p.Feed(input), Progress::kComplete);
  EXPECT_EQ(p.request().path, "/c");
  EXPECT_TRUE(input.empty());
}

TEST(RequestParserTest, KeepAliveAndContinueFollowTheVersion) {
  RequestParser old(Limits(100));
  std::string a = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(old.Feed(a), Progress::kComplete);
  EXPECT_FALSE(old.request().keep_alive);
  RequestParser close(Limits(100));
  std::string b = "GET / HTTP/1.1\r\nConnection: Close\r\n\r\n";
  ASSERT_EQ(close.Feed(b), Progress::kComplete);
  EXPECT_FALSE(close.request().keep_alive);
  RequestParser cont(Limits(100));
  std::string c = "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
  ASSERT_EQ(cont.Feed(c), Progress::kHead);
  EXPECT_TRUE(cont.expects_continue());
  c = "ok";
  ASSERT_EQ(cont.Feed(c), Progress::kComplete);
  EXPECT_EQ(cont.request().body, "ok");
}

}  // namespace
}  // namespace valet::http
