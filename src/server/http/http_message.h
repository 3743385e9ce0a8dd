// The HTTP/1.x request and response as valet's transport sees them: header
// names lower-cased, bodies whole (a request's body is bounded by the
// server's body limit before it is stored).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace valet::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string target;  // as sent, query included
  std::string path;    // the target up to '?'
  int minor_version = 1;  // HTTP/1.minor_version
  HeaderList headers;     // names lower-cased, in arrival order
  std::string body;       // de-chunked
  bool keep_alive = true;

  // The first value of `name` (lower-case), or "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;  // beyond Content-Type, Content-Length and Connection
  std::string body;
};

// Why the transport answers a request itself (malformed, too large, too slow).
struct HttpError {
  int status = 400;
  std::string message;
  std::string code;  // machine-readable, e.g. "body_too_large"
};

const char* ReasonPhrase(int status);

}  // namespace valet::http

namespace valet::http {

enum class BodyFraming {
  kLength,      // Content-Length: the body follows whole
  kChunked,     // Transfer-Encoding: chunked (HTTP/1.1 streams)
  kUntilClose,  // no length: the body ends when the connection closes (HTTP/1.0 streams)
};

// The status line and headers of a reply, through the blank line.
std::string ResponseHead(const HttpResponse& response, BodyFraming framing, bool keep_alive);
// One piece of a chunked body; "" for empty data (which would end the body).
std::string Chunk(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace valet::http
