// autotune_policy.h: the online autotuner's decisions, as a pure function of what the
// pipeline measured.
//
// Every window (a fraction of a second) the Pipeline feeds the policy one AutotuneWindow:
// how long the consumer waited in Next, how busy the workers were, how long the source
// waited for a free batch buffer, how many cores the process used, and for remote data
// how much of the workers' time went waiting on reads and what the storage's requests
// took. The policy answers with at most one change of num_workers, prefetch_batches or
// read_ahead (the read stage's floor of remote reads in flight, stages/reader/read_ahead.h):
//   - grow while the consumer waits more than `hungry_wait` (5%) of the window: a worker
//     when the workers are busy (they are the limit) and a CPU of cpu_budget is free; a
//     buffer when the workers are idle and the source waited for a free buffer (they ran
//     out of samples); else nothing: busy workers at the CPU budget (or on a contended
//     machine) would not go faster with more memory;
//   - storage before workers (after a buffer for idle workers): while the consumer waits
//     and the workers spend `storage_to_grow` (25%) or more of their time waiting on
//     remote reads, storage is the limit, not the workers: a worker more would only wait
//     too (and take CPU and memory), so none is added; read_ahead's floor is raised
//     instead, to Little's law for the rate that stops the waits (requests/s × latency /
//     (1 - wait), the smaller of the consumer's and the workers' storage wait, at most
//     50%: a raise at most doubles the reads in flight), at least 1.5 × the read-ahead's
//     limit, within its ceiling and the reads its byte budget holds. The raise is judged
//     on the next window: a store whose requests/s did not rise by 10% while its latency
//     did, storage still the limit, is saturated (more in flight only queue): the floor
//     goes back and is not raised past the limit it had then for `regret_windows`. At the
//     ceiling nothing changes;
//   - shrink after `calm_windows` windows in a row of the consumer waiting under
//     `calm_wait` (the trainer gets the CPU back): a worker when the others could carry its
//     load, else read_ahead's floor (down by 1.5, not below the read-ahead's own), else a
//     buffer;
//   - hysteresis: between the two waits nothing changes; a window after a change is not
//     judged (it mixes both settings); growing a knob back soon after shrinking it doubles
//     the calm needed before the next shrink, so the policy does not oscillate;
//   - never past the ceilings (cpu_budget, the buffers the ram_budget allows); a buffer
//     the memory plan refused (MarkBuffersFull) lowers the ceiling.
//
// Thread-safety: an AutotunePolicy is used by one thread (the Pipeline's autotune thread).
#ifndef FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_
#define FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace flowloader {

// AutotuneWindow is what one window measured.
struct AutotuneWindow {
  double seconds = 0;                  // Its length; > 0.
  double consumer_wait_fraction = 0;   // Next() blocked / seconds.
  double worker_busy_fraction = 0;     // Worker stages' busy / (workers × seconds).
  double source_blocked_fraction = 0;  // Source waiting for a free buffer / seconds.
  double cpu_cores = 0;                // Process CPU seconds / seconds.
  // Remote reads (all 0 without them). The workers' time in the read stage (waiting for
  // a read-ahead read, or reading themselves) / (workers × seconds):
  double storage_wait_fraction = 0;
  double storage_latency_seconds = 0;      // Mean latency of the requests that ended.
  double storage_requests_per_second = 0;  // Requests that ended / seconds.
  double storage_bytes_per_request = 0;    // Body bytes received / requests.
  int read_ahead_limit = 0;                // The read-ahead's in-flight limit at the end.
};

// AutotunePolicyOptions are the ranges and thresholds; the defaults suit most runs.
struct AutotunePolicyOptions {
  bool tune_workers = true;   // num_workers is auto.
  bool tune_buffers = true;   // prefetch_batches is auto.
  int max_workers = 2;        // cpu_budget.
  int min_buffers = 2;        // One for the consumer, one being filled.
  int max_buffers = 3;        // What the ram_budget allows.
  int cpu_budget = 2;         // Cores the process may use, trainer included.
  double hungry_wait = 0.05;  // Grow above this consumer wait.
  double calm_wait = 0.01;    // Count a calm window below it.
  int calm_windows = 10;      // Calm windows in a row before a shrink.
  int max_calm_windows = 160; // The backoff's cap.
  // Workers this busy are the limit: grow them (else, if starved of buffers, buffers).
  double busy_to_grow = 0.85;
  // Shrink a worker only when the rest would be at most this busy with its load.
  double busy_after_shrink = 0.75;
  // The source stalled on buffers this much of a hungry window, workers idle: a buffer.
  double blocked_to_grow_buffers = 0.2;
  // A CPU is free while the process uses at most cpu_budget minus this.
  double free_cpu_margin = 0.75;
  // Windows after a shrink in which growing the same knob back counts as a regret.
  int regret_windows = 20;
  // read_ahead: tuned when the data is remote and read_ahead is auto. Its own floor (the
  // start), ceiling and byte budget (ReadAheadOptions; the memory plan's read_ahead part).
  bool tune_read_ahead = false;
  int min_read_ahead = 8;
  int max_read_ahead = 128;
  int64_t read_ahead_bytes = int64_t{64} << 20;
  // Workers waiting on remote reads this share of their time: storage is the limit.
  double storage_to_grow = 0.25;
  // A raise is at least this × the read-ahead's limit; a shrink divides by it.
  double read_ahead_growth = 1.5;
  // A raise is undone (a saturated store) when, storage still the limit, the store's
  // requests/s did not rise by this factor while its latency did.
  double read_ahead_gain = 1.1;
};

// AutotuneChange is one decision: `knob` (kKnobNumWorkers / kKnobPrefetchBatches /
// kKnobReadAhead of graph/autotune_stats.h) from `from` to `to`, and why.
struct AutotuneChange {
  std::string knob;
  int from = 0;
  int to = 0;
  std::string reason;
};

class AutotunePolicy {
 public:
  explicit AutotunePolicy(const AutotunePolicyOptions& options);

  // Decide judges one window at the current values (`read_ahead`: the read-ahead's floor
  // now; ignored unless tune_read_ahead) and returns the change to make, if any. The
  // caller applies it and reports back only a refused buffer (MarkBuffersFull).
  std::optional<AutotuneChange> Decide(const AutotuneWindow& window, int workers, int buffers,
                                       int read_ahead = 0);
  // MarkBuffersFull says the memory plan refused buffer number `refused`: the ceiling
  // becomes refused - 1.
  void MarkBuffersFull(int refused);

  int calm_windows_needed() const { return calm_needed_; }
  int max_buffers() const { return max_buffers_; }
  // The most reads in flight a raise of read_ahead may ask for now (a saturated store
  // lowers it for regret_windows).
  int max_read_ahead() const { return max_read_ahead_; }

 private:
  std::optional<AutotuneChange> Grow(const AutotuneWindow& w, int workers, int buffers,
                                     int read_ahead);
  std::optional<AutotuneChange> Shrink(const AutotuneWindow& w, int workers, int buffers,
                                       int read_ahead);
  // StorageBound: read_ahead is tuned and the workers wait on reads storage_to_grow or more.
  bool StorageBound(const AutotuneWindow& w) const;
  // GrowReadAhead raises read_ahead's floor for a storage-bound window (or holds at its
  // ceiling); JudgeReadAhead undoes the last raise when it bought no requests/s.
  std::optional<AutotuneChange> GrowReadAhead(const AutotuneWindow& w, int read_ahead);
  std::optional<AutotuneChange> JudgeReadAhead(const AutotuneWindow& w, int read_ahead);
  std::optional<AutotuneChange> Made(AutotuneChange change);

  const AutotunePolicyOptions options_;
  int max_buffers_;
  int calm_needed_;
  int calm_ = 0;              // Calm windows in a row.
  bool skip_next_ = false;    // The window after a change mixes both settings.
  int windows_ = 0;           // Windows judged or skipped so far.
  std::string last_shrunk_;   // The knob last shrunk, and when (windows_).
  int last_shrink_window_ = -1;
  int max_read_ahead_;
  int saturated_until_ = 0;  // max_read_ahead_ is lowered until this window.
  // The last raise of read_ahead, until judged: the floor and limit before it, and the
  // store's requests/s in the window that asked for it.
  bool raise_pending_ = false;
  int raise_from_ = 0;
  int raise_limit_ = 0;
  double raise_rate_ = 0;
  double raise_latency_ = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_
