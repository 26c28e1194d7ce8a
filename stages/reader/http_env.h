// http_env.h: an Env that reads http:// and https:// URLs through libcurl, for tar shards
// served by a web server or an object store's HTTP endpoint.
//
// ReadRange sends one `Range: bytes=A-B` request (a tar member, or a window of headers
// while indexing); ReadFile one plain GET. Every other path goes to the wrapped Env.
//   * Connection reuse: curl easy handles are pooled (one per concurrent reader, so at
//     most num_workers of them), and each keeps its connections alive between requests.
//   * Bounded retries: 5xx, timeouts, refused/reset connections and bodies cut short are
//     retried `max_retries` times with exponential backoff; 404 and other 4xx are not.
//   * Errors carry a reason: http_404, http_4xx, http_5xx, timeout, connection_error,
//     http_partial (fewer bytes than Content-Length), http_bad_response (not the range
//     asked for, or more bytes than asked). After the retries the error is permanent
//     (not IsTransient), so FileReader does not multiply the attempts.
//   * A failing shard costs little: once `failure_limit` reads of one URL in a row failed,
//     its reads get one attempt each (no retries or backoff) until one succeeds, so a dead
//     shard's samples are skipped quickly instead of each waiting out the backoff.
//   * A stalled server is a timeout: no byte for `stall_timeout`, or the whole request
//     over `request_timeout`.
//   * Block cache: with cache_bytes > 0, ReadRange is served from aligned `block_bytes`
//     blocks, each fetched with one Range request and kept in a bounded LRU cache
//     (internal/block_cache.h), so later epochs send no request (like the OS page cache
//     for shards on disk). A member spanning blocks is assembled from them; a read longer
//     than cache_bytes bypasses the cache. A failed block is not cached.
//
// Thread-safety: thread-safe; each call uses its own pooled handle.
#ifndef FLOWLOADER_STAGES_READER_HTTP_ENV_H_
#define FLOWLOADER_STAGES_READER_HTTP_ENV_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "stages/reader/env.h"
#include "stages/reader/internal/block_cache.h"

namespace flowloader {

struct HttpOptions {
  // Time to establish a connection; > 0. Default 5 s.
  absl::Duration connect_timeout = absl::Seconds(5);
  // No byte received for this long is a timeout (checked about once a second); > 0.
  // Default 10 s.
  absl::Duration stall_timeout = absl::Seconds(10);
  // Limit on one whole request; > 0. Default 120 s.
  absl::Duration request_timeout = absl::Seconds(120);
  // Retries after a failed attempt (5xx, timeout, connection error); >= 0. Default 3.
  int max_retries = 3;
  // Wait before the first retry, doubled each retry; >= 0. Default 100 ms.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // Consecutive failed reads of one URL after which its reads are not retried; >= 1.
  int failure_limit = 3;
  // Bytes of remote blocks kept in memory (not yet in the memory plan); 0: no cache, one
  // Range request per read. Default 0 (off) until tests/shards_test.cc's dying-shard
  // case accounts for cached blocks; 256 MiB is the intended default.
  int64_t cache_bytes = 0;
  // Size of one cached block, fetched with one Range request; > 0. Default 4 MiB.
  int64_t block_bytes = int64_t{4} << 20;
};

// IsUrl reports whether `path` is an http:// or https:// URL.
bool IsUrl(const std::string& path);

class HttpEnv : public Env {
 public:
  // Create checks the options; `base` (nullptr: Env::Default()) serves non-URL paths and
  // must outlive the HttpEnv.
  static absl::StatusOr<std::unique_ptr<HttpEnv>> Create(Env* base, const HttpOptions& options);
  ~HttpEnv() override;

  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override;
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override;
  // A URL is never a directory, and cannot be listed.
  absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::string> CanonicalPath(const std::string& path) override;

  // requests is how many HTTP requests were sent (attempts, retries included).
  int64_t requests() const;

  // Request is one read's state, shared with libcurl's callbacks (internal).
  struct Request;

 private:
  HttpEnv(Env* base, const HttpOptions& options)
      : base_(base), options_(options), cache_(options.cache_bytes) {}

  // ReadUncached sends one Range request for [offset, offset + length).
  absl::Status ReadUncached(const std::string& url, int64_t offset, int64_t length,
                            std::string* contents);
  // ReadCached assembles [offset, offset + length) from cached blocks.
  absl::Status ReadCached(const std::string& url, int64_t offset, int64_t length,
                          std::string* contents);

  // Fetch runs `request` with retries and the per-URL failure accounting.
  absl::Status Fetch(Request& request);
  absl::Status Attempt(Request& request);
  void* AcquireHandle();
  void ReleaseHandle(void* handle);
  bool RecordResult(const std::string& url, bool ok);
  bool Failing(const std::string& url);

  Env* const base_;
  const HttpOptions options_;
  mutable std::mutex mu_;
  std::vector<void*> idle_handles_ ABSL_GUARDED_BY(mu_);  // CURL*, connections kept alive.
  std::map<std::string, int> consecutive_failures_ ABSL_GUARDED_BY(mu_);
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  internal::BlockCache cache_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_HTTP_ENV_H_
