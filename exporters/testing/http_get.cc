// http_get.cc: HttpGet over a blocking socket with poll(2) deadlines.
#include "exporters/testing/http_get.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace flowloader {
namespace exporters_testing {
namespace {

// Fd closes a socket on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// WaitFor polls `fd` for `events` until `deadline`; false on timeout.
bool WaitFor(int fd, short events, absl::Time deadline) {
  for (;;) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(ms));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // Let the next call report the error.
  }
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(absl::string_view host, int port,
                                     absl::string_view path, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string where = absl::StrCat("http://", host, ":", port, path);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, std::string(host).c_str(), &sa.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not a numeric IPv4 host: ", host));
  }
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  if (fd.get() < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  // Non-blocking connect so the deadline covers it too.
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 &&
      errno != EINPROGRESS) {
    return absl::UnavailableError(absl::StrCat(where, ": connect: ", std::strerror(errno)));
  }
  if (!WaitFor(fd.get(), POLLOUT, deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(where, ": connect timed out"));
  }
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    return absl::UnavailableError(absl::StrCat(where, ": connect: ", std::strerror(err)));
  }

  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, ":", port,
                                           "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
  for (size_t sent = 0; sent < request.size();) {
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(where, ": send timed out"));
    }
    const ssize_t n = send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat(where, ": send: ", std::strerror(errno)));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }

  std::string raw;
  char buf[16384];
  for (;;) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(where, ": read timed out"));
    }
    const ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n == 0) break;  // The server closed: the body is complete.
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(where, ": recv: ", std::strerror(errno)));
    }
    raw.append(buf, static_cast<size_t>(n));
  }

  const size_t header_end = raw.find("\r\n\r\n");
  // "HTTP/1.x NNN" is 12 characters.
  if (header_end == std::string::npos || raw.size() < 12 || raw.compare(0, 5, "HTTP/") != 0) {
    return absl::DataLossError(absl::StrCat(where, ": malformed response"));
  }
  HttpResponse response;
  if (!absl::SimpleAtoi(absl::string_view(raw).substr(9, 3), &response.status)) {
    return absl::DataLossError(absl::StrCat(where, ": malformed status line"));
  }
  response.headers = raw.substr(0, header_end);
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace exporters_testing
}  // namespace flowloader
