// http_env.h: an Env that reads http:// and https:// URLs through libcurl, for tar shards
// served by a web server or an object store's HTTP endpoint.
//
// ReadRange sends one `Range: bytes=A-B` request (a tar member, or a window of headers
// while indexing); ReadFile one plain GET. Every other path goes to the wrapped Env.
//   * Connection reuse: curl easy handles are pooled (one per concurrent reader, so at
//     most num_workers of them), and each keeps its connections alive between requests.
//   * Bounded retries: 5xx, timeouts, refused/reset connections and bodies cut short are
//     retried `max_retries` times with exponential backoff (optionally jittered), never
//     sooner than the server's Retry-After, never longer than max_backoff a wait; 404 and
//     other 4xx are not. Counted (retries()).
//   * Envs built on this one (S3Env) choose the paths they serve (Handles), the URL and
//     headers of each attempt (PrepareAttempt: signing) and the error of a 4xx/5xx
//     response (ResponseError), and share everything else: pool, retries, cache, cancel.
//   * Errors carry a reason: http_404, http_4xx, http_5xx, timeout, connection_error,
//     http_partial (fewer bytes than Content-Length), http_bad_response (not the range
//     asked for, or more bytes than asked), tls (the server's certificate does not verify
//     against ca_file or the system's CAs; libcurl's reason, never retried). After the
//     retries the error is permanent (not IsTransient), so FileReader does not multiply
//     the attempts.
//   * A failing shard costs little: once `failure_limit` reads of one URL in a row failed,
//     its reads get one attempt each (no retries or backoff) until one succeeds, so a dead
//     shard's samples are skipped quickly instead of each waiting out the backoff.
//   * A stalled or dripping server is a timeout: no byte for `stall_timeout`, fewer than
//     `min_bytes_per_second` × stall_timeout bytes in any stall_timeout window (a body sent
//     a byte a second), or the whole attempt over `request_timeout`. Retried and counted
//     like any timeout.
//   * Cancel() (and HttpOptions::cancel) end every transfer in flight within ~100 ms and
//     fail every later read at once (absl::Cancelled): transfers run on a multi handle
//     polled every 100 ms, so no network state (a server that never answers, a drip) can
//     hold Pipeline::Stop or a signal.
//   * Block cache for admitted shards: AdmitShards takes whole shards, in the order
//     given, while their sizes fit cache_bytes. Reads of an admitted shard are served
//     from aligned `block_bytes` blocks, each fetched with one Range request and kept
//     (internal/block_cache.h), so an epoch costs one request per block instead of one
//     per member, and later epochs none (like the OS page cache for shards on disk).
//     Shards not admitted are read one Range request per member: an LRU over a working
//     set larger than the cache would evict every block before its reuse on a shuffled
//     epoch. A failed block is not cached, so a shard that dies keeps serving the blocks
//     already fetched and fails the reads that need others. A block's body is written
//     straight into its slot of the cache's huge-page pool (internal/block_pool.h), and
//     ClaimBlocks / FetchBlocks let the read stage fetch blocks ahead, each once, several
//     consecutive blocks with one request.
//   * Index reads are not cached as they are read: NewRandomAccessFile reads each range
//     with its own request (indexing reads every shard, admitted or not, before admission
//     decides); the dataset then hands the index windows of the admitted shards to
//     SeedBlock, so bytes read to index a shard are not fetched a second time.
//
// Thread-safety: thread-safe; each call uses its own pooled handle.
#ifndef FLOWLOADER_STAGES_READER_HTTP_ENV_H_
#define FLOWLOADER_STAGES_READER_HTTP_ENV_H_

#include <atomic>
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
#include "stages/reader/storage_stats.h"

// libcurl's handle types, so this header need not include curl.h.
typedef void CURL;  // NOLINT: libcurl's own declaration.
struct curl_slist;

namespace flowloader {

struct HttpOptions {
  // Time to establish a connection; > 0. Default 5 s.
  absl::Duration connect_timeout = absl::Seconds(5);
  // No byte received for this long is a timeout (checked about once a second); > 0.
  // Default 10 s.
  absl::Duration stall_timeout = absl::Seconds(10);
  // Slowest transfer accepted: fewer bytes than this × stall_timeout in a stall_timeout
  // window is a timeout (curl's low-speed limit); >= 0, 0 = only stalls count. Default
  // 1 KiB/s: a 1 MiB block must come within ~17 min, a drip fails within one window.
  int64_t min_bytes_per_second = 1024;
  // Limit on one whole attempt (the total deadline, however fast bytes arrive); > 0.
  // Default 120 s.
  absl::Duration request_timeout = absl::Seconds(120);
  // Retries after a failed attempt (5xx, timeout, connection error); >= 0, or
  // kSchemeRetries: the scheme's own, 3 for http(s):// and 8 for s3:// (S3Env: with
  // jitter 0.5 its waits add up to 12.75-25.5 s, so a gateway restarting within ~12 s
  // loses no read). Default kSchemeRetries.
  static constexpr int kSchemeRetries = -1;
  int max_retries = kSchemeRetries;
  // Wait before the first retry, doubled each retry; >= 0. Default 100 ms.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // Jitter: each wait is drawn uniformly from [backoff × (1 - jitter), backoff] instead
  // of the backoff itself, so readers that failed together (a 503 SlowDown) come back
  // spread out: 1 = AWS's "full jitter", 0.5 its "equal jitter" (S3Env's: spread, yet
  // at least half of each backoff is waited). 0..1; default 0 for plain HTTP (waits as
  // documented above).
  double jitter = 0;
  // Longest single wait, whatever the doubling or a server's Retry-After asks; >= 0.
  // Default 20 s.
  absl::Duration max_backoff = absl::Seconds(20);
  // Consecutive failed reads of one URL after which its reads are not retried; >= 1.
  int failure_limit = 3;
  // Budget for AdmitShards: whole shards whose sizes fit it are cached (the pipeline's
  // memory plan counts the admitted bytes as its `http_cache` part); >= 0, 0 = no cache,
  // one Range request per read. Default 256 MiB (PipelineOptions::http_cache_mb sets it).
  int64_t cache_bytes = int64_t{256} << 20;
  // Size of one cached block, fetched with one Range request; > 0. Default 1 MiB: large
  // enough that a request's cost is spread over many members, small enough that the
  // first batch does not wait for a whole shard.
  int64_t block_bytes = int64_t{1} << 20;
  // https://: a PEM bundle of the CAs to trust instead of the system's (a private CA);
  // empty = libcurl's default bundle. Certificates are always verified, host included:
  // there is no option to turn that off. Create refuses a file that cannot be read or
  // holds no certificate.
  std::string ca_file;
  // When set, *cancel becoming true cancels every read as Cancel() does (lets a caller
  // such as the CLI's signal thread cancel reads before it holds the Env, e.g. while the
  // dataset's shards are being indexed). Not owned beyond the shared_ptr.
  std::shared_ptr<const std::atomic<bool>> cancel;
  // Remote reads the read stage starts ahead of the workers (stages/reader/read_ahead.h;
  // not read by HttpEnv): kReadAheadAuto (the spec's `auto`, the default) sizes the
  // requests in flight from their measured latency and the rate samples are taken, up
  // to 128; N > 0 keeps N in flight; 0 = off (each worker reads its own sample).
  static constexpr int kReadAheadAuto = -1;
  int read_ahead = kReadAheadAuto;
};

// CheckCaFile refuses a non-empty `ca_file` that cannot be read or holds no PEM
// certificate, in one line naming the knob (http_ca_file), so a typo fails at Create
// instead of as a certificate error on every shard.
absl::Status CheckCaFile(const std::string& ca_file);

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
  // An http(s) URL cannot be written (refused); other paths go to the base Env.
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;

  // NewRandomAccessFile reads a URL one Range request per Read, never through the cache.
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;

  // ShardSize is one shard's URL and its bytes, for AdmitShards.
  struct ShardSize {
    std::string url;
    int64_t bytes = 0;
  };
  // AdmitShards admits `shards` to the block cache in the order given, while the sum of
  // their sizes fits cache_bytes (it stops at the first that does not fit), and returns
  // the admitted bytes. Call it before the reads the cache should serve; a later call
  // (a mixture's next source) adds to what was admitted, within the same budget.
  int64_t AdmitShards(const std::vector<ShardSize>& shards);
  // SeedBlock puts bytes read at `offset` of an admitted shard (a window its index read,
  // window_prefetch.h) in the block cache as the block starting there, so the block is
  // not fetched again. Only a whole block at a block boundary is kept (cut to the
  // shard's admitted size, as a fetched block is), or the shard's last, shorter one;
  // returns the bytes kept (0 for a shard not admitted, or bytes of another shape).
  int64_t SeedBlock(const std::string& url, int64_t offset, std::string bytes);
  // Block read-ahead (the read stage's, for admitted shards): ClaimBlocks returns true
  // when some block of [offset, offset + length) of the admitted shard `url` is neither
  // cached, being fetched nor claimed, and claims it (the caller then runs FetchBlocks);
  // false otherwise, and for a shard not admitted. FetchBlocks brings every block of the
  // range into the cache (each fetched once, whoever asks) without copying any out, with
  // the blocks after them up to 2 MiB in the same request (a run, BlockCache::Run: each
  // block cached as its bytes arrive); a block another fetch is bringing is not waited
  // for (its reader waits for it in the cache). A failed attempt is retried from the
  // first block it did not complete.
  bool ClaimBlocks(const std::string& url, int64_t offset, int64_t length);
  bool IsAdmitted(const std::string& url) const { return AdmittedSize(url) >= 0; }
  // FetchBlocks returns whether it sent a request (false: nothing to fetch).
  absl::StatusOr<bool> FetchBlocks(const std::string& url, int64_t offset, int64_t length);
  // BlocksCached reports whether every block of [offset, offset + length) of the
  // admitted shard `url` is in the cache (false for a shard not admitted).
  bool BlocksCached(const std::string& url, int64_t offset, int64_t length) const;
  // ReadMember reads [offset, offset + length) of `url` with one Range request past the
  // block cache (nothing kept, no block fetched): the read stage's read of a member of
  // the batch being dispatched now, whose whole blocks (~1 MiB each, ~50 for the first
  // batch of a shuffled epoch) would come later than its ~100 KB. Counted
  // (member_reads).
  absl::Status ReadMember(const std::string& url, int64_t offset, int64_t length,
                          std::string* contents);
  // block_fetches is how many requests fetched blocks into the cache (a run of blocks
  // is one; retries not counted twice); member_reads how many ReadMember calls were made.
  int64_t block_fetches() const { return cache_.fetches(); }
  int64_t member_reads() const { return member_reads_.load(std::memory_order_relaxed); }
  // admitted lists the admitted shards (by URL); admitted_bytes and admitted_shards sum
  // them up.
  std::vector<ShardSize> admitted() const;
  int64_t admitted_bytes() const;
  int admitted_shards() const;
  int64_t cache_budget_bytes() const { return options_.cache_bytes; }

  // requests is how many HTTP requests were sent (attempts, retries included); retries
  // how many of them were retries after a failed attempt.
  int64_t requests() const;
  int64_t retries() const { return retries_.load(std::memory_order_relaxed); }
  // set_storage_stats makes every later attempt count into `stats` (by scheme, error
  // code and latency; storage_stats.h); null: not counted. Call before the first read
  // (StorageEnv does, as it makes the Env).
  void set_storage_stats(std::shared_ptr<StorageStats> stats) { stats_ = std::move(stats); }

  // Cancel aborts every transfer in flight within ~100 ms and makes every later read fail
  // at once with absl::Cancelled (retry backoffs end too). Irreversible; thread-safe;
  // const so a const Dataset can cancel its reads on Stop.
  void Cancel() const { cancelled_.store(true); }
  bool cancelled() const {
    return cancelled_.load() || (options_.cancel != nullptr && options_.cancel->load());
  }

  // Request is one read's state, shared with libcurl's callbacks (internal).
  struct Request;
  // Handle is a pooled easy handle and the multi handle it runs on (internal).
  struct Handle;
  // CancelledFor is cancelled() for `r`: never for a cleanup request (Request::cleanup).
  bool CancelledFor(const Request& r) const;

 protected:
  HttpEnv(Env* base, const HttpOptions& options)
      : base_(base), options_(options), cache_(options.cache_bytes, options.block_bytes) {}
  // CheckOptions is Create's validation of `options` (and libcurl's global init).
  static absl::Status CheckOptions(const HttpOptions& options);

  // Handles reports whether this Env reads `path` itself (else it goes to the base Env):
  // http:// and https:// URLs here.
  virtual bool Handles(const std::string& path) const { return IsUrl(path); }
  // PrepareAttempt runs before each attempt of `r` on `curl`, after the common options:
  // it may set r.target (the URL sent), append to *headers (freed after the attempt) and
  // set signing options. Nothing here.
  virtual void PrepareAttempt(Request& r, CURL* curl, curl_slist** headers) const;
  // ResponseError is the error for a response with status >= 400 (other than 416 to a
  // range): http_404, http_5xx (retried), http_4xx here.
  virtual absl::Status ResponseError(const Request& r) const;
  // ErrorContext is appended to the message of a transport error (connection, timeout,
  // short body) of `r`: where it went. Nothing here.
  virtual std::string ErrorContext(const Request& r) const;
  // RetriesFor is how many retries `r` gets after a failed attempt: max_retries here.
  virtual int RetriesFor(const Request& /*r*/) const { return options_.max_retries; }
  // answered reports whether any server has answered a request of this Env yet (any
  // HTTP status): until then a connection error is more likely a wrong endpoint than a
  // restarting one.
  bool answered() const { return answered_.load(std::memory_order_relaxed); }
  // Fetch runs `request` with retries and the per-URL failure accounting.
  absl::Status Fetch(Request& request);
  Env* base_env() const { return base_; }
  const HttpOptions& http_options() const { return options_; }

 private:
  // ReadUncached sends one Range request for [offset, offset + length).
  absl::Status ReadUncached(const std::string& url, int64_t offset, int64_t length,
                            std::string* contents);
  // FetchBlock reads the block of the admitted shard `url` (`shard_bytes` long) that
  // starts at `block_start` into `into` (room for block_bytes); returns its size.
  absl::StatusOr<int64_t> FetchBlock(const std::string& url, int64_t shard_bytes,
                                     int64_t block_start, char* into);
  // CachedBlock is block `index` of the admitted shard `url` (`shard_bytes` long): from
  // the cache, from a fetch in flight, or fetched now (BlockCache::Get).
  absl::StatusOr<internal::BlockCache::Block> CachedBlock(const std::string& url,
                                                          int64_t shard_bytes, int64_t index);
  // ReadCached assembles [offset, offset + length) from cached blocks.
  absl::Status ReadCached(const std::string& url, int64_t shard_bytes, int64_t offset,
                          int64_t length, std::string* contents);

  absl::Status Attempt(Request& request);
  // CountAttempt adds an attempt that sent a request to the storage stats.
  void CountAttempt(const Request& request, const absl::Status& status, absl::Duration took,
                    bool retry) const;
  // RetryWait is the wait before a retry: `backoff` (or a full-jitter draw below it), at
  // least the server's `retry_after`, at most max_backoff.
  absl::Duration RetryWait(absl::Duration backoff, absl::Duration retry_after) const;
  Handle* AcquireHandle();
  void ReleaseHandle(Handle* handle);
  // SleepUnlessCancelled sleeps for `d`, or less once cancelled; returns !cancelled().
  bool SleepUnlessCancelled(absl::Duration d) const;
  bool RecordResult(const std::string& url, bool ok);
  bool Failing(const std::string& url);
  // AdmittedSize is the admitted shard's size, or -1 for a URL not admitted.
  int64_t AdmittedSize(const std::string& url) const;

  Env* const base_;
  const HttpOptions options_;
  mutable std::mutex mu_;
  // Each keeps its connections alive (in its multi handle's connection cache).
  std::vector<Handle*> idle_handles_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<bool> cancelled_{false};
  std::map<std::string, int> consecutive_failures_ ABSL_GUARDED_BY(mu_);
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> retries_{0};
  std::atomic<int64_t> member_reads_{0};
  std::atomic<bool> answered_{false};
  // Shards whose reads are cached, with their sizes (blocks never reach past them, so the
  // cache holds at most admitted_bytes_).
  std::map<std::string, int64_t> admitted_ ABSL_GUARDED_BY(mu_);
  int64_t admitted_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  internal::BlockCache cache_;
  std::shared_ptr<StorageStats> stats_;  // Null: attempts are not counted.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_HTTP_ENV_H_
