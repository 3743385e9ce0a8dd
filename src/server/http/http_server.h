// valet's HTTP/1.1 transport: one thread runs an epoll loop over every
// connection, so a slow client or a request waiting for the scheduler costs
// a socket and a buffer, never a thread. Requests are parsed incrementally
// under the ParserLimits and handed whole to the HttpHandler; replies come
// back through HttpExchange from any thread. Pipelined requests on a
// connection are answered in order, one at a time.
//
// Time limits: a connection must send a whole request head within
// header_timeout of its accept (of a later request's first byte on a
// keep-alive connection), else it is closed (408 if it had begun one); a
// request must arrive whole within read_timeout of its first byte (else 408
// and close); an idle keep-alive connection is closed after idle_timeout; a
// client that takes no output for write_timeout, or lets more than
// max_pending_output pile up, is treated as gone.
//
// Slots: when max_connections are open, a new connection first closes the
// one idle longest (between requests, still owing its head, or done and
// lingering); only when none is idle is the newcomer refused with 503.
//
// End of input: a client that shuts its sending side after whole requests
// (shutdown(SHUT_WR)) gets their answers, then the connection closes; a
// partial request is dropped. A FIN alone cannot tell that client from one
// that closed its socket, so while a reply is pending the loop sends bytes
// the reply allows (an interim 100 Continue to an HTTP/1.1 client, or the
// stream's probe bytes) and a reset in return marks the client gone.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "server/http/http_exchange.h"
#include "server/http/request_parser.h"
#include "valet/status.h"

namespace valet::http {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  int listen_backlog = 512;
  size_t max_connections = 1024;  // then the idlest is closed for a newcomer, or the newcomer gets 503
  ParserLimits limits;
  std::chrono::milliseconds header_timeout{5'000};  // short: silent connections must not hold slots
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds write_timeout{30'000};
  size_t max_pending_output = size_t{8} << 20;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // The loop thread, for each whole request. Must not block: hand slow work
  // to other threads and reply through the exchange.
  virtual void OnRequest(const std::shared_ptr<HttpExchange>& exchange) = 0;
  // The loop thread: the reply the transport sends itself for `error`.
  virtual HttpResponse TransportErrorReply(const HttpError& error) = 0;
};

class HttpServer {
 public:
  // Binds and listens; IoError when it cannot. `handler` must outlive the server.
  static Result<std::unique_ptr<HttpServer>> Listen(const HttpServerOptions& options, HttpHandler& handler);
  ~HttpServer();  // Stop(0)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Runs the loop on its own thread.
  void Start();
  // Closes the listening socket and idle connections, waits up to `grace` for the replies in flight
  // to be written, then closes the rest and joins the loop.
  void Stop(std::chrono::milliseconds grace);

  class Loop;

 private:
  HttpServer(std::shared_ptr<Loop> loop, int port);

  std::shared_ptr<Loop> loop_;
  std::thread thread_;
  int port_;
};

}  // namespace valet::http
