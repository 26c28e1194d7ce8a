// plan_command.h: `flowloader plan`: what a run with the same flags would hold in memory,
// part by part, without running it.
//
// The plan is Pipeline::PlanMemory's, the one Pipeline::Create checks before allocating
// (and `tune` uses to skip configurations): the batch pool, decode's seek index budget and
// per-worker scratch, and the device buffers where batches go to a CUDA device. The text
// form is one line per part (name, size, formula), then the host total against what the
// process may use:
//
//   memory plan (what the pipeline holds while it runs):
//     batch pool       55.1 MiB  prefetch 3 × batch 32 × 3×224² float32
//     seek index        4.0 MiB  decode seek_index_mb 4
//     decode scratch    1.1 MiB  num_workers 2 × 588.0 KiB decoded pixels
//     total            60.2 MiB  of 21.9 GiB available (MemAvailable): fits
//
// With cache_dir, one more line says what the disk cache may take, against its file
// system's free space: "disk cache (cache_dir /scratch/c): cache_bytes 10.0 GiB, 1.2 GiB
// held now, 50.3 GiB free on its file system: fits" (JSON: "disk_cache": {"dir",
// "budget_bytes", "used_bytes", "free_bytes", "fits"}).
//
// --json prints {"total_bytes": N, "available_bytes": N, "available_source": "...",
// "device_bytes": N, "fits": true, "items": {"batch_pool": {"bytes": N, "formula": "...",
// "pinned": false, "device": false}, ...}} instead (available_bytes -1 = unknown).
//
// Exit codes: 0 the plan fits; 2 invalid options (one line on stderr, nothing on
// stdout), or a plan that does not fit (the plan is printed, then Create's one-line
// refusal on stderr).
//
// Thread-safety: PlanCommand writes to stdout and stderr; call it from one thread.
#ifndef FLOWLOADER_RUNTIME_PLAN_COMMAND_H_
#define FLOWLOADER_RUNTIME_PLAN_COMMAND_H_

#include <string>

#include "runtime/pipeline.h"
#include "stages/core/memory_plan.h"

namespace flowloader {

// PlanCommand prints the memory plan for `options` (as JSON when `json`) and returns the
// process exit code.
int PlanCommand(const PipelineOptions& options, bool json);

// PlanText is the text form of `plan` against `available`.
std::string PlanText(const MemoryPlan& plan, const MemoryBudget& available);

// PlanJson is the JSON form of `plan` against `available`, one line.
std::string PlanJson(const MemoryPlan& plan, const MemoryBudget& available);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_PLAN_COMMAND_H_
