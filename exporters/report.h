// report.h: the end-of-run report: summary JSON, a per-stage table and a diagnosis.
//
// A run's counters (a PipelineStats snapshot) plus a few facts about the run (wall time,
// start-up, workers, usable CPUs) become: SummaryJson for scripts and CI, StageTable for
// a terminal, and Diagnose, which names the bottleneck and says what to change, following
// the classic data-loader tuning table. Diagnose has no trials, only one run's counters,
// so it says "raise X" only where the counters show raising X is possible and would
// help, and otherwise points to `flowloader tune`, which measures:
//   - a run too short to judge (start-up > 20% of it, or < 3 s of steady state) → no
//     verdict, say so;
//   - consumer starving + saturated workers → more workers while under the usable CPUs,
//     else the CPUs are the limit; a saturated serial stage (fixed at 1 worker whatever
//     num_workers) → make it cheaper; a saturated reader → storage; a saturated stage
//     with ops (transforms) → a note naming its costliest op and that op's share;
//   - consumer starving, nothing saturated → more prefetch only when the source waited
//     for free batch buffers and prefetch is under a cap, else `flowloader tune`;
//   - the consumer's per-batch wait fluctuating (CV > 0.5) → a note naming the usual
//     causes (batch too small for the per-batch overhead, a slow storage tail);
//   - the consumer never waiting → nothing to tune.
// Diagnose works on a plain RunSnapshot, so its rules are testable with hand-made numbers.
//
// Thread-safety: free functions on values. Snapshot() may run while the pipeline is
// still updating `stats` (it reads atomics); the stage list must be built.
#ifndef FLOWLOADER_EXPORTERS_REPORT_H_
#define FLOWLOADER_EXPORTERS_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/stage_stats.h"

namespace flowloader {

// RunFacts are what a report needs besides the counters.
struct RunFacts {
  double wall_seconds = 0;  // Wall time of the measured run, seconds. Rates need > 0.
  int64_t epochs = 0;       // Epochs completed.
  int num_workers = 0;      // Decode/augment workers the pipeline was built with.
  int batch_size = 0;       // Samples per batch.
  // cores_available is the number of CPUs the process may use (UsableCpus() in
  // stages/core/resources.h: affinity mask ∩ cgroup quota), the budget "raise
  // num_workers" stays within; 0 means unknown and the advice then points to tune.
  int cores_available = 0;
  // Batch buffers in flight (--prefetch_batches); 0 = unknown: no prefetch advice.
  int prefetch_batches = 0;
  // startup_seconds: from the run's start to its first batch, on wall_seconds' clock
  // (the whole run when no batch came); steady_seconds: the rest of the run. < 0 = unknown,
  // and that part of the too-short rule is not applied.
  double startup_seconds = -1;
  double steady_seconds = -1;
};

// ConcurrencySource is what sets a stage's concurrency: it decides which knob raises it,
// and whether a stage at 1 worker is serial or only limited by num_workers=1.
enum class ConcurrencySource {
  kUnknown,     // Hand-made snapshots: taken as kNumWorkers when it equals num_workers.
  kNumWorkers,  // The stage runs on num_workers workers.
  kFixed,       // Set by the graph (source, collate, upload) or by the stage's spec.
};

// OpLoad is one op's totals over the run (a transforms stage's op, or its fused head:
// StageStats::op_costs).
struct OpLoad {
  std::string name;
  double busy_seconds = 0;  // Summed over threads; part of its stage's busy_seconds.
  uint64_t applied = 0;     // Samples the op ran on (fewer than items when its p < 1).
};

// StageLoad is one stage's totals over the run.
struct StageLoad {
  std::string name;
  StageKind kind = StageKind::kCompute;
  std::string type;  // The registered type (StageStats::type); empty for the graph's own.
  int concurrency = 1;        // Parallel bodies allowed (num_workers for decode).
  ConcurrencySource concurrency_source = ConcurrencySource::kUnknown;
  uint64_t items = 0;         // Items passed downstream.
  double busy_seconds = 0;    // Summed over parallel bodies.
  double blocked_seconds = 0; // Waiting on downstream or batch buffers.
  std::map<std::string, uint64_t> errors;  // Failed items by reason.
  // worker_group: stages with the same non-empty group share one set of workers (one
  // graph node), so their busy times add up against one concurrency × wall.
  std::string worker_group;
  // The stage's ops, in run order; empty for a stage without per-op counters.
  std::vector<OpLoad> ops;
};

// OpShare is `op`'s share of `stage`'s busy time, in [0, 1] (0 when the stage was idle).
double OpShare(const StageLoad& stage, const OpLoad& op);

// RunSnapshot is everything a report reads: counters copied at one moment, and facts.
struct RunSnapshot {
  RunFacts facts;
  uint64_t samples = 0;
  uint64_t batches = 0;
  uint64_t skipped = 0;
  // Delivered skips by reason (PipelineStats::SkipReasons), when the graph counts them
  // (skip_reasons_counted); else the summary's errors sum the stages' counters.
  bool skip_reasons_counted = false;
  std::map<std::string, uint64_t> skip_reasons;
  double consumer_wait_seconds = 0;  // Time Next() blocked.
  // The consumer's waits batch by batch after the first (PipelineStats::
  // steady_consumer_waits): count, sum and sum of squares, for their spread.
  uint64_t steady_waits = 0;
  double steady_wait_seconds = 0;
  double steady_wait_squares = 0;  // s².
  // Memory at snapshot time. A caller that samples a peak during the run may put it
  // here instead: "near budget" advice is only as good as these numbers.
  int64_t host_bytes_in_flight = 0;
  int64_t host_bytes_budget = 0;  // 0 = no budget known.
  int64_t pinned_bytes_in_flight = 0;
  int64_t pinned_bytes_budget = 0;
  // PipelineStats::memory_plan: the planned bytes by part; empty when none was made.
  std::vector<std::pair<std::string, int64_t>> memory_plan;
  std::vector<StageLoad> stages;  // In pipeline order.
  // Samples delivered per source (PipelineStats::SourceSamples), in source order.
  std::vector<std::pair<std::string, uint64_t>> source_samples;
  // The online autotuner (PipelineStats::autotune): whether a knob was auto, the values
  // it settled on (also in facts.num_workers / prefetch_batches) and every change.
  bool autotune = false;
  std::vector<AutotuneRecord> autotune_decisions;
  int autotune_read_ahead = 0;  // The read-ahead floor it set; 0 when not tuned.
  // Remote storage's counts by scheme (PipelineStats::storage): requests, errors, the
  // request latency; empty for local data.
  std::vector<StorageSchemeStats> storage;
  // The read stage's read-ahead (StorageStats::read_ahead): the in-flight limit it chose
  // from the latency it saw; present only when one ran.
  ReadAheadFigures read_ahead;
};

// Snapshot copies `stats` (each stage's kind as its type declares it) and attaches
// `facts`.
RunSnapshot Snapshot(const PipelineStats& stats, const RunFacts& facts);

// Utilization is busy / (concurrency × wall): the share of the stage's worker time spent
// working. 0 when wall or concurrency is not positive.
double Utilization(const StageLoad& stage, double wall_seconds);

// GroupUtilization is the summed Utilization of the stages whose worker_group is
// `group`: the busy share of that one set of workers. The stage table's group row and
// the diagnosis's "busiest" both use it, so they show the same number.
double GroupUtilization(const RunSnapshot& run, const std::string& group);

// WaitCv is the coefficient of variation (standard deviation / mean) of the consumer's
// per-batch waits after the first batch; 0 with fewer than 2 waits or a zero mean.
double WaitCv(const RunSnapshot& run);

// DiagnoseOptions are the thresholds of the rules; defaults suit most runs.
struct DiagnoseOptions {
  // starving_share: the consumer waiting more than this share of the wall time makes the
  // loader the bottleneck. Default 5%.
  double starving_share = 0.05;
  // saturated: a stage at or above this utilization is saturated. Default 80%.
  double saturated = 0.80;
  // memory_near_budget: in-flight memory at or above this share of its budget is "near".
  double memory_near_budget = 0.90;
  // A run whose start-up (to the first batch) is over max_startup_share of it, or whose
  // steady state is under min_steady_seconds, is too short to judge: no verdict.
  double max_startup_share = 0.20;
  double min_steady_seconds = 3;
  // buffers_exhausted_share: the source waiting for a free batch buffer at least this
  // share of the wall time is the evidence that more prefetch could help.
  double buffers_exhausted_share = 0.10;
  // prefetch_cap: no "raise prefetch" at or above this many batches in flight. On the
  // 2-core demo, prefetch 3 → 6 → 12 lowered images/s 3804 → 3282 → 2922.
  int prefetch_cap = 4;
  // fluctuating_wait_cv: a CV of the per-batch wait above this, over at least
  // min_waits_for_cv batches of a starving run, is "the time between batches fluctuates".
  double fluctuating_wait_cv = 0.5;
  int min_waits_for_cv = 8;
  // max_workers_per_cpu: num_workers over this many per usable CPU warns.
  int max_workers_per_cpu = 4;
  // storage_wait_share: with remote storage, workers waiting on reads (the read stage's
  // busy share) at least this much of their time make storage the bottleneck of a
  // loader-bound run, even where another stage of their group is busier (as autotune's
  // storage_to_grow: runtime/autotune_policy.h).
  double storage_wait_share = 0.25;
};

// Diagnosis names what limits the run and what to do about it.
struct Diagnosis {
  // bottleneck is the busiest stage (a worker group's heaviest) when the loader limits
  // the run, "consumer" when the loader keeps up, "" when there is nothing to judge (no
  // stages, no wall time, a run too short, workers far over the CPUs).
  std::string bottleneck;
  // busiest_stage is the stage table's row with the highest busy share, whatever the
  // verdict: a stage, or a worker group ("read+decode+augment"); busiest_utilization
  // is that row's busy% (GroupUtilization for a group).
  std::string busiest_stage;
  double busiest_utilization = 0;
  double consumer_wait_share = 0;  // consumer_wait / wall, in [0, 1].
  bool loader_bound = false;       // consumer_wait_share > starving_share.
  bool too_short = false;          // No verdict: start-up too large a share, or too brief.
  double wait_cv = 0;              // WaitCv(run).
  std::string advice;              // One sentence with numbers: the main verdict.
  std::vector<std::string> notes;  // Extra sentences: memory near budget, skipped samples.
};

// Diagnose applies the tuning rules to `run`.
Diagnosis Diagnose(const RunSnapshot& run, const DiagnoseOptions& options = {});

// OversubscribedWorkers is a one-line warning when facts.num_workers is over
// max_workers_per_cpu × facts.cores_available (known), else "". The CLI logs it when
// the run starts; Diagnose then withholds its verdict (busy shares count threads that
// wait for a CPU).
std::string OversubscribedWorkers(const RunFacts& facts, const DiagnoseOptions& options = {});

// SummaryJson renders `run` as one JSON object:
//   {"samples": int, "batches": int, "epochs": int, "seconds": float,
//    "images_per_second": float, "skipped": int, "errors": {"<reason>": int},
//    "num_workers": int, "batch_size": int,
//    "stages": {"<stage>": {"items": int, "busy_seconds": float, "utilization": float,
//                           "concurrency": int, "errors": int,
//                           "ops": [{"op": str, "busy_seconds": float,   (only for a stage
//                                    "share": float, "applied": int}]}}, with op rows)
//    "consumer_wait_seconds": float, "bottleneck": str,
//    "diagnosis": {"bottleneck": str, "busiest_stage": str, "busiest_utilization": float,
//                  "consumer_wait_share": float, "loader_bound": bool, "too_short": bool,
//                  "wait_cv": float, "advice": str, "notes": [str]},
//    "autotune": {"num_workers": int, "prefetch_batches": int,      (only when a knob
//                 "read_ahead": int,             (only when tuned:  is auto; "seconds"
//                                                 remote, auto)     since start)
//                 "decisions": [{"seconds": float, "knob": str,
//                                "from": int, "to": int, "reason": str}]}}
// The first ten keys are the fixed schema scripts rely on; the rest are extras.
// "errors" is summed over stages by reason. Floats always carry a '.' or exponent, and
// non-finite values are written as 0, so every parser reads the same types.
std::string SummaryJson(const RunSnapshot& run);
std::string SummaryJson(const PipelineStats& stats, const RunFacts& facts);

// StageTable renders a header, one aligned line per stage (stage, workers, items, busy
// seconds, busy share of the stage's worker time, errors), under a stage with ops one
// indented line per op (its name, the samples it ran on, its busy seconds and its share
// of the stage's busy seconds, marked "of stage"), after each worker group's last stage
// a line for the group (named "a+b+c": summed busy, GroupUtilization), and a footer line
// with the consumer's wait and the bottleneck; lines end in '\n'. The advice sentence is
// not included: print Diagnose(run).advice where you want it.
std::string StageTable(const RunSnapshot& run);
std::string StageTable(const PipelineStats& stats, const RunFacts& facts);

}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_REPORT_H_
