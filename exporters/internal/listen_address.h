// listen_address.h: parsing listen addresses for MetricsServer and explaining bind errors.
//
// civetweb reports a failed bind only as "null context when constructing CivetServer";
// we parse the address ourselves (so a bare port means loopback, not every interface) and,
// after a failure, probe the same address with bind(2) to say what went wrong.
//
// Thread-safety: free functions on values.
#ifndef FLOWLOADER_EXPORTERS_INTERNAL_LISTEN_ADDRESS_H_
#define FLOWLOADER_EXPORTERS_INTERNAL_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace flowloader {
namespace exporters_internal {

// ListenAddress is a numeric host and a port.
struct ListenAddress {
  std::string host;  // Numeric, without brackets: "127.0.0.1", "::1", "0.0.0.0".
  int port = 0;      // 0 = ephemeral.
  bool ipv6 = false;

  // ToString gives "host:port" ("[host]:port" for IPv6), also civetweb's syntax.
  std::string ToString() const { return WithPort(port); }
  // WithPort is ToString with another port (the one bound).
  std::string WithPort(int bound_port) const;
};

// ParseListenAddress accepts "host:port", "[v6]:port", "localhost:port" and a bare
// "port" (loopback). "" is InvalidArgument; callers substitute their default first.
absl::StatusOr<ListenAddress> ParseListenAddress(absl::string_view address);

// BindFailure builds the Status for a server that could not listen on `address`:
// it probes the address with bind(2) and maps errno to a code and plain words, falling
// back to `detail` (the library's message) when the probe binds fine.
absl::Status BindFailure(const ListenAddress& address, absl::string_view detail);

// PokeListener opens and at once closes a TCP connection to `address` (a wildcard
// host is reached through loopback), without waiting for the handshake to finish. It
// wakes a server thread blocked in poll() on its listening socket.
void PokeListener(const ListenAddress& address);

}  // namespace exporters_internal
}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_INTERNAL_LISTEN_ADDRESS_H_
