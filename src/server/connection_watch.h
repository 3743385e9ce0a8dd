// Tells whether the client of a request still has its connection open.
//
// cpp-httplib 0.11 gives a handler no access to its socket and reports a
// gone client only when a write fails, so a request waiting in the queue, or
// a non-streamed one, would never notice. The watch finds the accepted
// socket by its two endpoints (Linux: /proc/self/fd) and polls it for a
// hang-up; it never reads from it.
#pragma once

#include <optional>
#include <string>

namespace valet {

class ConnectionWatch {
 public:
  // The open socket connecting local_port to remote_addr:remote_port, if any.
  static std::optional<ConnectionWatch> Find(int local_port, const std::string& remote_addr, int remote_port);

  // True once the peer has closed or reset the connection (or the socket is
  // no longer the one found).
  bool PeerClosed() const;

 private:
  ConnectionWatch(int fd, int local_port, std::string remote_addr, int remote_port)
      : fd_(fd), local_port_(local_port), remote_addr_(std::move(remote_addr)), remote_port_(remote_port) {}
  bool StillSame() const;

  int fd_;
  int local_port_;
  std::string remote_addr_;
  int remote_port_;
};

}  // namespace valet
