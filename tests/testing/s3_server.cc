// s3_server.cc: RadosGateway (see s3_server.h).
#include "tests/testing/s3_server.h"

#include <curl/curl.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>  // NOLINT(build/c++11)
#include <csignal>
#include <thread>  // NOLINT(build/c++11)

#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader::testing {
namespace {

constexpr char kScript[] = "tests/testing/radosgw.sh";

// Files lists every regular file below `dir`, as paths relative to it.
void Files(const std::string& dir, const std::string& relative, std::vector<std::string>* out) {
  DIR* d = ::opendir((dir + "/" + relative).c_str());
  if (d == nullptr) return;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = relative.empty() ? name : relative + "/" + name;
    struct stat st;
    if (::stat((dir + "/" + child).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      Files(dir, child, out);
    } else if (S_ISREG(st.st_mode)) {
      out->push_back(child);
    }
  }
  ::closedir(d);
}

size_t Discard(char*, size_t size, size_t count, void*) { return size * count; }

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// Encode percent-encodes a key for the URL path (keeps '/').
std::string Encode(const std::string& key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(c);
    } else {
      out += {'%', kHex[u >> 4], kHex[u & 0xF]};
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<RadosGateway> RadosGateway::Start(const std::string& dir) {
  const std::string command = absl::StrCat(kScript, " start ", dir, " >", dir, ".log 2>&1");
  if (std::system(command.c_str()) != 0) {
    ADD_FAILURE() << "radosgw did not start: " << ReadFile(dir + ".log") << " (logs in " << dir
                  << "/log)";
    return nullptr;
  }
  std::unique_ptr<RadosGateway> gw(new RadosGateway());
  gw->dir_ = dir;
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir + "/env"), '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    env[kv.first] = kv.second;
  }
  gw->endpoint_ = env["RGW_ENDPOINT"];
  gw->access_key_ = env["RGW_ACCESS_KEY"];
  gw->secret_key_ = env["RGW_SECRET_KEY"];
  EXPECT_TRUE(absl::SimpleAtoi(env["RGW_PORT"], &gw->port_)) << ReadFile(dir + "/env");
  return gw;
}

bool RadosGateway::RestartGateway(double down_seconds) const {
  return std::system(absl::StrCat(kScript, " restart-gateway ", dir_, " ", down_seconds, " >>",
                                  dir_, ".log 2>&1")
                         .c_str()) == 0;
}

RadosGateway::~RadosGateway() {
  // A gateway that will not stop is left to the test's tmpdir; the log says why.
  const int stopped =
      std::system(absl::StrCat(kScript, " stop ", dir_, " >>", dir_, ".log 2>&1").c_str());
  (void)stopped;
}

long RadosGateway::Request(const std::string& method, const std::string& bucket,  // NOLINT
                           const std::string& key, const std::string& body) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return 0;
  const std::string url = absl::StrCat(endpoint_, "/", bucket, key.empty() ? "" : "/", Encode(key));
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(curl, CURLOPT_USERNAME, access_key_.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, secret_key_.c_str());
  curl_slist* headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
  if (method == "PUT") {
    // A PUT needs its Content-Length (radosgw answers 411 otherwise).
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  long status = 0;  // NOLINT(runtime/int): curl's type.
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return status;
}

int RadosGateway::MultipartUploads(const std::string& bucket) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return -1;
  // "uploads=": Signature V4's canonical query, which curl 7.88 signs as written.
  const std::string url = absl::StrCat(endpoint_, "/", bucket, "?uploads=");
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(curl, CURLOPT_USERNAME, access_key_.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, secret_key_.c_str());
  curl_slist* headers = curl_slist_append(nullptr, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  long status = 0;  // NOLINT(runtime/int): curl's type.
  if (curl_easy_perform(curl) == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  EXPECT_EQ(status, 200) << "list multipart uploads of " << bucket << ": " << body;
  if (status != 200 || !absl::StrContains(body, "ListMultipartUploadsResult")) return -1;
  int uploads = 0;
  for (size_t at = body.find("<Upload>"); at != std::string::npos; at = body.find("<Upload>", at + 1)) {
    ++uploads;
  }
  return uploads;
}

bool RadosGateway::CreateBucket(const std::string& bucket) const {
  const long status = Request("PUT", bucket, "");  // NOLINT(runtime/int)
  EXPECT_EQ(status, 200) << "create bucket " << bucket;
  return status == 200;
}

bool RadosGateway::Put(const std::string& bucket, const std::string& key,
                       const std::string& body) const {
  const long status = Request("PUT", bucket, key, body);  // NOLINT(runtime/int)
  EXPECT_EQ(status, 200) << "put " << bucket << "/" << key;
  return status == 200;
}

bool RadosGateway::Delete(const std::string& bucket, const std::string& key) const {
  const long status = Request("DELETE", bucket, key);  // NOLINT(runtime/int)
  EXPECT_EQ(status, 204) << "delete " << bucket << "/" << key;
  return status == 204;
}

int RadosGateway::Upload(const std::string& dir, const std::string& bucket,
                         const std::string& prefix) const {
  std::vector<std::string> files;
  Files(dir, "", &files);
  int n = 0;
  for (const std::string& f : files) n += Put(bucket, prefix + f, ReadFile(dir + "/" + f)) ? 1 : 0;
  return n;
}

std::unique_ptr<FaultProxy> FaultProxy::Start(int upstream_port, int every,
                                              const std::string& faults, const std::string& log) {
  std::unique_ptr<FaultProxy> proxy(new FaultProxy());
  proxy->port_ = FreePort();
  const std::vector<std::string> argv = {"/usr/bin/python3", "tests/testing/s3_fault_proxy.py",
                                         absl::StrCat(upstream_port), absl::StrCat(proxy->port_),
                                         absl::StrCat(every), faults, log};
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  proxy->pid_ = pid;
  // Ready once a request gets an answer (curl exits 0 on any HTTP status).
  const std::string probe =
      absl::StrCat("curl -s -o /dev/null --max-time 1 ", proxy->endpoint(), "/ready-probe");
  for (int i = 0; i < 100; ++i) {
    if (std::system(probe.c_str()) == 0) return proxy;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "the fault proxy did not answer on " << proxy->endpoint();
  return proxy;
}

FaultProxy::~FaultProxy() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::string FaultProxy::endpoint() const { return absl::StrCat("http://127.0.0.1:", port_); }

}  // namespace flowloader::testing
