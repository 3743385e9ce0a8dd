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
      : fd(socket), id(conn_id), parser(limits), head_due_since(now), last_activity(now), last_write(now) {}

  size_t pending() const { return out.size() - sent; }

  // Holds a slot without asking for anything: waiting for (the rest of) a
  // request head, or done and waiting for the client to close. Such a
  // connection is the first to go when the table is full.
  bool idle() const {
    if (pending() > 0) return false;
    return phase == Phase::kLingering || (phase == Phase::kReading && !parser.head_done());
  }
  // How long it has been idle: since it began to owe a head (so a client
  // dripping one byte at a time does not look fresh), else since its last
  // reply or byte.
  Clock::time_point idle_since() const { return head_due_since ? *head_due_since : last_activity; }

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
  // The client shut its sending side (read() gave EOF): what it asked
  // before is still answered, then the connection closes.
  bool eof = false;
  // When to check, by sending bytes, whether a client that sent EOF while
  // its reply was pending shut only its sending side or closed the socket
  // (which answers data with a reset).
  std::optional<Clock::time_point> probe_at;
  std::string stream_probe;  // bytes the streaming reply's body ignores (ExchangeOp::data of kBeginStream)

  // Since when a request head is owed: the accept for the first request,
  // the first byte of each later one (an idle keep-alive connection owes
  // none); reset once the head is whole. Bounded by header_timeout.
  std::optional<Clock::time_point> head_due_since;
  std::optional<Clock::time_point> request_started;  // first byte of the request being read
  Clock::time_point last_activity;  // last byte read, or the end of the last reply
  Clock::time_point last_write;     // last progress writing `out`
};

}  // namespace valet::http
