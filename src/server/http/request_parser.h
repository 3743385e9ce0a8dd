// An incremental HTTP/1.0 and 1.1 request parser. Bytes are fed as they
// arrive; every limit is checked before the bytes it bounds are stored, so a
// client can make it hold at most max_head_bytes of head and max_body_bytes
// of body, chunked or not. Framing that could be read two ways (both
// Content-Length and Transfer-Encoding, differing lengths, folded headers)
// is refused rather than guessed, as RFC 9112 asks of a server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/http_message.h"

namespace valet::http {

struct ParserLimits {
  size_t max_head_bytes = 16 * 1024;  // request line and headers (and trailers)
  size_t max_headers = 100;
  size_t max_body_bytes = size_t{1} << 20;
};

class RequestParser {
 public:
  enum class Progress {
    kNeedMore,
    kHead,      // the head is complete and accepted; a body follows (see expects_continue())
    kComplete,  // request() is whole
    kError,     // error() says why; the connection cannot be read further
  };

  explicit RequestParser(ParserLimits limits) : limits_(limits) {}

  // Parses from the front of `input`, erasing what it consumed. kHead is
  // reported once per request with a body, before any body byte is stored;
  // a request without one goes straight to kComplete.
  Progress Feed(std::string& input);

  // After kHead: the client waits for "100 Continue" before sending the body.
  bool expects_continue() const { return expects_continue_; }
  HttpRequest& request() { return request_; }
  const HttpError& error() const { return error_; }
  // True once any byte of the current request has arrived.
  bool started() const { return started_; }
  // True once the current request's line and headers are complete (its body
  // may still be on its way).
  bool head_done() const { return state_ != State::kHead; }
  // Ready for the next request on the same connection.
  void Reset();

 private:
  enum class State { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone, kError };

  Progress ParseHead(std::string& input);
  Progress Fail(int status, std::string message, std::string code);
  Progress FailBodyTooLarge();  // 413
  Progress FailHeadTooLarge();  // 431
  bool ParseRequestLine(std::string_view line);
  bool ParseHeaderLine(std::string_view line);
  Progress ChooseFraming();
  Progress ParseBody(std::string& input);
  // Moves up to remaining_ body bytes from `input`; true once none remain.
  bool TakeBody(std::string& input);
  Progress ParseChunked(std::string& input);
  // The next line of `input` from `pos` (CRLF or LF ended), or false when it
  // has not arrived; lines over `limit` bytes fail the request.
  bool TakeLine(std::string& input, size_t limit, std::string* line, bool* too_long);

  ParserLimits limits_;
  State state_ = State::kHead;
  HttpRequest request_;
  HttpError error_;
  size_t trailer_bytes_ = 0;  // of the trailer fields read so far
  size_t scanned_ = 0;      // bytes of `input` already searched for the head's end
  uint64_t remaining_ = 0;  // body or chunk bytes still to come
  bool expects_continue_ = false;
  bool started_ = false;
};

}  // namespace valet::http
