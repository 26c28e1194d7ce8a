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

Server Server::Nginx(const std::string& root, const std::string& work_dir) {
  const int port = FreePort();
  EXPECT_EQ(std::system(absl::StrCat("mkdir -p ", work_dir, "/tmp").c_str()), 0);
  const std::string conf = work_dir + "/nginx.conf";
  // `user root`: the test's files are under root's 0700 home; only used when run as root.
  WriteFile(conf, absl::StrCat(
                      ::getuid() == 0 ? "user root root;\n" : "",
                      "daemon off;\nmaster_process on;\nworker_processes 1;\n"
                      "pid ", work_dir, "/nginx.pid;\nerror_log ", work_dir, "/error.log;\n"
                      "events { worker_connections 512; }\n"
                      "http {\n  log_format request '$request';\n  access_log ", work_dir,
                      "/access.log request;\n  sendfile on;\n  keepalive_requests 100000;\n"
                      "  client_body_temp_path ", work_dir, "/tmp;\n  proxy_temp_path ", work_dir,
                      "/tmp;\n  fastcgi_temp_path ", work_dir, "/tmp;\n  uwsgi_temp_path ",
                      work_dir, "/tmp;\n  scgi_temp_path ", work_dir, "/tmp;\n"
                      "  server {\n    listen 127.0.0.1:", port, ";\n    root ", root, ";\n"
                      "    location /fail/ { return 500; }\n    location / { }\n  }\n}\n"));
  return Server(Spawn({"/usr/sbin/nginx", "-c", conf, "-p", work_dir}, port), port);
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
  return absl::StrCat("http://127.0.0.1:", port_, path);
}

}  // namespace flowloader::testing
