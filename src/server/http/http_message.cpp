#include "server/http/http_message.h"

#include <cstdio>

namespace valet::http {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string ResponseHead(const HttpResponse& response, BodyFraming framing, bool keep_alive) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + ReasonPhrase(response.status) + "\r\n";
  head += "Server: valet\r\n";
  if (!response.content_type.empty()) head += "Content-Type: " + response.content_type + "\r\n";
  switch (framing) {
    case BodyFraming::kLength: head += "Content-Length: " + std::to_string(response.body.size()) + "\r\n"; break;
    case BodyFraming::kChunked: head += "Transfer-Encoding: chunked\r\n"; break;
    case BodyFraming::kUntilClose: break;
  }
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

std::string Chunk(std::string_view data) {
  if (data.empty()) return {};
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size);
  out.append(data);
  out += "\r\n";
  return out;
}

}  // namespace valet::http
