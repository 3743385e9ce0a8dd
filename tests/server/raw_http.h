// An HTTP client on a plain socket, for what httplib's client cannot do:
// partial or slow sends, pipelining, HTTP/1.0, hanging up (or half-closing)
// at a chosen point.
// Reads give up after a minute, so a server that never answers fails the
// test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace valet::testing {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;  // de-chunked
};

class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval limit{60, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // Half-close: the server reads EOF, this side still reads (nc -N).
  bool ShutdownWrite() { return shutdown(fd_, SHUT_WR) == 0; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Everything until the server closes (or a read fails).
  std::string ReadAll() {
    while (Fill()) {
    }
    return std::exchange(buffered_, std::string());
  }

  // Reads until `needle` has arrived; false if the connection ended first.
  bool ReadUntil(std::string_view needle) {
    while (buffered_.find(needle) == std::string::npos) {
      if (!Fill()) return false;
    }
    return true;
  }

  // One response, framed by Content-Length or chunked encoding (or, without
  // either, by the end of the connection). Interim 1xx responses before it
  // are skipped, as a client must (RFC 9110 15.2).
  std::optional<RawResponse> ReadResponse() {
    RawResponse r;
    do {
      if (!ReadUntil("\r\n\r\n")) return std::nullopt;
      const size_t head_end = buffered_.find("\r\n\r\n") + 4;
      r.head = buffered_.substr(0, head_end);
      buffered_.erase(0, head_end);
      r.status = std::atoi(r.head.c_str() + 9);
    } while (r.status >= 100 && r.status < 200);
    if (const size_t cl = r.head.find("Content-Length: "); cl != std::string::npos) {
      const size_t length = std::strtoul(r.head.c_str() + cl + 16, nullptr, 10);
      while (buffered_.size() < length) {
        if (!Fill()) return std::nullopt;
      }
      r.body = buffered_.substr(0, length);
      buffered_.erase(0, length);
      return r;
    }
    if (r.head.find("Transfer-Encoding: chunked") == std::string::npos) {
      r.body = ReadAll();
      return r;
    }
    while (true) {
      if (!ReadUntil("\r\n")) return std::nullopt;
      const size_t size = std::strtoul(buffered_.c_str(), nullptr, 16);
      const size_t data = buffered_.find("\r\n") + 2;
      while (buffered_.size() < data + size + 2) {
        if (!Fill()) return std::nullopt;
      }
      r.body += buffered_.substr(data, size);
      buffered_.erase(0, data + size + 2);
      if (size == 0) return r;
    }
  }

 private:
  bool Fill() {
    char buf[16384];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    buffered_.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_;
  bool connected_ = false;
  std::string buffered_;
};

}  // namespace valet::testing
