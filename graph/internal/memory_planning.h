// memory_planning.h: the pipeline graph's memory plan (the batch pool, then what the
// stages declared in StageEnv::memory and the data sources declared in
// GraphOptions::source_memory, and the device buffers where a device is used) and the
// budget it must fit, made by PlanGraph (graph_plan.h) before the pool is allocated.
//
// Thread-safety: pure functions, except GraphMemoryBudget, which reads /proc and
// /sys/fs/cgroup (resources.h); all are safe from any thread.
#ifndef FLOWLOADER_GRAPH_INTERNAL_MEMORY_PLANNING_H_
#define FLOWLOADER_GRAPH_INTERNAL_MEMORY_PLANNING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/pipeline_graph.h"
#include "graph/stage.h"
#include "stages/core/memory_plan.h"
#include "stages/core/resources.h"

namespace flowloader {

// PoolRows is the rows of each batch buffer: batch_size, but never more than an epoch's
// samples, which no batch can exceed (batch_size 100000 over 300 images needs 300 rows).
int PoolRows(int batch_size, int64_t samples_per_epoch);

// BatchFitsPool says whether batches of `batch_size` fit buffers of `pool_rows` rows: no
// batch exceeds an epoch's samples, so a pool that holds an epoch fits any size.
bool BatchFitsPool(int64_t batch_size, int pool_rows, int64_t samples_per_epoch);

// ShapeText writes a sample's shape for messages: [3, 224, 224] float as "3×224² float32".
std::string ShapeText(const OutputSpec& output);

// TensorRegion is one batch tensor's part of a batch buffer: `rows` samples of
// spec.sample_bytes each, from `offset`.
struct TensorRegion {
  OutputSpec spec;
  size_t offset = 0;
  size_t bytes = 0;  // rows × spec.sample_bytes.
};

// LayOutTensors splits a batch buffer of `rows` rows into one region per output, in
// order; each region after the first starts on a 64-byte boundary (the resize's
// streaming stores want aligned rows). One output: one region of rows × sample bytes.
std::vector<TensorRegion> LayOutTensors(const std::vector<OutputSpec>& outputs, int rows);
// LayoutBytes is the buffer size that holds `regions`.
size_t LayoutBytes(const std::vector<TensorRegion>& regions);

// LabelRegion is the label tensor's part of a batch buffer: `rows` rows of
// label.row_bytes(), on a 64-byte boundary after the tensors' regions.
TensorRegion LabelRegion(const std::vector<TensorRegion>& tensors, const LabelSpec& label,
                         int rows);
// LabelText is "int64 label" or "1000 float32 soft label".
std::string LabelText(const LabelSpec& label);

// PlanGraphMemory is the batch pool (prefetch_batches × a buffer holding pool_rows rows of
// every output, each output's bytes counted; pinned when the buffers are page-locked), the
// label tensor's rows in those buffers (`labels`: int64 class indices, or float32 soft
// targets), followed by `stage_parts`, then, when batches go to a device, the device
// buffers: one per batch buffer, of the same size, labels included (a device part,
// outside the host total).
MemoryPlan PlanGraphMemory(const GraphOptions& options, const std::vector<OutputSpec>& outputs,
                           int pool_rows, bool pinned, bool on_device,
                           const std::vector<MemoryPart>& stage_parts,
                           const LabelSpec& label = LabelSpec{});

// GraphMemoryBudget is what the process may use (AvailableMemory()), capped by
// memory_limit_bytes when that is > 0 (then named "memory_limit_mb" where it binds).
MemoryBudget GraphMemoryBudget(int64_t memory_limit_bytes);

// kUnplannedBytes is what the process holds besides the plan's parts: code, libraries,
// thread stacks, the allocator's slack (measured: ~30 MiB RSS for `flowloader run`
// before its pool). Kept out of the workers' share so that their images and the plan
// together stay under the budget.
inline constexpr int64_t kUnplannedBytes = int64_t{48} << 20;

// PlanBudget is what a memory plan may fill of `budget`: memory_limit_mb less
// kUnplannedBytes, which the process holds besides the plan, so that the plan and the
// process together stay within the limit the user set (a batch pool that filled
// memory_limit_mb 512 to the byte peaked at 524 MiB); any other budget (MemAvailable,
// a cgroup's) as it is. Named so in refusals: "but 464.0 MiB is available
// (memory_limit_mb 512.0 MiB less 48.0 MiB the process holds itself)".
MemoryBudget PlanBudget(const MemoryBudget& budget);

// kMinWorkerImageBytes is the least a worker may hold for one sample however tight the
// budget: the plan counts typical images (the decode scratch is 2 × the output a side), and
// a budget the plan fills to the byte must not skip ordinary photos (a 10 Mpx decode).
inline constexpr int64_t kMinWorkerImageBytes = int64_t{32} << 20;

// SampleRoomPart is the plan's "sample room" under memory_limit_mb (memory_limit_bytes >
// 0): what `workers` workers may hold for one sample each at the least
// (kMinWorkerImageBytes), less what `plan` already gives them for it (SampleBytesPlanned),
// at most `most_bytes` (>= 0; -1: no cap). Outside the plan, a plan that filled
// memory_limit_mb less kUnplannedBytes to the byte still let each worker hold 32 MiB
// beside it (4 workers under memory_limit_mb 128: 180 MiB peak). Pipeline::Create cuts it
// (most_bytes) only after the seek index and prefetch_batches, so the workers' share is
// then smaller and larger samples are skipped. A part of 0 bytes where there is no limit
// or the plan covers it (not added then).
MemoryPart SampleRoomPart(const MemoryPlan& plan, int workers, int64_t memory_limit_bytes,
                          int64_t most_bytes = -1);

// SampleBytesPlanned is what the plan already holds, per worker, of one sample's memory:
// the decode scratch (its decoded pixels) and the decode buffers (its file bytes and the
// JPEG scan's copy, each kept by a thread up to 1 MiB), summed over the workers.
int64_t SampleBytesPlanned(const MemoryPlan& plan);

// WorkerImageBytes is what one of `workers` workers may hold for one sample's images at
// run time (WorkerMemory): an equal share of what `budget` leaves after `plan` (and
// kUnplannedBytes), plus the per-worker decode scratch the plan already counts, which
// the same images use (SampleBytesPlanned; not the transforms scratch: kept working images
// stay resident beside the next sample's), and the plan's sample room (SampleRoomPart),
// which is theirs. At least kMinWorkerImageBytes, except under memory_limit_mb, where the
// sample room stands for that minimum (and holds it unless Create had to cut the room).
// 0 (no limit) when the budget is unknown.
int64_t WorkerImageBytes(const MemoryPlan& plan, const MemoryBudget& budget, int workers);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_MEMORY_PLANNING_H_
