// autotune_policy.h: the online autotuner's decisions, as a pure function of what the
// pipeline measured.
//
// Every window (a fraction of a second) the Pipeline feeds the policy one AutotuneWindow:
// how long the consumer waited in Next, how busy the workers were, how long the source
// waited for a free batch buffer, how many cores the process used. The policy answers
// with at most one change of num_workers or prefetch_batches:
//   - grow while the consumer waits more than `hungry_wait` (5%) of the window: a worker
//     when the workers are busy (they are the limit) and a CPU of cpu_budget is free; a
//     buffer when the workers are idle and the source waited for a free buffer (they ran
//     out of samples); else nothing: busy workers at the CPU budget (or on a contended
//     machine) would not go faster with more memory;
//   - shrink after `calm_windows` windows in a row of the consumer waiting under
//     `calm_wait` (the trainer gets the CPU back): a worker when the others could carry its
//     load, else a buffer;
//   - hysteresis: between the two waits nothing changes; a window after a change is not
//     judged (it mixes both settings); growing a knob back soon after shrinking it doubles
//     the calm needed before the next shrink, so the policy does not oscillate;
//   - never past the ceilings (cpu_budget, the buffers the ram_budget allows); a buffer
//     the memory plan refused (MarkBuffersFull) lowers the ceiling.
//
// Thread-safety: an AutotunePolicy is used by one thread (the Pipeline's autotune thread).
#ifndef FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_
#define FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_

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
};

// AutotuneChange is one decision: `knob` (kKnobNumWorkers / kKnobPrefetchBatches of
// graph/autotune_stats.h) from `from` to `to`, and why.
struct AutotuneChange {
  std::string knob;
  int from = 0;
  int to = 0;
  std::string reason;
};

class AutotunePolicy {
 public:
  explicit AutotunePolicy(const AutotunePolicyOptions& options);

  // Decide judges one window at the current values and returns the change to make, if
  // any. The caller applies it and reports back only a refused buffer (MarkBuffersFull).
  std::optional<AutotuneChange> Decide(const AutotuneWindow& window, int workers, int buffers);
  // MarkBuffersFull says the memory plan refused buffer number `refused`: the ceiling
  // becomes refused - 1.
  void MarkBuffersFull(int refused);

  int calm_windows_needed() const { return calm_needed_; }
  int max_buffers() const { return max_buffers_; }

 private:
  std::optional<AutotuneChange> Grow(const AutotuneWindow& w, int workers, int buffers);
  std::optional<AutotuneChange> Shrink(const AutotuneWindow& w, int workers, int buffers);
  std::optional<AutotuneChange> Made(AutotuneChange change);

  const AutotunePolicyOptions options_;
  int max_buffers_;
  int calm_needed_;
  int calm_ = 0;              // Calm windows in a row.
  bool skip_next_ = false;    // The window after a change mixes both settings.
  int windows_ = 0;           // Windows judged or skipped so far.
  std::string last_shrunk_;   // The knob last shrunk, and when (windows_).
  int last_shrink_window_ = -1;
};

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_AUTOTUNE_POLICY_H_
