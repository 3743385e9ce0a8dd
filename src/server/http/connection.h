// One client connection of the HTTP event loop: its buffers and where it is
// in the request/reply cycle. Touched only by the loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "server/http/http_exchange.h"
#include "server/http/request_parser.h"

namespace valet::http {

struct Connection {
  using Clock = std::chrono::steady_clock;

  enum class Phase {
    kReading,    // parsing the next request
    kAnswering,  // the application has the request; nothing sent yet
    kStreaming,  // the reply's head is out, its body follows in pieces
    kFlushing,   // the reply is complete; writing what is left of it
    kLingering,  // the reply is out and our side shut; dropping input until the client closes
  };

  Connection(int socket, uint64_t conn_id, ParserLimits limits, Clock::time_point now)
      : fd(socket), id(conn_id), parser(limits), last_activity(now), last_write(now) {}

  size_t pending() const { return out.size() - sent; }

  const int fd;
  const uint64_t id;
  uint32_t events = 0;  // epoll interest
  Phase phase = Phase::kReading;
  RequestParser parser;
  std::string in;   // received, not yet parsed
  std::string out;  // to send, from `sent` on
  size_t sent = 0;

  std::shared_ptr<HttpExchange> exchange;  // while answering
  uint64_t exchange_id = 0;
  bool keep_alive = true;
  bool http10 = false;
  bool closing = false;  // the server is stopping: no request after this one
  bool gone = false;     // the client left (or is dropped) before its reply was complete
  bool closed = false;

  std::optional<Clock::time_point> request_started;  // first byte of the request being read
  Clock::time_point last_activity;  // last byte read, or the end of the last reply
  Clock::time_point last_write;     // last progress writing `out`
};

}  // namespace valet::http
