// stage_plan.h: plans, before any stage is created, how a stage list's per-sample fields
// flow from the source to the batch, and refuses a list that cannot make a batch.
//
// Each stage type declares the per-sample fields it reads and writes (its ports:
// StageSchema::inputs and outputs, graph/stage.h); a spec item may bind them to other field
// names (StageSpec::inputs/outputs: `outputs: [view0]`). PlanStages resolves the bindings
// and walks the list in order, as the samples go, refusing in one line what would otherwise
// run and deliver nothing: a field read that no stage writes (a misspelt `inputs: [nope]`,
// decode without read), a field written twice (two augments both writing `output`), a cycle (two stages each
// reading what the other writes), an input of the wrong kind (`inputs: [bytes]` on
// augment), and a list that never writes a batch tensor. Each refusal starts with the spec's file:line:column when the stage came
// from one. The plan is what `flowloader graph` prints; the graph runs the list in order.
//
// Thread-safety: thread-safe (reads the registry under its lock).
#ifndef FLOWLOADER_GRAPH_STAGE_PLAN_H_
#define FLOWLOADER_GRAPH_STAGE_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/pipeline_graph.h"
#include "graph/stage.h"

namespace flowloader {

// StagePorts is one stage with its ports bound to field names.
struct StagePorts {
  std::string name;  // Metrics name: StageSpec::name, else the type.
  std::string type;
  std::vector<FieldSchema> inputs;   // Bound field names, with the ports' kinds.
  std::vector<FieldSchema> outputs;  // Fields it writes (in-place fields included).
  // Inputs it may free (its schema's `frees`, where it is the field's last reader).
  std::vector<std::string> frees;
};

// FieldFlow is one per-sample field: who writes it and who reads it.
struct FieldFlow {
  std::string name;
  FieldKind kind = FieldKind::kMetadata;
  int writer = -1;           // Index into StagePlan::stages; -1 = the source.
  std::vector<int> readers;  // Stages reading it, in list order.
  bool batch_tensor = false;  // A tensor field: it becomes a tensor of every batch.
};

struct StagePlan {
  std::vector<StagePorts> stages;  // In list order.
  std::vector<FieldFlow> fields;  // Source fields first, then in the order written.
  // The fields that become batch tensors, in the order written: a tensor's index here is
  // its view number (its random stream) and its place in Batch::tensors.
  std::vector<std::string> batch_tensors;
};

// PlanStages returns the plan of `stages` when every stage reads only fields an earlier
// stage (or the source: key, path, label) wrote, with the kinds its ports declare; no
// field has two writers; and at least one tensor field is written (each one a batch
// tensor). A field is freed after its last reader. Otherwise
// InvalidArgument naming the stage (prefixed with the binding's or StageSpec::where when
// set), the field, and the fix. Each stage's options are checked first (StageArgs::Parse's
// error); an unknown type is the registry's NotFound.
absl::StatusOr<StagePlan> PlanStages(const std::vector<StageSpec>& stages,
                                     const StageRegistry& registry);

// CheckStagePlan is PlanStages' status.
absl::Status CheckStagePlan(const std::vector<StageSpec>& stages, const StageRegistry& registry);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_STAGE_PLAN_H_
