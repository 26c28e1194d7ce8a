// s3_server.h: a real S3 server for tests, Ceph's RADOS Gateway (tests/testing/radosgw.sh:
// one monitor, one memstore OSD and radosgw on 127.0.0.1, in a scratch directory), and a
// small signed client to fill it (buckets, uploads, deletes) with libcurl's SigV4.
//
// Thread-safety: not thread-safe; use from the test's main thread.
#ifndef FLOWLOADER_TESTS_TESTING_S3_SERVER_H_
#define FLOWLOADER_TESTS_TESTING_S3_SERVER_H_

#include <memory>
#include <string>

namespace flowloader::testing {

class RadosGateway {
 public:
  // Start starts the three daemons under `dir` and waits until the gateway answers (a few
  // seconds); nullptr (and a test failure, naming the log directory) if it does not.
  static std::unique_ptr<RadosGateway> Start(const std::string& dir);
  // The destructor stops radosgw, the OSD and the monitor, in that order.
  ~RadosGateway();

  // RestartGateway kills radosgw (SIGKILL, as a crash), waits `down_seconds`, starts it
  // again on the same port and returns once it answers (the data stays: the monitor and
  // OSD keep running); false if it did not come back.
  bool RestartGateway(double down_seconds) const;

  const std::string& endpoint() const { return endpoint_; }  // http://127.0.0.1:PORT
  int port() const { return port_; }
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }

  // Request sends one signed request (`method` on `bucket`/`key`, `body` as the upload)
  // and returns the HTTP status (0: no answer).
  long Request(const std::string& method, const std::string& bucket,  // NOLINT(runtime/int)
               const std::string& key, const std::string& body = "") const;
  // CreateBucket, Put and Delete are Request with a check that it succeeded.
  bool CreateBucket(const std::string& bucket) const;
  bool Put(const std::string& bucket, const std::string& key, const std::string& body) const;
  bool Delete(const std::string& bucket, const std::string& key) const;
  // MultipartUploads is how many multipart uploads of `bucket` are in progress (started,
  // neither completed nor aborted; ListMultipartUploads), or -1 when the listing failed.
  int MultipartUploads(const std::string& bucket) const;
  // Upload puts every file below local directory `dir` as `prefix` + its relative path;
  // returns how many.
  int Upload(const std::string& dir, const std::string& bucket, const std::string& prefix) const;

 private:
  RadosGateway() = default;
  std::string dir_;
  std::string endpoint_;
  int port_ = 0;
  std::string access_key_;
  std::string secret_key_;
};

// FaultProxy runs tests/testing/s3_fault_proxy.py on a free port in front of the gateway
// on `upstream_port`: every `every`-th request gets the next of `faults` ("slowdown,reset,
// cut,stall,..."; see the script), each logged as one line to `log`. Stopped (SIGKILL,
// then waited for) by the destructor.
class FaultProxy {
 public:
  static std::unique_ptr<FaultProxy> Start(int upstream_port, int every,
                                           const std::string& faults, const std::string& log);
  ~FaultProxy();
  // endpoint is http://127.0.0.1:PORT.
  std::string endpoint() const;

 private:
  FaultProxy() = default;
  int pid_ = -1;
  int port_ = 0;
};

}  // namespace flowloader::testing

#endif  // FLOWLOADER_TESTS_TESTING_S3_SERVER_H_
