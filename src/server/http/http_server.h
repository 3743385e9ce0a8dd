// valet's HTTP/1.1 transport: one thread runs an epoll loop over every
// connection, so a slow client or a request waiting for the scheduler costs
// a socket and a buffer, never a thread. Requests are parsed incrementally
// under the ParserLimits and handed whole to the HttpHandler; replies come
// back through HttpExchange from any thread. Pipelined requests on a
// connection are answered in order, one at a time.
//
// Time limits: a request must arrive whole within read_timeout of its first
// byte (else 408 and close), an idle keep-alive connection is closed after
// idle_timeout, and a client that takes no output for write_timeout, or lets
// more than max_pending_output pile up, is treated as gone.
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
  size_t max_connections = 1024;  // more are answered 503 and closed
  ParserLimits limits;
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
