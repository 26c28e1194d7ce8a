// shard_data.h: WebDataset tar shards for tests, written by GNU tar from an ImageFolder,
// and the web servers that serve them (Debian's nginx, and a Python server that
// misbehaves on purpose).
//
// Thread-safety: not thread-safe; use from the test's main thread.
#ifndef FLOWLOADER_TESTS_TESTING_SHARD_DATA_H_
#define FLOWLOADER_TESTS_TESTING_SHARD_DATA_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace flowloader::testing {

// MakeShards writes the samples of the ImageFolder at `image_folder`, in its order, as
// shards `out_dir/train-000000.tar`, ... of `per_shard` samples each (members
// `NNNNNN.jpg` and `NNNNNN.cls`, NNNNNN the sample's index), by running GNU tar. Returns
// the brace pattern naming them (`out_dir/train-{000000..00000K}.tar`).
std::string MakeShards(const std::string& image_folder, const std::string& out_dir,
                       int per_shard);

// MakeTestCa writes a self-signed CA, `dir`/ca.pem and `dir`/ca.key, with the openssl
// CLI, and returns the path of ca.pem (for HttpOptions::ca_file).
std::string MakeTestCa(const std::string& dir);

// Server is a web server process started by the test on 127.0.0.1 and stopped (SIGTERM,
// then waited for) by the destructor.
class Server {
 public:
  // Nginx serves `root` (ranges, keep-alive) on a free port; every path under
  // /fail/ answers 500 (`return 500`). Its temp files go to `work_dir`, and one line per
  // request (`GET /path HTTP/1.1`, as each is served) to `work_dir`/access.log.
  static Server Nginx(const std::string& root, const std::string& work_dir);
  // NginxTls is Nginx over https: a CA made by MakeTestCa(work_dir) (ca_file()) signs the
  // server's certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1); Url says https.
  static Server NginxTls(const std::string& root, const std::string& work_dir);
  // Misbehaving runs tests/testing/misbehaving_http_server.py over `root` (see the
  // script for its path prefixes: /ok/, /stall/, /close/, /lie/, /flaky/, /die_after/N/).
  static Server Misbehaving(const std::string& root);

  Server(Server&& other) noexcept
      : pid_(other.pid_), port_(other.port_), scheme_(other.scheme_), ca_file_(other.ca_file_) {
    other.pid_ = -1;
  }
  Server& operator=(Server&&) = delete;
  ~Server();

  // Url is `http://127.0.0.1:PORT` (https for NginxTls) followed by `path` (which starts
  // with '/').
  std::string Url(const std::string& path) const;
  int port() const { return port_; }
  bool running() const { return pid_ > 0; }
  // ca_file is the PEM of the CA that signed an NginxTls server's certificate; else empty.
  const std::string& ca_file() const { return ca_file_; }

 private:
  Server(pid_t pid, int port, std::string scheme = "http", std::string ca_file = "")
      : pid_(pid), port_(port), scheme_(std::move(scheme)), ca_file_(std::move(ca_file)) {}
  pid_t pid_;
  int port_;
  std::string scheme_;
  std::string ca_file_;
};

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

}  // namespace flowloader::testing

#endif  // FLOWLOADER_TESTS_TESTING_SHARD_DATA_H_
