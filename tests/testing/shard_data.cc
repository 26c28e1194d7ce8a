#include "tests/testing/shard_data.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>  // NOLINT(build/c++11)
#include <cstdio>
#include <cstdlib>
#include <thread>  // NOLINT(build/c++11)

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "stages/reader/dataset.h"
#include "tests/testing/test_data.h"

namespace flowloader::testing {
namespace {

// Connects reports whether something accepts TCP connections on 127.0.0.1:port.
bool Connects(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// Spawn starts argv and waits (up to 20 s) until it listens on `port`.
pid_t Spawn(const std::vector<std::string>& argv, int port) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::perror("execv");
    ::_exit(127);
  }
  for (int i = 0; i < 400; ++i) {
    if (Connects(port)) return pid;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ADD_FAILURE() << argv[0] << " exited before listening on " << port;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << argv[0] << " did not listen on " << port;
  return pid;
}

}  // namespace

std::string MakeShards(const std::string& image_folder, const std::string& out_dir,
                       int per_shard) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open({image_folder});
  EXPECT_TRUE(ds.ok()) << ds.status();
  if (!ds.ok()) return "";
  const std::string staging = TempDir("shard_staging");
  EXPECT_EQ(std::system(absl::StrCat("mkdir -p ", out_dir).c_str()), 0);
  int shard = 0;
  for (int64_t first = 0; first < (*ds)->size(); first += per_shard, ++shard) {
    std::string members;
    for (int64_t i = first; i < std::min<int64_t>(first + per_shard, (*ds)->size()); ++i) {
      const std::string name = absl::StrFormat("%06d", i);
      WriteFile(absl::StrCat(staging, "/", name, ".jpg"), ReadFile((*ds)->FullPath(i)));
      WriteFile(absl::StrCat(staging, "/", name, ".cls"), absl::StrCat((*ds)->sample(i).label));
      absl::StrAppend(&members, " ", name, ".jpg ", name, ".cls");
    }
    EXPECT_EQ(std::system(absl::StrFormat("cd %s && tar -cf %s/train-%06d.tar%s", staging,
                                          out_dir, shard, members).c_str()),
              0);
  }
  return absl::StrFormat("%s/train-{000000..%06d}.tar", out_dir, shard - 1);
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

namespace {

// NginxConf is the configuration of Server::Nginx: `root` on 127.0.0.1:`port`, /fail/
// answering 500, with `listen_options` after the port and `server_extra` in the server.
std::string NginxConf(const std::string& root, const std::string& work_dir, int port,
                      const std::string& listen_options, const std::string& server_extra) {
  // `user root`: the test's files are under root's 0700 home; only used when run as root.
  return absl::StrCat(
      ::getuid() == 0 ? "user root root;\n" : "",
      "daemon off;\nmaster_process on;\nworker_processes 1;\n"
      "pid ", work_dir, "/nginx.pid;\nerror_log ", work_dir, "/error.log;\n"
      "events { worker_connections 512; }\n"
      "http {\n  log_format request '$request';\n  access_log ", work_dir,
      "/access.log request;\n  sendfile on;\n  keepalive_requests 100000;\n"
      "  client_body_temp_path ", work_dir, "/tmp;\n  proxy_temp_path ", work_dir,
      "/tmp;\n  fastcgi_temp_path ", work_dir, "/tmp;\n  uwsgi_temp_path ",
      work_dir, "/tmp;\n  scgi_temp_path ", work_dir, "/tmp;\n"
      "  server {\n    listen 127.0.0.1:", port, listen_options, ";\n", server_extra,
      "    root ", root, ";\n"
      "    location /fail/ { return 500; }\n    location / { }\n  }\n}\n");
}

// StartNginx writes `conf` to work_dir/nginx.conf and starts nginx with it.
pid_t StartNginx(const std::string& work_dir, const std::string& conf, int port) {
  EXPECT_EQ(std::system(absl::StrCat("mkdir -p ", work_dir, "/tmp").c_str()), 0);
  const std::string conf_file = work_dir + "/nginx.conf";
  WriteFile(conf_file, conf);
  return Spawn({"/usr/sbin/nginx", "-c", conf_file, "-p", work_dir}, port);
}

// Openssl runs the openssl CLI with `args` in `dir`, quietly; false (and a test failure)
// if it fails.
bool Openssl(const std::string& dir, const std::string& args) {
  const int rc = std::system(
      absl::StrCat("cd ", dir, " && /usr/bin/openssl ", args, " >openssl.log 2>&1").c_str());
  EXPECT_EQ(rc, 0) << "openssl " << args << " (see " << dir << "/openssl.log)";
  return rc == 0;
}

// EC P-256 keys: generated in milliseconds, where RSA takes a noticeable fraction of a second.
constexpr char kNewKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

// MakeServerCert writes `dir`/server.pem and server.key: a certificate for 127.0.0.1 signed
// by the CA in `dir` (MakeTestCa).
void MakeServerCert(const std::string& dir) {
  WriteFile(dir + "/server_ext.cnf",
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
            "extendedKeyUsage=serverAuth\n");
  if (!Openssl(dir, absl::StrCat("req -new ", kNewKey,
                                 " -keyout server.key -out server.csr -subj /CN=127.0.0.1"))) {
    return;
  }
  Openssl(dir, "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
               "-days 2 -extfile server_ext.cnf -out server.pem");
}

}  // namespace

std::string MakeTestCa(const std::string& dir) {
  EXPECT_EQ(std::system(absl::StrCat("mkdir -p ", dir).c_str()), 0);
  Openssl(dir, absl::StrCat("req -x509 ", kNewKey,
                            " -keyout ca.key -out ca.pem -days 2 -subj /CN=flowloader-test-ca"
                            " -addext basicConstraints=critical,CA:TRUE"
                            " -addext keyUsage=critical,keyCertSign,cRLSign"));
  return dir + "/ca.pem";
}

Server Server::Nginx(const std::string& root, const std::string& work_dir) {
  const int port = FreePort();
  return Server(StartNginx(work_dir, NginxConf(root, work_dir, port, "", ""), port), port);
}

Server Server::NginxTls(const std::string& root, const std::string& work_dir) {
  const int port = FreePort();
  const std::string ca_file = MakeTestCa(work_dir);
  MakeServerCert(work_dir);
  const std::string tls = absl::StrCat("    ssl_certificate ", work_dir, "/server.pem;\n",
                                       "    ssl_certificate_key ", work_dir, "/server.key;\n");
  return Server(StartNginx(work_dir, NginxConf(root, work_dir, port, " ssl", tls), port), port,
                "https", ca_file);
}

Server Server::Misbehaving(const std::string& root) {
  const int port = FreePort();
  const std::string script = "tests/testing/misbehaving_http_server.py";
  return Server(Spawn({"/usr/bin/python3", script, root, absl::StrCat(port)}, port), port);
}

Server::~Server() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::string Server::Url(const std::string& path) const {
  return absl::StrCat(scheme_, "://127.0.0.1:", port_, path);
}

}  // namespace flowloader::testing
