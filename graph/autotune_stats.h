// autotune_stats.h: what the online autotuner did, for the summary, metrics and reports.
//
// The autotuner (runtime/autotune_policy.h decides, the Pipeline applies) writes here;
// exporters/ reads: the current value of each knob, every decision with its reason, and
// the decisions counted by knob and direction. Like the rest of PipelineStats it knows
// nothing of Prometheus.
//
// Thread-safety: every method is thread-safe; decisions are kept under a mutex (they are
// rare: at most a few per second).
#ifndef FLOWLOADER_GRAPH_AUTOTUNE_STATS_H_
#define FLOWLOADER_GRAPH_AUTOTUNE_STATS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace flowloader {

// AutotuneKnob names a setting the autotuner changes.
inline constexpr const char kKnobNumWorkers[] = "num_workers";
inline constexpr const char kKnobPrefetchBatches[] = "prefetch_batches";
// The read stage's read-ahead floor: the fewest remote reads it keeps in flight
// (ReadAhead::SetFloor), raised when the workers wait on storage.
inline constexpr const char kKnobReadAhead[] = "read_ahead";

// AutotuneRecord is one change: `seconds` after the pipeline started, `knob` went from
// `from` to `to` because of `reason` (one line, with the figures that decided it).
struct AutotuneRecord {
  double seconds = 0;
  std::string knob;
  int from = 0;
  int to = 0;
  std::string reason;
};

class AutotuneStats {
 public:
  // enabled: some knob is auto (set before the first item). Without it nothing here is
  // reported.
  std::atomic<bool> enabled{false};
  // The current values (also set for a knob that is fixed, so reports show both).
  std::atomic<int> num_workers{0};
  std::atomic<int> prefetch_batches{0};
  // The read-ahead floor; 0 when autotune does not tune it (no read-ahead, or a fixed
  // read_ahead=N).
  std::atomic<int> read_ahead{0};

  // Record appends `record`, updates the knob's current value and counts it by
  // direction ("up" or "down").
  void Record(const AutotuneRecord& record);
  std::vector<AutotuneRecord> Decisions() const;
  // Counts are the decisions by (knob, direction), both directions of num_workers and
  // prefetch_batches present, and of read_ahead when it is tuned (read_ahead > 0).
  std::map<std::pair<std::string, std::string>, uint64_t> Counts() const;

 private:
  mutable std::mutex mu_;
  std::vector<AutotuneRecord> decisions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_AUTOTUNE_STATS_H_
