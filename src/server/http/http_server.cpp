#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/http/connection.h"

namespace valet::http {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr auto kTick = std::chrono::milliseconds(100);  // how often time limits are checked
// How long after a client's EOF its pending reply waits before the loop
// probes whether it is still there: a reply ready by then needs no probe,
// so a quick answer (/health) never carries an interim response.
constexpr auto kProbeDelay = kTick;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;

Result<int> OpenListener(const std::string& host, int port, int backlog, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return IoError("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, backlog) == 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      *bound_port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return IoError("cannot listen on " + host + ":" + service + ": " + why);
}

}  // namespace

class HttpServer::Loop final : public ExchangeSink, public std::enable_shared_from_this<Loop> {
 public:
  Loop(const HttpServerOptions& options, HttpHandler& handler, int listen_fd, int epoll_fd, int wake_fd)
      : options_(options), handler_(handler), listen_fd_(listen_fd), epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

  ~Loop() override {
    for (auto& [id, c] : conns_) close(c->fd);
    if (listen_fd_ >= 0) close(listen_fd_);
    close(wake_fd_);
    close(epoll_fd_);
  }

  void Post(uint64_t exchange_id, ExchangeOp op) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      posted_.emplace_back(exchange_id, std::move(op));
    }
    Wake();
  }

  void RequestStop(std::chrono::milliseconds grace) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stop_) stop_deadline_ = Clock::now() + grace;
      stop_ = true;
    }
    Wake();
  }

  void Run();

 private:
  void Wake() {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }

  void Watch(Connection& c, uint32_t events);
  void Accept();
  void OnEvents(Connection& c, uint32_t events);
  void Read(Connection& c);
  // read() gave EOF: the client will send nothing more.
  void OnEof(Connection& c);
  // Sends bytes the pending reply allows, so that a client that closed its
  // socket (rather than only its sending side) answers with a reset.
  void Probe(Connection& c);
  void Process(Connection& c);
  void Dispatch(Connection& c);
  void ApplyPosted();
  void Apply(Connection& c, ExchangeOp op);
  void SendTransportError(Connection& c, const HttpError& error);
  void Send(Connection& c, std::string_view bytes);
  void Flush(Connection& c);
  void FinishExchange(Connection& c);
  void Close(Connection& c);
  // Closes the connection idle longest, if any is (Connection::idle).
  void CloseIdlest();
  size_t OpenConnections() const { return conns_.size() - to_close_.size(); }
  void CheckTimes(Clock::time_point now);
  // Applies a Stop request; true once the loop should end.
  bool ApplyStop(Clock::time_point now);

  const HttpServerOptions options_;
  HttpHandler& handler_;
  int listen_fd_;
  const int epoll_fd_;
  const int wake_fd_;

  std::mutex mu_;  // guards what other threads hand over: posted ops and stop requests
  std::vector<std::pair<uint64_t, ExchangeOp>> posted_;
  bool stop_ = false;
  bool ended_ = false;
  Clock::time_point stop_deadline_;

  // Loop thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;  // by connection id
  std::unordered_map<uint64_t, Connection*> exchanges_;              // by exchange id, while unanswered
  uint64_t next_id_ = 2;
  std::optional<Clock::time_point> accept_paused_until_;  // out of descriptors
  std::vector<uint64_t> to_close_;
};

void HttpServer::Loop::Watch(Connection& c, uint32_t events) {
  if (events == c.events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.events = events;
}

void HttpServer::Loop::Accept() {
  while (listen_fd_ >= 0) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Leave the rest in the backlog until descriptors free up.
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_until_ = Clock::now() + kTick;
      }
      return;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // stream events are small
    // Slots go to clients that talk: a full table sheds its idlest
    // connection before the newcomer would be refused.
    if (OpenConnections() >= options_.max_connections) CloseIdlest();
    auto c = std::make_unique<Connection>(fd, next_id_++, options_.limits, Clock::now());
    epoll_event ev{};
    ev.events = kReadEvents;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      continue;
    }
    c->events = ev.events;
    Connection& conn = *c;
    conns_.emplace(c->id, std::move(c));
    if (OpenConnections() > options_.max_connections) {
      SendTransportError(conn, HttpError{503, "too many connections; retry later", "too_many_connections"});
    }
  }
}

void HttpServer::Loop::OnEvents(Connection& c, uint32_t events) {
  if (events & (EPOLLERR | EPOLLHUP)) {
    // A reset, or both directions shut: nobody is left to read a reply. A
    // lingering close waits for exactly this.
    if (c.phase != Connection::Phase::kLingering) c.gone = true;
    return Close(c);
  }
  // A FIN (EPOLLRDHUP) is read as EOF after whatever arrived before it.
  if (events & kReadEvents) Read(c);
  if (c.closed) return;
  if ((events & EPOLLRDHUP) && (c.events & EPOLLRDHUP) && !(c.events & EPOLLIN)) {
    // The FIN waits behind input left unread (Read's cap): it is read once
    // the reply is out; meanwhile the probe asks whether anyone is there.
    // Unwatched, or it would be reported over and over.
    Watch(c, c.events & ~static_cast<uint32_t>(EPOLLRDHUP));
    if (!c.probe_at) c.probe_at = Clock::now() + kProbeDelay;
  }
  if (events & EPOLLOUT) Flush(c);
}

void HttpServer::Loop::Read(Connection& c) {
  char buf[64 * 1024];
  // While a reply is pending, pipelined bytes are kept up to one head's
  // worth; past that the socket is left unread (TCP pushes back on the client).
  const size_t cap = options_.limits.max_head_bytes;
  while (c.phase == Connection::Phase::kReading || c.phase == Connection::Phase::kLingering || c.in.size() < cap) {
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n > 0) {
      // Discarded; not activity, so a client cannot hold a closing connection open.
      if (c.phase == Connection::Phase::kLingering) continue;
      c.last_activity = Clock::now();
      c.in.append(buf, static_cast<size_t>(n));
      // Parse as it arrives, so the body limit holds before the bytes pile up.
      if (c.phase == Connection::Phase::kReading) Process(c);
      if (c.closed) return;
      continue;
    }
    if (n == 0) return OnEof(c);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      c.gone = true;
      return Close(c);
    }
    return;
  }
  // Past the cap the rest stays in the socket (TCP pushes back), and so does
  // any FIN behind it (OnEvents).
  Watch(c, c.events & ~static_cast<uint32_t>(EPOLLIN));
}

void HttpServer::Loop::OnEof(Connection& c) {
  c.eof = true;
  Watch(c, c.events & ~kReadEvents);
  switch (c.phase) {
    case Connection::Phase::kReading:    // no whole request left to answer
    case Connection::Phase::kLingering:  // answered: the close it waited for
      return Close(c);
    default:
      // Answered, then closed (FinishExchange); meanwhile the probe tells a
      // half-closed client from one that has gone.
      c.probe_at = Clock::now() + kProbeDelay;
      return;
  }
}

void HttpServer::Loop::Probe(Connection& c) {
  // Bytes already on their way draw the same reset.
  if (c.pending() > 0) return;
  // RFC 9110 15.2: an HTTP/1.1 client parses interim responses it did not
  // ask for; an HTTP/1.0 client must get none.
  if (c.phase == Connection::Phase::kAnswering && !c.http10) return Send(c, kContinue);
  if (c.phase == Connection::Phase::kStreaming && !c.stream_probe.empty()) {
    Send(c, c.http10 ? std::string_view(c.stream_probe) : std::string_view(Chunk(c.stream_probe)));
  }
}

void HttpServer::Loop::Process(Connection& c) {
  while (c.phase == Connection::Phase::kReading && !c.in.empty()) {
    // The clocks start here rather than in Read: bytes pipelined while a
    // reply was pending are not late for the time they waited.
    const Clock::time_point now = Clock::now();
    if (!c.request_started) c.request_started = now;
    if (!c.head_due_since && !c.parser.head_done()) c.head_due_since = now;
    switch (c.parser.Feed(c.in)) {
      case RequestParser::Progress::kNeedMore: return;
      case RequestParser::Progress::kHead:
        c.head_due_since.reset();
        if (c.parser.expects_continue()) Send(c, kContinue);
        break;
      case RequestParser::Progress::kComplete: return Dispatch(c);
      case RequestParser::Progress::kError: return SendTransportError(c, c.parser.error());
    }
  }
}

void HttpServer::Loop::Dispatch(Connection& c) {
  c.phase = Connection::Phase::kAnswering;
  c.request_started.reset();
  c.head_due_since.reset();
  c.keep_alive = c.parser.request().keep_alive;
  c.http10 = c.parser.request().minor_version == 0;
  c.exchange_id = next_id_++;
  c.exchange = std::make_shared<HttpExchange>(shared_from_this(), c.exchange_id, std::move(c.parser.request()));
  c.parser.Reset();
  exchanges_[c.exchange_id] = &c;
  handler_.OnRequest(c.exchange);
}

void HttpServer::Loop::ApplyPosted() {
  uint64_t counter = 0;
  (void)!read(wake_fd_, &counter, sizeof counter);
  std::vector<std::pair<uint64_t, ExchangeOp>> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops.swap(posted_);
  }
  for (auto& [exchange_id, op] : ops) {
    auto it = exchanges_.find(exchange_id);
    if (it != exchanges_.end()) Apply(*it->second, std::move(op));  // else: the client left; dropped
  }
}

void HttpServer::Loop::Apply(Connection& c, ExchangeOp op) {
  using Kind = ExchangeOp::Kind;
  const bool streaming = c.phase == Connection::Phase::kStreaming;
  if (c.phase != Connection::Phase::kAnswering && !streaming) return;
  if ((op.kind == Kind::kReply || op.kind == Kind::kBeginStream) == streaming) return;  // out of order: ignored
  const bool keep_alive = c.keep_alive && !c.closing;
  switch (op.kind) {
    case Kind::kReply:
      c.phase = Connection::Phase::kFlushing;
      Send(c, ResponseHead(op.response, BodyFraming::kLength, keep_alive) + op.response.body);
      break;
    case Kind::kBeginStream:
      c.phase = Connection::Phase::kStreaming;
      c.stream_probe = std::move(op.data);
      c.keep_alive = keep_alive && !c.http10;
      Send(c, ResponseHead(op.response, c.http10 ? BodyFraming::kUntilClose : BodyFraming::kChunked, c.keep_alive));
      break;
    case Kind::kWrite: Send(c, c.http10 ? std::string_view(op.data) : std::string_view(Chunk(op.data))); break;
    case Kind::kEndStream:
      c.phase = Connection::Phase::kFlushing;
      if (!c.http10) Send(c, kLastChunk);
      break;
  }
  if (!c.closed && c.phase == Connection::Phase::kFlushing && c.pending() == 0) FinishExchange(c);
}

void HttpServer::Loop::SendTransportError(Connection& c, const HttpError& error) {
  c.keep_alive = false;
  c.phase = Connection::Phase::kFlushing;
  const HttpResponse reply = handler_.TransportErrorReply(error);
  Send(c, ResponseHead(reply, BodyFraming::kLength, false) + reply.body);  // its Flush finishes
}

void HttpServer::Loop::Send(Connection& c, std::string_view bytes) {
  c.out.append(bytes);
  if (c.pending() > options_.max_pending_output) {
    c.gone = true;  // it stopped reading what it asked for
    return Close(c);
  }
  Flush(c);
}

void HttpServer::Loop::Flush(Connection& c) {
  while (c.pending() > 0) {
    const ssize_t n = send(c.fd, c.out.data() + c.sent, c.pending(), MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      c.last_write = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!(c.events & EPOLLOUT)) c.last_write = Clock::now();
      Watch(c, c.events | EPOLLOUT);
      return;
    }
    c.gone = true;
    return Close(c);
  }
  c.out.clear();
  c.sent = 0;
  Watch(c, c.events & ~static_cast<uint32_t>(EPOLLOUT));
  if (c.phase == Connection::Phase::kFlushing) FinishExchange(c);
}

void HttpServer::Loop::FinishExchange(Connection& c) {
  if (c.exchange) {
    exchanges_.erase(c.exchange_id);
    c.exchange.reset();
  }
  c.stream_probe.clear();
  if (c.eof) {
    // The client sends nothing more: answer what it pipelined before its
    // EOF, then close (no lingering: there is no input left to drain).
    if (c.keep_alive && !c.closing) {
      c.phase = Connection::Phase::kReading;
      Process(c);
      if (c.closed || c.phase != Connection::Phase::kReading) return;
    }
    return Close(c);
  }
  if (!c.keep_alive || c.closing) {
    // Lingering close: stop sending, read and drop what the client still
    // sends, so the reply is not lost to a reset (RFC 9112 9.6).
    shutdown(c.fd, SHUT_WR);
    c.phase = Connection::Phase::kLingering;
    c.last_activity = Clock::now();
    Watch(c, kReadEvents);
    return;
  }
  c.phase = Connection::Phase::kReading;
  c.last_activity = Clock::now();
  Watch(c, (c.events | kReadEvents) & ~static_cast<uint32_t>(EPOLLOUT));
  Process(c);  // a pipelined request may be waiting
}

void HttpServer::Loop::Close(Connection& c) {
  if (c.closed) return;
  c.closed = true;
  if (c.exchange) {
    exchanges_.erase(c.exchange_id);
    if (c.gone) c.exchange->MarkGone();
    c.exchange.reset();
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  to_close_.push_back(c.id);
}

void HttpServer::Loop::CloseIdlest() {
  Connection* idlest = nullptr;
  for (auto& [id, cp] : conns_) {
    Connection& c = *cp;
    if (c.closed || !c.idle()) continue;
    if (idlest == nullptr || c.idle_since() < idlest->idle_since() ||
        (c.idle_since() == idlest->idle_since() && c.id < idlest->id)) {
      idlest = &c;
    }
  }
  if (idlest != nullptr) Close(*idlest);
}

void HttpServer::Loop::CheckTimes(Clock::time_point now) {
  for (auto& [id, cp] : conns_) {
    Connection& c = *cp;
    if (c.closed) continue;
    if (c.probe_at && now >= *c.probe_at) {
      c.probe_at.reset();
      Probe(c);
      if (c.closed) continue;
    }
    if (c.pending() > 0) {
      if (now - c.last_write > options_.write_timeout) {
        c.gone = true;
        Close(c);
      }
      continue;
    }
    switch (c.phase) {
      case Connection::Phase::kReading:
        if (c.head_due_since && !c.parser.head_done() && now - *c.head_due_since > options_.header_timeout) {
          // One that never began a request is owed nothing.
          if (!c.parser.started()) {
            Close(c);
          } else {
            SendTransportError(c, HttpError{408, "the request head did not arrive in time", "request_timeout"});
          }
        } else if (c.request_started && now - *c.request_started > options_.read_timeout) {
          SendTransportError(c, HttpError{408, "the request did not arrive in time", "request_timeout"});
        } else if (!c.request_started && !c.head_due_since && now - c.last_activity > options_.idle_timeout) {
          Close(c);
        }
        break;
      case Connection::Phase::kLingering:
        if (now - c.last_activity > std::chrono::seconds(2)) Close(c);
        break;
      default: break;  // waiting for the application
    }
  }
}

bool HttpServer::Loop::ApplyStop(Clock::time_point now) {
  Clock::time_point deadline;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_) return false;
    deadline = stop_deadline_;
  }
  if (listen_fd_ >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    close(listen_fd_);
    listen_fd_ = -1;
  }
  bool busy = false;
  for (auto& [id, cp] : conns_) {
    Connection& c = *cp;
    if (c.closed) continue;
    c.closing = true;  // no further request on it
    const bool answering = c.phase != Connection::Phase::kReading && c.phase != Connection::Phase::kLingering;
    if (!answering || now >= deadline) {
      c.gone = answering;
      Close(c);
    } else {
      busy = true;
    }
  }
  return !busy;
}

void HttpServer::Loop::Run() {
  epoll_event events[256];
  Clock::time_point last_check = Clock::now();
  while (true) {
    const int n = epoll_wait(epoll_fd_, events, 256, static_cast<int>(kTick.count()));
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        Accept();
      } else if (id == kWakeId) {
        ApplyPosted();
      } else if (auto it = conns_.find(id); it != conns_.end() && !it->second->closed) {
        OnEvents(*it->second, events[i].events);
      }
    }
    const Clock::time_point now = Clock::now();
    if (accept_paused_until_ && now >= *accept_paused_until_ && listen_fd_ >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenId;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      accept_paused_until_.reset();
    }
    if (now - last_check >= kTick) {
      CheckTimes(now);
      last_check = now;
    }
    const bool done = ApplyStop(now);
    for (uint64_t id : to_close_) conns_.erase(id);
    to_close_.clear();
    if (done) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  posted_.clear();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Listen(const HttpServerOptions& options, HttpHandler& handler) {
  if (options.listen_backlog < 1 || options.max_connections < 1) {
    return InvalidArgument("listen_backlog and max_connections must be positive");
  }
  if (options.header_timeout.count() <= 0 || options.read_timeout.count() <= 0 || options.idle_timeout.count() <= 0 ||
      options.write_timeout.count() <= 0) {
    return InvalidArgument("header, read, idle and write timeouts must be positive");
  }
  int port = -1;
  VALET_ASSIGN_OR_RETURN(int listen_fd, OpenListener(options.host, options.port, options.listen_backlog, &port));
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd < 0 || wake_fd < 0) {
    const std::string why = std::strerror(errno);
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) close(fd);
    }
    return IoError("cannot set up the event loop: " + why);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev);
  auto loop = std::make_shared<Loop>(options, handler, listen_fd, epoll_fd, wake_fd);
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(loop), port));
}

HttpServer::HttpServer(std::shared_ptr<Loop> loop, int port) : loop_(std::move(loop)), port_(port) {}

HttpServer::~HttpServer() { Stop(std::chrono::milliseconds(0)); }

void HttpServer::Start() {
  if (!thread_.joinable()) thread_ = std::thread([loop = loop_] { loop->Run(); });
}

void HttpServer::Stop(std::chrono::milliseconds grace) {
  loop_->RequestStop(grace);
  if (thread_.joinable()) thread_.join();
}

}  // namespace valet::http
