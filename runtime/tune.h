// tune.h: the manual tuning loop, automated. Tune measures real trials of a pipeline on
// its data (images/s after the first batch, CPU cores used, peak RSS, the consumer's
// wait share) and picks num_workers, prefetch_batches and batch_size within a CPU and a
// RAM budget.
//
//   flowloader::TuneOptions options;
//   options.pipeline.data = "/data/train";      // every other option: as for a run
//   options.consumer_ms = 60;                    // or options.consumer = real step
//   absl::StatusOr<flowloader::TuneResult> result = flowloader::Tune(options);
//   // result->best.config: the configuration to run; result->reasons: why, per knob.
//
// The search (TuneSearch) is a coordinate hill climb, not the grid: workers first (the
// knob that moves images/s most), then prefetch_batches, then batch_size, each knob
// kept at the smallest value within 3% of the best it reached, then the workers checked
// once more at the chosen batch shape. Without a consumer the goal is the highest
// images/s, preferring fewer workers when another adds < 3%; with one, the fewest workers
// and the least memory that keep the consumer waiting under 5% of the time. A batch size
// or prefetch whose memory plan (Pipeline::PlanMemory) does not fit the RAM budget is
// not tried, and the result says why. `grid` measures every combination instead.
//
// Thread-safety: Tune runs trials one after another on the calling thread (each trial's
// pipeline has its own workers); call it from one thread at a time.
#ifndef FLOWLOADER_RUNTIME_TUNE_H_
#define FLOWLOADER_RUNTIME_TUNE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/pipeline.h"

namespace flowloader {

struct TuneOptions {
  // The pipeline to tune: data, transform, stages, ... as for a run. Its batch_size is the
  // one kept when a consumer is given (the consumer's step is per batch of that size).
  PipelineOptions pipeline;
  // CPUs the search may use; 0 = the CPUs this process may use (affinity mask and cgroup
  // quota, stages/core/resources.h). num_workers is tried from 1 to 2 × cpu_budget.
  int cpu_budget = 0;
  // Host memory the chosen configuration may use, in bytes; 0 = half of what the process
  // may use (MemAvailable and the cgroup limit).
  int64_t ram_budget_bytes = 0;
  // Batch sizes to consider (throughput goal only). Default 32, 64, 128, 256.
  std::vector<int> batch_sizes = {32, 64, 128, 256};
  // prefetch_batches values to consider. Default 2, 3, 4, 6.
  std::vector<int> prefetch_choices = {2, 3, 4, 6};
  // The training step per batch, simulated by sleeping; 0 = none (throughput goal).
  double consumer_ms = 0;
  // A real training step run on every batch of every trial instead of consumer_ms (the
  // API's way to tune with the real consumer). Called on the calling thread.
  std::function<void(const Batch&)> consumer;
  // Wall-clock budget of the whole search; Tune never runs past it by more than one
  // trial. Default 60 s.
  double time_budget_seconds = 60;
  // Length of one trial's measurement after its first batch; 0 = from the budget (the
  // expected number of trials shares it, clamped to [1, 5] s).
  double trial_seconds = 0;
  // Measure every combination instead of searching.
  bool grid = false;
};

// TrialConfig is what a trial varies.
struct TrialConfig {
  int num_workers = 1;
  int batch_size = 64;
  int prefetch_batches = 3;
};

// TrialResult is one measured trial.
struct TrialResult {
  TrialConfig config;
  double images_per_second = 0;       // After the trial's first batch.
  double cpu_cores = 0;               // CPU time / wall time over the measurement.
  int64_t peak_rss_bytes = 0;         // The process's peak RSS during the trial.
  double consumer_wait_fraction = 0;  // Share of the measurement Next() blocked.
  double seconds = 0;                 // The trial's whole wall time, start-up included.
};

// NotTried is a configuration the RAM budget ruled out, and why (the plan's own words).
struct NotTried {
  TrialConfig config;
  std::string why;
};

struct TuneResult {
  TrialResult best;
  std::vector<TrialResult> trials;  // In the order they ran.
  std::vector<NotTried> not_tried;
  int cpu_budget = 0;
  int64_t ram_budget_bytes = 0;
  double seconds = 0;  // The whole search.
  bool grid = false;
  // One plain reason per knob: "num_workers 2: a third worker added 0.4% (2 CPUs)".
  std::vector<std::string> reasons;
};

// Tune resolves the budgets, measures trials of real pipelines and returns the choice.
absl::StatusOr<TuneResult> Tune(const TuneOptions& options);

// TrialRunner measures one configuration for `seconds` after its first batch.
using TrialRunner =
    std::function<absl::StatusOr<TrialResult>(const TrialConfig& config, double seconds)>;
// MemoryCheck says whether a configuration's memory plan fits the RAM budget: OK, or an
// error whose message says what it needs.
using MemoryCheck = std::function<absl::Status(const TrialConfig& config)>;

// TuneSearch is Tune's search over injected trials (tests drive it with a cost model).
// `options` must have its budgets resolved (cpu_budget > 0, ram_budget_bytes > 0).
absl::StatusOr<TuneResult> TuneSearch(const TuneOptions& options, const TrialRunner& run,
                                      const MemoryCheck& fits);

// TuneJson is the result as tune.json: {"best": {...}, "trials": [...], "not_tried":
// [...], "budgets": {"cpu", "ram_bytes"}, "seconds", "grid", "reasons": [...]}.
std::string TuneJson(const TuneResult& result);

// TunedOptions is `base` with the best configuration applied.
PipelineOptions TunedOptions(const PipelineOptions& base, const TuneResult& result);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_TUNE_H_
