// graph_plan.cc: PlanGraph (see graph_plan.h).
#include "graph/internal/graph_plan.h"

#include <thread>  // NOLINT(build/c++11): hardware_concurrency.
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "graph/internal/memory_planning.h"
#include "graph/stage_plan.h"
#include "stages/collate/batch.h"
#include "stages/core/sample_error.h"
#include "stages/reader/data_sources.h"

namespace flowloader {
namespace graph_internal {
namespace {

absl::Status CheckOptions(const GraphOptions& options) {
  if (options.num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_workers must be >= 1, got ", options.num_workers));
  }
  if (options.num_workers > GraphOptions::kMaxWorkers) {
    // A thread each: far more than any machine's cores, and past what a process may
    // create (pthread_create fails, and oneTBB then terminates the process).
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers ", options.num_workers, " is over the limit of ", GraphOptions::kMaxWorkers,
        " (a thread each; this machine has ", std::thread::hardware_concurrency(),
        " CPUs): lower num_workers"));
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be >= 1, got ", options.batch_size));
  }
  if (options.prefetch_batches < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefetch_batches must be >= 1, got ", options.prefetch_batches));
  }
  if (options.epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("epochs must be >= 0 (0 = until stopped), got ", options.epochs));
  }
  if (!(options.max_error_fraction >= 0.0)) {
    return absl::InvalidArgumentError("max_error_fraction must be >= 0");
  }
  if (options.size_divisibility < -1 || options.size_divisibility > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size_divisibility must be in [0, 1024] (or -1: off), got ", options.size_divisibility));
  }
  return absl::OkStatus();
}

// CheckPadded refuses what a padded batch (size_divisibility) cannot hold: several batch
// tensors (one image size per row, of one tensor), or batch ops (mosaic, copy_paste,
// mixup read every row as one size).
absl::Status CheckPadded(const GraphOptions& options, const std::vector<OutputSpec>& outputs) {
  if (options.size_divisibility < 0) return absl::OkStatus();
  if (outputs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size_divisibility ", options.size_divisibility, " pads one image tensor, the graph "
        "writes ", outputs.size(), ": bind one view, or remove size_divisibility"));
  }
  if (!options.batch_stages.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size_divisibility ", options.size_divisibility, " makes rows of different sizes, "
        "which batch op ", options.batch_stages.front().type, " cannot read: remove "
        "size_divisibility (end the op list with a fixed size) or the batch op"));
  }
  // Each row is padded in its own batch slot, so a slot's sides must be multiples already
  // (a transforms list's are: its slots are its bound, rounded up). A stage with a fixed
  // size that is not (the built-in augment's image_size 32 under size_divisibility 3)
  // would pad past its slot into the next row's: a heap overrun, found by a hostile run.
  const std::vector<int64_t>& shape = outputs[0].sample_shape;
  const int64_t d = options.size_divisibility;
  if (d > 0 && shape.size() == 3) {
    const int64_t h = outputs[0].is_float ? shape[1] : shape[0];
    const int64_t w = outputs[0].is_float ? shape[2] : shape[1];
    if (h % d != 0 || w % d != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "size_divisibility ", d, " would pad the ", h, "x", w, " images past their batch "
          "slots (a fixed size that is not a multiple of ", d, "): use a size_divisibility that divides both sides, an image_size that is a "
          "multiple of it, or remove size_divisibility (one size needs no padding)"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> FieldNames(const std::vector<FieldSchema>& fields) {
  std::vector<std::string> names;
  for (const FieldSchema& f : fields) names.push_back(f.name);
  return names;
}

// BindEnv tells the factory about to run which fields its stage (stage `index` of the
// plan) is bound to, and which target fields the sample carries when it gets there.
void BindEnv(const StagePlan& plan, size_t index, StageEnv& env) {
  const StagePorts& ports = plan.stages[index];
  env.inputs = FieldNames(ports.inputs);
  env.outputs = FieldNames(ports.outputs);
  env.may_free = ports.frees;
  env.carried.clear();
  for (const FieldFlow& field : plan.fields) {
    if (field.kind == FieldKind::kTargets && field.writer >= 0 &&
        static_cast<size_t>(field.writer) < index) {
      env.carried.push_back(field.name);
    }
  }
}

// CollectOutputs lists every batch tensor's declared shape, in the plan's order.
absl::Status CollectOutputs(const StagePlan& plan, const StageEnv& env,
                            std::vector<OutputSpec>* outputs) {
  for (const std::string& name : plan.batch_tensors) {
    auto it = env.declared_outputs.find(name);
    if (it == env.declared_outputs.end() || it->second.sample_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no stage declares the shape of the batch tensor '", name,
          "': the stage writing it must call StageEnv::DeclareOutput in its factory"));
    }
    outputs->push_back(it->second);
  }
  return absl::OkStatus();
}

// CreateStages runs the stage factories, last first: a stage can offer services (the crop
// planners) to the stages before it, and each adds what it keeps to env.memory.
absl::Status CreateStages(const GraphOptions& options, StageEnv& env,
                          std::vector<PlannedStage>* out, std::vector<OutputSpec>* outputs) {
  if (options.stages.empty()) return absl::InvalidArgumentError("the pipeline has no stages");
  if (absl::Status s = RefuseBatchTypesInStages(options.stages); !s.ok()) return s;
  // The list's fields first: a list that cannot make a batch is refused before any factory.
  absl::StatusOr<StagePlan> plan = PlanStages(options.stages, StageRegistry::Global());
  if (!plan.ok()) return plan.status();
  env.batch_tensors = plan->batch_tensors;
  std::vector<PlannedStage> stages(options.stages.size());
  for (size_t i = options.stages.size(); i-- > 0;) {
    const StageSpec& spec = options.stages[i];
    absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec.type);
    if (!schema.ok()) return schema.status();
    BindEnv(*plan, i, env);
    absl::StatusOr<std::unique_ptr<SampleStage>> stage =
        StageRegistry::Global().Create(spec.type, spec.args, env);
    if (!stage.ok()) {
      // From a spec, the item's FILE:LINE:COLUMN leads, as every other spec error does.
      // A stage's own "TYPE: " prefix goes: the context names the stage once.
      const std::string stage_name = absl::StrCat("stage '", spec.type, "'");
      absl::Status status = stage.status();
      absl::string_view message = status.message();
      if (absl::ConsumePrefix(&message, absl::StrCat(spec.type, ": "))) {
        absl::Status once(status.code(), message);
        status.ForEachPayload([&once](absl::string_view url, const absl::Cord& payload) {
          once.SetPayload(url, payload);
        });
        status = std::move(once);
      }
      return WithContext(status, spec.where.empty() ? stage_name
                                                    : absl::StrCat(spec.where, ": ", stage_name));
    }
    stages[i].stage = std::move(*stage);
    stages[i].name = spec.name.empty() ? spec.type : spec.name;
    const int concurrency =
        spec.concurrency > 0 ? spec.concurrency : schema->default_concurrency;
    stages[i].concurrency = concurrency > 0 ? concurrency : options.num_workers;
  }
  if (absl::Status s = CollectOutputs(*plan, env, outputs); !s.ok()) return s;
  for (size_t i = 0; i < stages.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (stages[j].name == stages[i].name) {
        return absl::InvalidArgumentError(absl::StrCat(
            "two stages are named '", stages[i].name, "': give one a distinct name"));
      }
    }
  }
  *out = std::move(stages);
  return absl::OkStatus();
}

// StartSample is where in its epoch the resume cursor starts: start_sample, or for a
// cursor that counts batches only (EPOCH:BATCH), start_batch × batch_size.
int64_t StartSample(const GraphOptions& options) {
  return options.start_sample >= 0 ? options.start_sample
                                   : options.start_batch * options.batch_size;
}

// CheckCursor refuses a resume position outside the run, and a resume batch size the
// pool cannot hold.
absl::Status CheckCursor(const GraphOptions& options, int64_t samples, int64_t batches_per_epoch,
                         int pool_rows) {
  const bool counts_batches = options.start_sample < 0;
  if (options.start_epoch < 0 || options.start_batch < 0 ||
      (counts_batches && options.start_batch >= batches_per_epoch)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resume at epoch ", options.start_epoch, " batch ", options.start_batch,
        ": an epoch has ", batches_per_epoch, " batches"));
  }
  const int start_batch_size =
      options.start_batch_size > 0 ? options.start_batch_size : options.batch_size;
  if (options.start_batch_size < 0 || !BatchFitsPool(start_batch_size, pool_rows, samples)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resume with batch size ", start_batch_size, ": the batch pool holds ",
        pool_rows, " samples per buffer; create the pipeline with batch_size >= ",
        start_batch_size));
  }
  const int64_t start_sample = StartSample(options);
  // With drop_last an epoch's tail shorter than a batch is never planned, so no cursor
  // points into it.
  const int64_t last_start = options.drop_last ? samples - start_batch_size : samples - 1;
  if (!counts_batches && start_sample > last_start) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resume at epoch ", options.start_epoch, " batch ", options.start_batch,
        " sample ", start_sample, ": an epoch has ", samples, " samples",
        options.drop_last ? absl::StrCat(" and drop_last drops a tail under ", start_batch_size)
                          : ""));
  }
  // The cursor after the last batch is (epochs, 0): resuming there delivers nothing and
  // reports done at once; anything past it is a mistake worth a message.
  if (options.epochs > 0 &&
      (options.start_epoch > options.epochs ||
       (options.start_epoch == options.epochs && (options.start_batch > 0 || start_sample > 0)))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot resume at epoch ", options.start_epoch, " batch ", options.start_batch,
        ": the run has ", options.epochs, " epochs, so its last cursor is ", options.epochs,
        ":0; resume at or before it, or raise epochs"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GraphPlan> PlanGraph(const GraphOptions& options, const Dataset& dataset,
                                    const Sampler& sampler, const DeviceMemory& memory) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  GraphPlan plan;
  StageEnv env;
  env.dataset = &dataset;
  env.env = options.env != nullptr ? options.env : Env::Default();
  env.num_workers = options.num_workers;
  env.size_divisibility = options.size_divisibility;
  plan.worker_memory = env.worker_memory;
  if (absl::Status s = CreateStages(options, env, &plan.stages, &plan.outputs); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPadded(options, plan.outputs); !s.ok()) return s;
  if (absl::Status s = PlanBatchStages(options, dataset, plan.outputs, env.targets,
                                      &plan.batch_stages, &plan.label, &env.memory);
      !s.ok()) {
    return s;
  }
  env.memory.insert(env.memory.end(), options.source_memory.begin(),
                    options.source_memory.end());

  const int64_t samples = sampler.samples_per_rank();
  plan.batches_per_epoch = NumBatches(samples, options.batch_size, options.drop_last);
  if (plan.batches_per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an epoch has no batch: ", samples, " samples on this rank, batch_size ",
        options.batch_size, " with drop_last"));
  }
  plan.pool_rows = PoolRows(options.batch_size, samples);
  if (absl::Status s = CheckCursor(options, samples, plan.batches_per_epoch, plan.pool_rows);
      !s.ok()) {
    return s;
  }
  plan.start_sample = StartSample(options);
  plan.start_batch_size =
      options.start_batch_size > 0 ? options.start_batch_size : options.batch_size;
  plan.memory = PlanGraphMemory(options, plan.outputs, plan.pool_rows, memory.pinned(),
                                memory.location() == MemoryLocation::kDevice, env.memory,
                                plan.label);
  if (!dataset.column_names().empty()) {
    plan.memory.Add(ColumnsMemoryPart(dataset, options.prefetch_batches, plan.pool_rows));
  }
  // Last: the least each worker may hold for one sample under memory_limit_mb, beside
  // everything above (what the decode scratch does not already give it).
  if (MemoryPart room = SampleRoomPart(plan.memory, options.num_workers,
                                       options.memory_limit_bytes, options.sample_room_bytes);
      room.bytes > 0) {
    plan.memory.Add(std::move(room));
  }
  return plan;
}

}  // namespace graph_internal
}  // namespace flowloader
