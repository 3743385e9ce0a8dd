#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <filesystem>
#include <system_error>

namespace valet {

namespace {

struct Endpoint {
  std::string addr;
  int port = -1;
};

std::optional<Endpoint> ToEndpoint(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    if (!inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf)) return std::nullopt;
    return Endpoint{buf, ntohs(a.sin_port)};
  }
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    if (!inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf)) return std::nullopt;
    return Endpoint{buf, ntohs(a.sin6_port)};
  }
  return std::nullopt;
}

std::optional<Endpoint> Local(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return std::nullopt;
  return ToEndpoint(ss);
}

std::optional<Endpoint> Peer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return std::nullopt;
  return ToEndpoint(ss);
}

}  // namespace

std::optional<ConnectionWatch> ConnectionWatch::Find(int local_port, const std::string& remote_addr,
                                                     int remote_port) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    ConnectionWatch watch(fd, local_port, remote_addr, remote_port);
    if (watch.StillSame()) return watch;
  }
  return std::nullopt;
}

bool ConnectionWatch::StillSame() const {
  const std::optional<Endpoint> local = Local(fd_);
  const std::optional<Endpoint> peer = Peer(fd_);
  return local && peer && local->port == local_port_ && peer->port == remote_port_ && peer->addr == remote_addr_;
}

bool ConnectionWatch::PeerClosed() const {
  if (!StillSame()) return true;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) < 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace valet
