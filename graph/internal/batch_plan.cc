// batch_plan.cc: PlanBatchStages (see batch_plan.h).
#include "graph/internal/batch_plan.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/sample_error.h"

namespace flowloader {
namespace graph_internal {
namespace {

// Located prefixes `status` with the item's place and what it is, as stage errors are.
absl::Status Located(const absl::Status& status, const StageSpec& spec, const char* what) {
  const std::string name = absl::StrCat(what, " '", spec.type, "'");
  return WithContext(status, spec.where.empty() ? name : absl::StrCat(spec.where, ": ", name));
}

// The graph's own stage names, which a batch op may not take (its statistics row would
// be confused with theirs).
bool Reserved(const std::string& name) {
  return name == "source" || name == "collate" || name == "upload" || name == "consumer";
}

}  // namespace

absl::Status RefuseBatchTypesInStages(const std::vector<StageSpec>& stages) {
  for (const StageSpec& spec : stages) {
    absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec.type);
    if (schema.ok() && schema->batch_stage) {
      return Located(absl::InvalidArgumentError(
                         "is a batch stage: list it under batch_ops:, not stages:"),
                     spec, "stage");
    }
  }
  return absl::OkStatus();
}

absl::Status PlanBatchStages(const GraphOptions& options, const Dataset& dataset,
                             const std::vector<OutputSpec>& outputs,
                             const TargetsSpec& targets,
                             std::vector<PlannedBatchStage>* stages, LabelSpec* label,
                             std::vector<MemoryPart>* memory) {
  stages->clear();
  *label = LabelSpec{};
  if (options.batch_stages.empty()) return absl::OkStatus();
  BatchStageEnv env;
  env.dataset = &dataset;
  env.outputs = outputs;
  env.targets = targets;
  env.batch_size = options.batch_size;
  env.drop_last = options.drop_last;
  env.data_classes = DataClasses(dataset);
  for (const StageSpec& spec : options.batch_stages) {
    absl::StatusOr<std::unique_ptr<BatchStage>> stage =
        StageRegistry::Global().CreateBatch(spec.type, spec.args, env);
    if (!stage.ok()) return Located(stage.status(), spec, "batch op");
    PlannedBatchStage planned{std::move(*stage), spec.name.empty() ? spec.type : spec.name};
    if (Reserved(planned.name)) {
      return Located(absl::InvalidArgumentError(absl::StrCat(
                         "its name '", planned.name, "' is the pipeline's own: give it a name")),
                     spec, "batch op");
    }
    for (const PlannedBatchStage& earlier : *stages) {
      if (earlier.name == planned.name) {
        return Located(absl::InvalidArgumentError(absl::StrCat(
                           "two batch ops are named '", planned.name, "': give one a name")),
                       spec, "batch op");
      }
    }
    stages->push_back(std::move(planned));
  }
  *label = env.label;
  for (MemoryPart& part : env.memory) memory->push_back(std::move(part));
  return absl::OkStatus();
}

}  // namespace graph_internal
}  // namespace flowloader
