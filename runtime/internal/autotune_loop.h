// autotune_loop.h: the Pipeline's online autotuner: the ranges it may move in, and the
// thread that measures each window and applies the policy's changes to the running graph.
//
// PlanAutotune turns `num_workers: auto` / `prefetch_batches: auto` into what the graph
// is built with: the arena at cpu_budget workers, the pool's ceiling at the most buffers
// whose memory plan, on top of what the process already holds, fits ram_budget; it starts
// at 1 worker and 2 buffers and lets the policy (autotune_policy.h) grow from there.
// AutotuneLoop never touches what is delivered: it only calls PipelineGraph::SetWorkers
// and SetPrefetchBatches, which keep every sample's place, and, for remote data read
// ahead with read_ahead auto, the read-ahead's floor (StorageStats::SetReadAheadFloor),
// which changes when bytes are read, never which.
//
// Thread-safety: PlanAutotune is a pure function of its arguments and the process's
// resources; AutotuneLoop's constructor starts its thread, Stop (idempotent, any thread)
// and the destructor end it.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_AUTOTUNE_LOOP_H_
#define FLOWLOADER_RUNTIME_INTERNAL_AUTOTUNE_LOOP_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "graph/pipeline_graph.h"
#include "graph/stage_stats.h"
#include "runtime/autotune_policy.h"
#include "runtime/pipeline.h"
#include "stages/core/memory_plan.h"

namespace flowloader {

// AutotunePlan is what PlanAutotune decided.
struct AutotunePlan {
  bool enabled = false;           // Some knob is auto.
  AutotunePolicyOptions policy;   // Its ranges.
};

// PlanGraphMemoryFn returns the graph's memory plan for some options (PipelineGraph::Plan).
using PlanGraphMemoryFn = std::function<absl::StatusOr<MemoryPlan>(const GraphOptions&)>;

// PlanAutotune resolves the auto knobs of `options` into `graph` (num_workers,
// max_workers, prefetch_batches, max_prefetch_batches). `plan_memory` plans the graph
// with a single buffer, whose pool part is then one buffer's bytes; `resident_bytes` is
// what the process holds already. Errors (a ram_budget below one buffer) are one line
// naming ram_budget.
absl::StatusOr<AutotunePlan> PlanAutotune(const PipelineOptions& options,
                                          const PlanGraphMemoryFn& plan_memory,
                                          int64_t resident_bytes, GraphOptions* graph);

class AutotuneLoop {
 public:
  // Starts measuring `graph` (not owned; must outlive the loop) every `window_seconds`.
  AutotuneLoop(PipelineGraph* graph, std::shared_ptr<PipelineStats> stats,
               const AutotunePolicyOptions& policy, double window_seconds);
  ~AutotuneLoop();
  AutotuneLoop(const AutotuneLoop&) = delete;
  AutotuneLoop& operator=(const AutotuneLoop&) = delete;

  void Stop();

 private:
  // Totals are the cumulative counters a window is the difference of.
  struct Totals {
    int64_t wall_nanos = 0;
    double consumer_wait_seconds = 0;
    int64_t worker_busy_nanos = 0;
    int64_t source_blocked_nanos = 0;
    int64_t cpu_nanos = 0;
    int64_t storage_busy_nanos = 0;  // The num_workers stages that read (kind kStorage).
    int64_t storage_requests = 0;    // Remote requests that ended (StorageStats::Total).
    double storage_latency_seconds = 0;
    int64_t storage_bytes = 0;
  };
  // WithReadAhead is `policy` with read_ahead tuned when the graph reads ahead remotely
  // with an adaptive limit (its range from the read-ahead's options); it records the
  // starting floor in stats->autotune.
  static AutotunePolicyOptions WithReadAhead(AutotunePolicyOptions policy,
                                             PipelineStats& stats);
  Totals Read() const;
  AutotuneWindow Difference(const Totals& before, const Totals& after, int workers) const;
  void Run();
  void Apply(const AutotuneChange& change);

  PipelineGraph* const graph_;
  const std::shared_ptr<PipelineStats> stats_;
  AutotunePolicy policy_;  // Used by the loop's thread only.
  const int64_t window_nanos_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_AUTOTUNE_LOOP_H_
