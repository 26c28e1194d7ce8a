// http_get.h: a minimal blocking HTTP/1.0 GET over POSIX sockets, for tests.
//
// Tests scrape MetricsServer the way Prometheus does (a real TCP connection) without
// depending on curl or an HTTP library. Loopback, plain HTTP, no redirects, no chunked
// encoding (HTTP/1.0 makes the server close the connection at the end of the body).
//
// Thread-safety: free function; each call uses its own socket.
#ifndef FLOWLOADER_EXPORTERS_TESTING_HTTP_GET_H_
#define FLOWLOADER_EXPORTERS_TESTING_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace flowloader {
namespace exporters_testing {

// HttpResponse is the status code, raw header block and body of one response.
struct HttpResponse {
  int status = 0;
  std::string headers;
  std::string body;
};

// HttpGet fetches http://host:port/path (host numeric IPv4). Errors: Unavailable when
// the connection fails, DeadlineExceeded after `timeout`, DataLoss for a malformed reply.
absl::StatusOr<HttpResponse> HttpGet(absl::string_view host, int port,
                                     absl::string_view path,
                                     absl::Duration timeout = absl::Seconds(10));

}  // namespace exporters_testing
}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_TESTING_HTTP_GET_H_
