// listen_address.cc: address parsing and the bind(2) probe behind MetricsServer errors.
#include "exporters/internal/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowloader {
namespace exporters_internal {
namespace {

absl::Status Malformed(absl::string_view address, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad metrics_address '", address, "': ", why,
                   " (expected host:port, [v6]:port or a port)"));
}

bool ParsePort(absl::string_view text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, port) && *port <= 65535;
}

// ProbeErrno binds a socket like civetweb would (SO_REUSEADDR on) and returns errno,
// or 0 when the bind succeeds.
int ProbeErrno(const ListenAddress& a) {
  const int fd = socket(a.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return errno;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (a.ipv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(a.port));
    inet_pton(AF_INET6, a.host.c_str(), &sa.sin6_addr);
    rc = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(a.port));
    inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr);
    rc = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  }
  const int err = rc == 0 ? 0 : errno;
  close(fd);
  return err;
}

}  // namespace

std::string ListenAddress::WithPort(int bound_port) const {
  return ipv6 ? absl::StrCat("[", host, "]:", bound_port) : absl::StrCat(host, ":", bound_port);
}

absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address) {
  ListenAddress a;
  if (address.empty()) return Malformed(address, "empty");
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) {
    // A bare port: loopback, never "every interface" by accident.
    if (!ParsePort(address, &a.port)) return Malformed(address, "not a port number");
    a.host = "127.0.0.1";
    return a;
  }
  absl::string_view host = address.substr(0, colon);
  if (!ParsePort(address.substr(colon + 1), &a.port)) {
    return Malformed(address, "port must be a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr v6;
    if (inet_pton(AF_INET6, std::string(host).c_str(), &v6) != 1) {
      return Malformed(address, "not a numeric IPv6 address");
    }
    a.host = std::string(host);
    a.ipv6 = true;
    return a;
  }
  if (host == "localhost") host = "127.0.0.1";
  in_addr v4;
  if (inet_pton(AF_INET, std::string(host).c_str(), &v4) != 1) {
    return Malformed(address, "host must be a numeric IPv4 address, [IPv6] or localhost");
  }
  a.host = std::string(host);
  return a;
}

absl::Status BindFailure(const ListenAddress& address, absl::string_view detail) {
  const std::string where = absl::StrCat("cannot listen on ", address.ToString(), ": ");
  const int err = ProbeErrno(address);
  switch (err) {
    case EADDRINUSE:
      return absl::UnavailableError(absl::StrCat(
          where, "address in use (another server listens there; choose another port, or ",
          address.WithPort(0), " for an ephemeral one)"));
    case EACCES:
      return absl::PermissionDeniedError(
          absl::StrCat(where, "permission denied (ports below 1024 need privileges)"));
    case EADDRNOTAVAIL:
      return absl::InvalidArgumentError(
          absl::StrCat(where, "address not available (not an address of this machine)"));
    case 0:
      // The socket binds, so the server itself refused: Debian's civetweb is built
      // without IPv6 (its mg_check_feature(8) is 0) and fails on any [v6]:port.
      if (address.ipv6) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "the HTTP server this build links (civetweb) has no IPv6 support; use "
                   "127.0.0.1:PORT, or 0.0.0.0:PORT for every interface"));
      }
      return absl::UnavailableError(absl::StrCat(where, detail));
    default:
      return absl::UnavailableError(absl::StrCat(where, std::strerror(err)));
  }
}

void PokeListener(const ListenAddress& address) {
  ListenAddress target = address;
  if (target.host == "0.0.0.0") target.host = "127.0.0.1";
  if (target.host == "::") target.host = "::1";
  const int fd = socket(target.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  if (target.ipv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(static_cast<uint16_t>(target.port));
    inet_pton(AF_INET6, target.host.c_str(), &sa.sin6_addr);
    connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(target.port));
    inet_pton(AF_INET, target.host.c_str(), &sa.sin_addr);
    connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  }
  close(fd);
}

}  // namespace exporters_internal
}  // namespace flowloader
