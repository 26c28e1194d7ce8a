// graph_plan.h: what PipelineGraph decides before it allocates anything. PlanGraph
// checks the options, creates the stages (last first, so augment can offer decode its
// crop planner), works out the batch geometry and the resume cursor, and makes the memory
// plan. PipelineGraph::Plan stops there (`flowloader plan`, `tune`); PipelineGraph::Create
// checks that plan against the budget and then allocates the pool and wires the graph
// from the same GraphPlan, so what is planned is what Create refuses or allocates.
//
// Thread-safety: PlanGraph may be called from any thread (the stage factories read the
// registry under its lock); a GraphPlan is a plain value owned by its caller.
#ifndef FLOWLOADER_GRAPH_INTERNAL_GRAPH_PLAN_H_
#define FLOWLOADER_GRAPH_INTERNAL_GRAPH_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/internal/batch_plan.h"
#include "graph/pipeline_graph.h"
#include "graph/stage.h"
#include "stages/core/memory_plan.h"
#include "stages/reader/dataset.h"
#include "stages/reader/sampler.h"
#include "stages/upload/device_memory.h"

namespace flowloader {
namespace graph_internal {

// PlannedStage is one stage as the plan created it.
struct PlannedStage {
  std::unique_ptr<SampleStage> stage;
  std::string name;     // The `stage` label: the spec's name, else its type.
  int concurrency = 1;  // The spec's, else the type's default, else num_workers.
};

// GraphPlan is everything decided before allocation.
struct GraphPlan {
  std::vector<PlannedStage> stages;  // In flow order.
  std::vector<PlannedBatchStage> batch_stages;  // In list order, after collate.
  std::vector<OutputSpec> outputs;   // Every batch tensor's, in the plan's order.
  LabelSpec label;                   // The label tensor: int64 [N] unless soft targets.
  int64_t batches_per_epoch = 0;
  int pool_rows = 0;           // Rows of each batch buffer (PoolRows).
  int64_t start_sample = 0;    // The resume cursor's position in its epoch (CheckCursor).
  int start_batch_size = 0;    // The first planned batch's size.
  MemoryPlan memory;           // The batch pool, the stages' parts, the device buffers.
  // What the stages check per sample at run time (StageEnv::worker_memory), filled by
  // PipelineGraph::Create once `memory` is checked against the budget.
  std::shared_ptr<WorkerMemory> worker_memory;
};

// PlanGraph returns the plan for `options` over `dataset` and `sampler` with batches in
// `memory`, or InvalidArgument (NotFound for an unknown stage type) in one line naming
// the option or stage and what to change. It allocates no batch buffer.
absl::StatusOr<GraphPlan> PlanGraph(const GraphOptions& options, const Dataset& dataset,
                                    const Sampler& sampler, const DeviceMemory& memory);

}  // namespace graph_internal
}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_GRAPH_PLAN_H_
