// report.h: the end-of-run report: summary JSON, a per-stage table and a diagnosis.
//
// A run's counters (a PipelineStats snapshot) plus a few facts about the run (wall time,
// workers, cores) become: SummaryJson for scripts and CI, StageTable for a terminal, and
// Diagnose, which names the bottleneck and says what to change, following the classic
// data-loader tuning table (consumer starving + a saturated CPU stage → more workers, if
// there are cores; a saturated reader → storage; nothing saturated → more prefetch; the
// consumer never waiting → nothing to tune). Diagnose works on a plain RunSnapshot, so
// its rules are testable with hand-made numbers.
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
  // cores_available is std::thread::hardware_concurrency() (or the affinity mask's
  // size); 0 means unknown and the advice then does not count free cores.
  int cores_available = 0;
};

// StageKind decides which advice fits a saturated stage.
enum class StageKind {
  kStorage,   // Reads bytes: saturation means the storage is the limit, not the CPU.
  kCompute,   // Decode, augment, collate: CPU work.
  kTransfer,  // Pinning and host-to-device copies.
};

// StageKindFromName guesses the kind from a stage name: "read*", "*load*", "*fetch*" →
// storage; "*upload*", "*pin*", "*h2d*", "*copy*", "*transfer*" → transfer; else compute.
StageKind StageKindFromName(absl::string_view name);

// StageLoad is one stage's totals over the run.
struct StageLoad {
  std::string name;
  StageKind kind = StageKind::kCompute;
  int concurrency = 1;        // Parallel bodies allowed (num_workers for decode).
  uint64_t items = 0;         // Items passed downstream.
  double busy_seconds = 0;    // Summed over parallel bodies.
  double blocked_seconds = 0; // Waiting on downstream or batch buffers.
  std::map<std::string, uint64_t> errors;  // Failed items by reason.
  // worker_group: stages with the same non-empty group share one set of workers (one
  // graph node), so their busy times add up against one concurrency × wall.
  std::string worker_group;
};

// RunSnapshot is everything a report reads: counters copied at one moment, and facts.
struct RunSnapshot {
  RunFacts facts;
  uint64_t samples = 0;
  uint64_t batches = 0;
  uint64_t skipped = 0;
  double consumer_wait_seconds = 0;  // Time Next() blocked.
  // Memory at snapshot time. A caller that samples a peak during the run may put it
  // here instead: "near budget" advice is only as good as these numbers.
  int64_t host_bytes_in_flight = 0;
  int64_t host_bytes_budget = 0;  // 0 = no budget known.
  int64_t pinned_bytes_in_flight = 0;
  int64_t pinned_bytes_budget = 0;
  // PipelineStats::memory_plan: the planned bytes by part; empty when none was made.
  std::vector<std::pair<std::string, int64_t>> memory_plan;
  std::vector<StageLoad> stages;  // In pipeline order.
};

// Snapshot copies `stats` (kinds from StageKindFromName) and attaches `facts`.
RunSnapshot Snapshot(const PipelineStats& stats, const RunFacts& facts);

// Utilization is busy / (concurrency × wall): the share of the stage's worker time spent
// working. 0 when wall or concurrency is not positive.
double Utilization(const StageLoad& stage, double wall_seconds);

// DiagnoseOptions are the thresholds of the rules; defaults suit most runs.
struct DiagnoseOptions {
  // starving_share: the consumer waiting more than this share of the wall time makes the
  // loader the bottleneck. Default 5%.
  double starving_share = 0.05;
  // saturated: a stage at or above this utilization is saturated. Default 80%.
  double saturated = 0.80;
  // memory_near_budget: in-flight memory at or above this share of its budget is "near".
  double memory_near_budget = 0.90;
};

// Diagnosis names what limits the run and what to do about it.
struct Diagnosis {
  // bottleneck is the busiest stage when the loader limits the run, "consumer" when the
  // loader keeps up, "" when there is nothing to judge (no stages or no wall time).
  std::string bottleneck;
  std::string busiest_stage;       // Highest utilization, whatever the verdict.
  double busiest_utilization = 0;  // Its busy / (concurrency × wall).
  double consumer_wait_share = 0;  // consumer_wait / wall, in [0, 1].
  bool loader_bound = false;       // consumer_wait_share > starving_share.
  std::string advice;              // One sentence with numbers: the main verdict.
  std::vector<std::string> notes;  // Extra sentences: memory near budget, skipped samples.
};

// Diagnose applies the tuning rules to `run`.
Diagnosis Diagnose(const RunSnapshot& run, const DiagnoseOptions& options = {});

// SummaryJson renders `run` as one JSON object:
//   {"samples": int, "batches": int, "epochs": int, "seconds": float,
//    "images_per_second": float, "skipped": int, "errors": {"<reason>": int},
//    "num_workers": int, "batch_size": int,
//    "stages": {"<stage>": {"items": int, "busy_seconds": float, "utilization": float,
//                           "concurrency": int, "errors": int}},
//    "consumer_wait_seconds": float, "bottleneck": str,
//    "diagnosis": {"bottleneck": str, "busiest_stage": str, "busiest_utilization": float,
//                  "consumer_wait_share": float, "loader_bound": bool, "advice": str,
//                  "notes": [str]}}
// The first ten keys are the fixed schema scripts rely on; the rest are extras.
// "errors" is summed over stages by reason. Floats always carry a '.' or exponent, and
// non-finite values are written as 0, so every parser reads the same types.
std::string SummaryJson(const RunSnapshot& run);
std::string SummaryJson(const PipelineStats& stats, const RunFacts& facts);

// StageTable renders a header, one aligned line per stage (stage, workers, items, busy
// seconds, busy share of the stage's worker time, errors) and a footer line with the
// consumer's wait and the bottleneck; lines end in '\n'. The advice sentence is not
// included: print Diagnose(run).advice where you want it.
std::string StageTable(const RunSnapshot& run);
std::string StageTable(const PipelineStats& stats, const RunFacts& facts);

}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_REPORT_H_
