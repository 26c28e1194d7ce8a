// storage_stats.h: what remote storage (s3://, http(s)://) did for a pipeline, by scheme:
// requests sent, body bytes received, retries, errors by code, and a request latency
// histogram; and the read stage's read-ahead figures (ReadAheadFigures), with the one
// setting of it the runtime's autotuner moves (SetReadAheadFloor).
//
// HttpEnv (and S3Env on it) records one entry per attempt it sends; StorageEnv owns one
// StorageStats shared by all its remote Envs, and the pipeline's PipelineStats holds it
// too, so exporters/ (Prometheus, the summary JSON, the diagnosis) read it without
// knowing the Envs. Nothing here knows Prometheus: plain counters under one mutex (a
// request costs a round trip; a lock per request is noise).
//   * Labels are bounded: schemes are the registered ones ("s3", "http", "https"); an error code is an S3 <Code> (SlowDown, NoSuchKey, ...), an
//     HTTP status without one ("http_503"), or a transport failure ("timeout",
//     "connection_reset", ...), and after kMaxErrorCodes distinct codes of one scheme the
//     rest are counted as "other". Never a key, URL or credential.
//
// Thread-safety: thread-safe.
#ifndef FLOWLOADER_STAGES_READER_STORAGE_STATS_H_
#define FLOWLOADER_STAGES_READER_STORAGE_STATS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"

namespace flowloader {

// StorageSchemeStats is one scheme's counts, as read at one moment.
struct StorageSchemeStats {
  // Upper bounds of the latency buckets in seconds (a last bucket is +Inf): 1 ms … 30 s,
  // so a loopback GET (~1 ms), a 20 ms region hop and a retried stall each land apart.
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.02,
                                                     0.035, 0.05,   0.1,   0.25, 0.5,
                                                     1.0,   2.5,    10.0,  30.0};
  std::string scheme;
  int64_t requests = 0;  // Attempts sent, retries included.
  int64_t bytes = 0;     // Body bytes of successful attempts.
  int64_t retries = 0;   // Attempts that were retries of a failed one.
  std::map<std::string, int64_t> errors;  // Failed attempts by code.
  std::array<uint64_t, kBounds.size() + 1> buckets{};  // Not cumulative; last is +Inf.
  double latency_sum_seconds = 0;  // Over all requests (buckets sum to `requests`).

  int64_t TotalErrors() const;
  // LatencyQuantile estimates the q-quantile (0 < q < 1) of the request latency in
  // seconds, interpolating inside its bucket as Prometheus' histogram_quantile does; 0
  // without requests. A quantile in the +Inf bucket is its lower bound (30 s).
  double LatencyQuantile(double q) const;
};

// ReadAheadFigures are the read stage's read-ahead (read_ahead.h): the in-flight limit it
// chose and why (the latency it measured), as last seen.
struct ReadAheadFigures {
  bool present = false;   // A read-ahead ran (remote data, read_ahead not 0).
  bool adaptive = false;  // read_ahead=auto.
  int limit = 0;          // The in-flight limit (at the end).
  int floor = 0;          // The fewest it keeps now (raised by autotune: SetReadAheadFloor).
  int min_in_flight = 0;  // The limit's own floor and start (ReadAheadOptions).
  int max_in_flight = 0;  // Its ceiling.
  int64_t max_bytes = 0;  // Finished bytes past which no read starts (the memory plan's).
  int peak_in_flight = 0;
  int threads = 0;
  int64_t started = 0;      // Reads run ahead.
  int64_t ready = 0;        // Takes that found their read finished.
  int64_t waited = 0;       // Takes that waited for it.
  int64_t not_started = 0;  // Takes the worker read itself (read-ahead behind).
  int64_t reused = 0;       // Reads into a recycled buffer.
  int64_t urgent = 0;       // Reads of the batch being dispatched (StartUrgent).
  int64_t fetches = 0;      // Block fetches of shards (StartFetch).
  int peak_limit = 0;       // The highest the limit went.
  double mean_in_flight = 0;  // Reads in flight on average while any was.
  int64_t probes = 0;         // Times the limit was raised because takes waited...
  int64_t probes_undone = 0;  // ...and undone because takes came no faster.
  double mean_latency_seconds = 0;  // Of the reads run ahead.
};

class StorageStats {
 public:
  // Distinct error codes kept per scheme; later ones count as "other".
  static constexpr int kMaxErrorCodes = 32;

  // Record adds one attempt of `scheme` that took `nanos`: `bytes` received when it
  // succeeded (`error_code` empty), else its error code; `retry` when it repeated a failed
  // attempt.
  void Record(absl::string_view scheme, int64_t nanos, int64_t bytes,
              absl::string_view error_code, bool retry);

  // Read returns every scheme that sent a request, in scheme order.
  std::vector<StorageSchemeStats> Read() const;
  // Total sums every scheme's counts into one (scheme "all").
  StorageSchemeStats Total() const;

  // AttachReadAhead makes `read` the source of read_ahead() and `set_floor` (may be null)
  // what SetReadAheadFloor calls while the read-ahead lives; DetachReadAhead keeps its last
  // figures. Const, as StorageEnv::Cancel: the read stage holds a const Dataset. One
  // read-ahead at a time (a pipeline has one read stage).
  void AttachReadAhead(std::function<ReadAheadFigures()> read,
                       std::function<void(int)> set_floor = nullptr) const;
  void DetachReadAhead() const;
  ReadAheadFigures read_ahead() const;
  // SetReadAheadFloor passes `floor` to the read-ahead (ReadAhead::SetFloor): false when
  // none is attached. The runtime's autotuner calls it; it knows the graph, not its stages.
  bool SetReadAheadFloor(int floor) const;

  // SchemeLabel is `url`'s scheme as a label ("s3", "http", "https"; "other" for one
  // that is not short and alphanumeric).
  static std::string SchemeLabel(absl::string_view url);

 private:
  mutable std::mutex mu_;
  std::map<std::string, StorageSchemeStats> schemes_ ABSL_GUARDED_BY(mu_);
  mutable std::function<ReadAheadFigures()> read_ahead_source_ ABSL_GUARDED_BY(mu_);
  mutable std::function<void(int)> read_ahead_floor_ ABSL_GUARDED_BY(mu_);
  mutable ReadAheadFigures read_ahead_ ABSL_GUARDED_BY(mu_);  // Once detached.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_STORAGE_STATS_H_
