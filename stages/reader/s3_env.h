// s3_env.h: an Env that reads s3://BUCKET/KEY from S3 or any store that speaks its API
// (MinIO, Ceph's RADOS Gateway, Cloudflare R2), on HttpEnv's machinery: pooled
// keep-alive handles on curl multi handles, bounded retries (here 8 by default, with
// "equal jitter" and Retry-After: a gateway restarting within ~12 s loses no read), the
// block cache for admitted tar shards, Cancel within ~100 ms.
//
//   * Settings and credentials are resolved once, at Create, in the AWS CLI's order
//     (internal/s3_config.h): s3_* options, AWS_* variables, profile files. Where the
//     credentials came from is kept (credential_source()); the secret never appears in a
//     message, a log line or the summary.
//   * Requests are signed with Signature V4 by libcurl (CURLOPT_AWS_SIGV4), with
//     `x-amz-content-sha256: UNSIGNED-PAYLOAD` (curl 7.88 does not send it) and the session
//     token as x-amz-security-token; s3_anonymous sends them unsigned.
//   * ReadFile is a GET, ReadRange a ranged GET; ListDirectory is ListObjectsV2 with
//     delimiter=/ by pages (continuation tokens): the keys under PATH/ are its files, the
//     common prefixes its sub-directories, so an ImageFolder prefix's next path component
//     is the class. IsDirectory is true when any key lies under PATH/.
//   * NewWritableFile uploads s3://BUCKET/KEY as it is written (s3_upload.h): one PUT for
//     a small object, else a multipart upload in parts of `upload_part_bytes`, aborted
//     when the file is dropped before Close; its requests are retried as reads are.
//   * Errors name the S3 code, the bucket, the endpoint and the credential source.
//     NoSuchKey is not_found (a key that vanished mid-epoch is a counted skip, as on
//     disk); SlowDown, InternalError, ServiceUnavailable (5xx) and RequestTimeout are
//     retried; AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch (a wrong secret,
//     or a clock off by minutes), NoSuchBucket are not.
//
// Thread-safety: thread-safe, as HttpEnv.
#ifndef FLOWLOADER_STAGES_READER_S3_ENV_H_
#define FLOWLOADER_STAGES_READER_S3_ENV_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/http_env.h"
#include "stages/reader/s3_options.h"

namespace flowloader {
namespace s3_internal {
struct S3Config;
struct ListPage;
}  // namespace s3_internal

// IsS3Path reports whether `path` starts with s3://.
bool IsS3Path(const std::string& path);

class S3Env : public HttpEnv {
 public:
  // Create resolves `s3` against the process's environment and profile files (refused in
  // one line naming the knob); `http` sets timeouts, retries and the block cache
  // (jitter is 0.5; max_retries kSchemeRetries means 8). `base` (nullptr:
  // Env::Default()) serves other paths. Nothing is sent yet: the first listing or read meets the store.
  static absl::StatusOr<std::unique_ptr<S3Env>> Create(Env* base, const HttpOptions& http,
                                                       const S3Options& s3);
  // CreateWith is Create with the environment looked up through `env` (tests).
  static absl::StatusOr<std::unique_ptr<S3Env>> CreateWith(Env* base, const HttpOptions& http,
                                                           const S3Options& s3,
                                                           const EnvLookup& env);
  ~S3Env() override;

  absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::string> CanonicalPath(const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;

  // WriteRequest is one request of an upload (for S3Upload): `method` on object `path`
  // with `query` (sorted parameters, already encoded; may be empty) and `body`; the 2xx
  // answer's body goes to *response and its ETag header to *etag (either may be null).
  // Retried as reads are; a `cleanup` request is sent even after Cancel.
  absl::Status WriteRequest(const std::string& method, const std::string& path,
                            const std::string& query, absl::string_view body, bool cleanup,
                            std::string* response, std::string* etag);

  // ObjectETag is the ETag of object `path` (quotes kept), from a one-byte ranged GET.
  absl::StatusOr<std::string> ObjectETag(const std::string& path);

  // ListKeys lists every key under `prefix` of `bucket` (no delimiter), page by page:
  // for tests and tools.
  absl::StatusOr<std::vector<std::string>> ListKeys(const std::string& bucket,
                                                    const std::string& prefix);

  // list_pages is how many ListObjectsV2 pages were read.
  int64_t list_pages() const { return list_pages_.load(); }
  const std::string& credential_source() const;
  const std::string& endpoint() const;
  const std::string& endpoint_source() const;
  const std::string& region() const;
  bool path_style() const;

 protected:
  bool Handles(const std::string& path) const override { return IsS3Path(path); }
  void PrepareAttempt(Request& r, CURL* curl, curl_slist** headers) const override;
  absl::Status ResponseError(const Request& r) const override;
  std::string ErrorContext(const Request& r) const override;
  // Until the endpoint has answered once, at most 3 retries: a wrong or dead endpoint is
  // refused in about a second, while a gateway restarting mid-run gets the full budget.
  int RetriesFor(const Request& r) const override;

 private:
  S3Env(Env* base, const HttpOptions& http, std::unique_ptr<const s3_internal::S3Config> config,
        int list_page_keys, int64_t upload_part_bytes);

  // ObjectUrl is the endpoint URL of `key` in `bucket` (path or virtual style); with an
  // empty key, the bucket's URL (for listing).
  std::string ObjectUrl(const std::string& bucket, const std::string& key) const;
  // Context is " (bucket B, endpoint E, credentials from C)" for messages.
  std::string Context(const std::string& bucket) const;
  // ReadListPage reads one ListObjectsV2 page of `bucket` under `prefix`.
  absl::Status ReadListPage(const std::string& bucket, const std::string& prefix,
                        const std::string& delimiter, int max_keys, const std::string& token,
                        s3_internal::ListPage* page);

  const std::unique_ptr<const s3_internal::S3Config> config_;  // Never null.
  const int list_page_keys_;
  const int64_t upload_part_bytes_;
  std::atomic<int64_t> list_pages_{0};
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_S3_ENV_H_
