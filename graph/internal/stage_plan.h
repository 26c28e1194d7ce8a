// stage_plan.h: checks, before any stage is created, that a stage list can produce a batch.
//
// Each stage type declares the per-sample fields it reads and writes (StageSchema::inputs
// and outputs, graph/stage.h). CheckStagePlan walks the list in order, as the samples go,
// and refuses in one line what would otherwise run and deliver nothing: a stage reading a
// field no earlier stage writes (decode without read: every sample an empty file), a field
// written twice (two augments: the second finds no image), a field read after the stage
// that frees it, and a list that never writes the batch output. It is the declaration half
// of the planned graphs (DESIGN.md, "Graphs": PlanDag); the graph still runs the list as a
// chain.
//
// Thread-safety: thread-safe (reads the registry under its lock).
#ifndef FLOWLOADER_GRAPH_INTERNAL_STAGE_PLAN_H_
#define FLOWLOADER_GRAPH_INTERNAL_STAGE_PLAN_H_

#include <vector>

#include "absl/status/status.h"
#include "graph/pipeline_graph.h"
#include "graph/stage.h"

namespace flowloader {
namespace graph_internal {

// CheckStagePlan returns OK when every stage of `stages` (in order) reads only fields an
// earlier stage (or the source: key, path, label) wrote and did not free, no field has two
// writers, and some stage writes the batch output. Otherwise InvalidArgument naming the
// stage (prefixed with its StageSpec::where when set), the field, and the fix. Each
// stage's options are checked first (StageArgs::Parse's error); an unknown type is the
// registry's NotFound.
absl::Status CheckStagePlan(const std::vector<StageSpec>& stages, const StageRegistry& registry);

}  // namespace graph_internal
}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_STAGE_PLAN_H_
