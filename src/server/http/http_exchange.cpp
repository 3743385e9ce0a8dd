#include "server/http/http_exchange.h"

namespace valet::http {

void HttpExchange::Reply(HttpResponse response) {
  ExchangeOp op;
  op.kind = ExchangeOp::Kind::kReply;
  op.response = std::move(response);
  Post(std::move(op));
}

void HttpExchange::BeginStream(int status, std::string content_type, HeaderList headers, std::string probe) {
  ExchangeOp op;
  op.kind = ExchangeOp::Kind::kBeginStream;
  op.response.status = status;
  op.response.content_type = std::move(content_type);
  op.response.headers = std::move(headers);
  op.data = std::move(probe);
  Post(std::move(op));
}

void HttpExchange::Write(std::string data) {
  if (data.empty()) return;
  ExchangeOp op;
  op.kind = ExchangeOp::Kind::kWrite;
  op.data = std::move(data);
  Post(std::move(op));
}

void HttpExchange::EndStream() {
  ExchangeOp op;
  op.kind = ExchangeOp::Kind::kEndStream;
  Post(std::move(op));
}

void HttpExchange::OnClientGone(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!gone_.load(std::memory_order_relaxed)) {
      on_gone_ = std::move(fn);
      return;
    }
  }
  fn();
}

void HttpExchange::MarkGone() {
  std::function<void()> fn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone_.exchange(true, std::memory_order_acq_rel)) return;
    fn = std::move(on_gone_);
  }
  if (fn) fn();
}

}  // namespace valet::http
