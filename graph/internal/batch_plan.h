// batch_plan.h: the batch stages of a pipeline (GraphOptions::batch_stages), created as
// PlanGraph plans the per-sample ones: each type checked to be a batch stage, its factory
// run with the batch tensors' shapes and the data's classes, and the label tensor it asks
// for (int64 indices, or float32 soft targets) worked out.
//
// Thread-safety: a plain function, safe from any thread (the registry locks).
#ifndef FLOWLOADER_GRAPH_INTERNAL_BATCH_PLAN_H_
#define FLOWLOADER_GRAPH_INTERNAL_BATCH_PLAN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/batch_stage.h"
#include "graph/pipeline_graph.h"
#include "stages/reader/dataset.h"

namespace flowloader {
namespace graph_internal {

// PlannedBatchStage is one batch stage as the plan created it.
struct PlannedBatchStage {
  std::unique_ptr<BatchStage> stage;
  std::string name;  // The `stage` label: the spec's name, else its type.
};

// PlanBatchStages creates options.batch_stages in order over batches of `outputs` (and
// `targets`, what the per-sample stages write), sets
// *label to the label tensor they need and adds what they keep to *memory. Errors are one
// line led by the item's FILE:LINE:COLUMN when it came from a spec.
absl::Status PlanBatchStages(const GraphOptions& options, const Dataset& dataset,
                             const std::vector<OutputSpec>& outputs,
                             const TargetsSpec& targets,
                             std::vector<PlannedBatchStage>* stages, LabelSpec* label,
                             std::vector<MemoryPart>* memory);

// RefuseBatchTypesInStages refuses a batch stage type in the per-sample `stages:` list.
absl::Status RefuseBatchTypesInStages(const std::vector<StageSpec>& stages);

}  // namespace graph_internal
}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_BATCH_PLAN_H_
