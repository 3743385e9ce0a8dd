// One request and its reply, handed by the transport's event loop to the
// application. Every method may be called from any thread (an HTTP worker,
// the inference thread's callbacks): replies are posted to the loop, which
// alone touches sockets. A request waiting for its reply holds no thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "server/http/http_message.h"

namespace valet::http {

// What an exchange asks of its connection.
struct ExchangeOp {
  enum class Kind { kReply, kBeginStream, kWrite, kEndStream };
  Kind kind = Kind::kReply;
  HttpResponse response;  // kReply; kBeginStream uses its status, type and headers
  std::string data;       // kWrite; kBeginStream: the stream's probe (HttpExchange::BeginStream)
};

// The loop's side: takes ops for an exchange from any thread.
class ExchangeSink {
 public:
  virtual ~ExchangeSink() = default;
  virtual void Post(uint64_t exchange_id, ExchangeOp op) = 0;
};

class HttpExchange {
 public:
  HttpExchange(std::shared_ptr<ExchangeSink> sink, uint64_t id, HttpRequest request)
      : sink_(std::move(sink)), id_(id), request_(std::move(request)) {}

  const HttpRequest& request() const { return request_; }

  // A whole reply. Exactly one of Reply or BeginStream ... EndStream per
  // exchange; calls after the client left are dropped.
  void Reply(HttpResponse response);
  // A reply whose body follows in pieces: chunked for HTTP/1.1, until the
  // connection closes for HTTP/1.0. `probe`, if not empty, is a piece the
  // body's reader ignores (an SSE comment): the transport may insert it
  // between writes to learn whether a client that sent EOF is still there.
  void BeginStream(int status, std::string content_type, HeaderList headers = {}, std::string probe = {});
  void Write(std::string data);
  void EndStream();

  // Runs `fn` once if the client goes away (closes, resets, stops reading)
  // before the reply is complete; at once, on this thread, if it already has.
  void OnClientGone(std::function<void()> fn);
  bool client_gone() const { return gone_.load(std::memory_order_acquire); }

  // The loop: the client left. Runs the OnClientGone function, if any.
  void MarkGone();

 private:
  void Post(ExchangeOp op) { sink_->Post(id_, std::move(op)); }

  std::shared_ptr<ExchangeSink> sink_;
  const uint64_t id_;
  const HttpRequest request_;
  std::mutex mu_;
  std::function<void()> on_gone_;
  std::atomic<bool> gone_{false};
};

}  // namespace valet::http
