#include "runtime/pipeline.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/internal/autotune_loop.h"
#include "runtime/internal/data_checksum.h"
#include "runtime/version.h"
#include "stages/core/log.h"
#include "stages/core/resources.h"
#include "stages/reader/dataset.h"
#include "stages/reader/http_env.h"
#include "stages/reader/sampler.h"

namespace flowloader {

absl::StatusOr<std::vector<StageSpec>> DefaultStages(const PipelineOptions& options) {
  if (absl::StatusOr<augment::Mode> mode = augment::ParseMode(options.transform, "transform");
      !mode.ok()) {
    return mode.status();
  }
  std::vector<StageSpec> stages(3);
  stages[0].type = "read";
  stages[1].type = "decode";
  stages[2].type = "augment";
  stages[2].args = {{"mode", options.transform},
                    {"image_size", absl::StrCat(options.image_size)},
                    {"layout", options.layout}};
  return stages;
}

namespace {

// The autotuner judges a window this long: several batches at a few thousand images/s,
// short enough to settle within seconds.
constexpr double kAutotuneWindowSeconds = 0.2;

int64_t MemoryLimitBytes(const PipelineOptions& options) {
  return options.memory_limit_mb * (int64_t{1} << 20);
}

// PipelineParts are what Create and PlanMemory make from the options before the graph.
struct PipelineParts {
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<const Sampler> sampler;
  std::shared_ptr<DeviceMemory> memory;  // Where batches live.
  GraphOptions graph;
};

GraphOptions GraphOptionsFor(const PipelineOptions& options) {
  GraphOptions graph_options;
  graph_options.num_workers = options.num_workers;
  graph_options.batch_size = options.batch_size;
  graph_options.prefetch_batches = options.prefetch_batches;
  graph_options.drop_last = options.drop_last;
  graph_options.in_order = options.in_order;
  graph_options.epochs = options.epochs;
  graph_options.start_epoch = options.resume.epoch;
  graph_options.start_batch = options.resume.batch;
  graph_options.start_sample = options.resume.sample;
  graph_options.start_batch_size = options.resume.batch_size;
  graph_options.seed = options.seed;
  graph_options.on_error = options.on_error;
  graph_options.max_errors = options.max_errors;
  graph_options.max_error_fraction = options.max_error_fraction;
  graph_options.env = options.env;
  graph_options.memory_limit_bytes = MemoryLimitBytes(options);
  graph_options.batch_stages = options.batch_ops;
  return graph_options;
}

// OpenDataset opens `data`, or every one of `sources` as one dataset.
absl::StatusOr<std::unique_ptr<Dataset>> OpenDataset(const PipelineOptions& options) {
  DatasetOptions dataset_options;
  dataset_options.path = options.data;
  dataset_options.env = options.env;
  dataset_options.label_key = options.label_key;
  dataset_options.columns = options.columns;
  dataset_options.column_max_bytes = options.column_max_bytes;
  dataset_options.http = options.http;
  dataset_options.http.cache_bytes = options.http_cache_mb << 20;
  if (options.sources.empty()) return Dataset::Open(dataset_options);
  if (!options.data.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data ('", options.data, "') and sources are both set: give one of them"));
  }
  std::vector<DatasetSource> sources;
  for (const WeightedSource& w : options.sources) {
    DatasetSource source{w.name, dataset_options};
    source.options.path = w.data;
    sources.push_back(std::move(source));
  }
  return Dataset::OpenSources(sources);
}

// MixtureOf is the sampler's view of the sources: each one's size and weight.
std::vector<MixtureComponent> MixtureOf(const PipelineOptions& options, const Dataset& dataset) {
  std::vector<MixtureComponent> mixture;
  for (size_t i = 0; i < options.sources.size(); ++i) {
    mixture.push_back(MixtureComponent{dataset.source_size(static_cast<int32_t>(i)),
                                       options.sources[i].weight});
  }
  return mixture;
}

absl::StatusOr<PipelineParts> OpenParts(const PipelineOptions& options) {
  if (options.name.empty()) return absl::InvalidArgumentError("pipeline name is empty");
  // Checked whatever the data, so a typo is refused here, not on the first https shard.
  if (absl::Status s = CheckCaFile(options.http.ca_file); !s.ok()) return s;
  PipelineParts parts;
  if (options.dataset != nullptr) {
    if (!options.data.empty() || !options.sources.empty()) {
      return absl::InvalidArgumentError("a dataset is given: data and sources must be empty");
    }
    parts.dataset = options.dataset;
  } else {
    absl::StatusOr<std::unique_ptr<Dataset>> dataset = OpenDataset(options);
    if (!dataset.ok()) return dataset.status();
    parts.dataset = std::move(*dataset);
  }

  SamplerOptions sampler_options;
  sampler_options.shuffle = options.shuffle;
  sampler_options.seed = options.seed;
  sampler_options.rank = options.rank;
  sampler_options.world_size = options.world_size;
  if (options.even_shards != "pad" && options.even_shards != "trim") {
    return absl::InvalidArgumentError(
        absl::StrCat("even_shards must be pad or trim, got '", options.even_shards, "'"));
  }
  sampler_options.drop_remainder = options.even_shards == "trim";
  sampler_options.mixture = MixtureOf(options, *parts.dataset);
  sampler_options.epoch_samples = options.epoch_samples;
  sampler_options.repeated_augment = options.repeated_augment;
  absl::StatusOr<std::unique_ptr<Sampler>> sampler =
      Sampler::Create(parts.dataset->size(), sampler_options);
  if (!sampler.ok()) return sampler.status();
  parts.sampler = std::move(*sampler);

  DeviceOptions device_options;
  device_options.device = options.device;
  device_options.pin_memory = options.pin_memory;
  absl::StatusOr<std::unique_ptr<DeviceMemory>> memory = DeviceMemory::Create(device_options);
  if (!memory.ok()) return memory.status();
  parts.memory = std::move(*memory);

  parts.graph = GraphOptionsFor(options);
  if (options.stages.empty()) {
    absl::StatusOr<std::vector<StageSpec>> stages = DefaultStages(options);
    if (!stages.ok()) return stages.status();
    parts.graph.stages = std::move(*stages);
  } else {
    parts.graph.stages = options.stages;
  }
  return parts;
}

// ResolveAutotune sets the graph options of the knobs that are auto (autotune_loop.h).
absl::StatusOr<AutotunePlan> ResolveAutotune(const PipelineOptions& options,
                                             PipelineParts* parts) {
  const PipelineParts& p = *parts;
  return PlanAutotune(
      options,
      [&p](const GraphOptions& graph) {
        return PipelineGraph::Plan(graph, *p.dataset, *p.sampler, *p.memory);
      },
      std::max<int64_t>(0, ResidentBytes()), &parts->graph);
}

}  // namespace

absl::StatusOr<MemoryPlan> Pipeline::PlanMemory(const PipelineOptions& options) {
  absl::StatusOr<PipelineParts> parts = OpenParts(options);
  if (!parts.ok()) return parts.status();
  if (absl::StatusOr<AutotunePlan> a = ResolveAutotune(options, &*parts); !a.ok()) {
    return a.status();
  }
  return PipelineGraph::Plan(parts->graph, *parts->dataset, *parts->sampler, *parts->memory);
}

MemoryBudget Pipeline::MemoryBudgetFor(const PipelineOptions& options) {
  GraphOptions graph_options;
  graph_options.memory_limit_bytes = MemoryLimitBytes(options);
  return PipelineGraph::Budget(graph_options);
}

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(const PipelineOptions& options) {
  absl::StatusOr<PipelineParts> parts = OpenParts(options);
  if (!parts.ok()) return parts.status();
  const int64_t samples_per_epoch = parts->sampler->samples_per_rank();
  const std::shared_ptr<DeviceMemory>& memory = parts->memory;
  LogInfo(absl::StrCat("pipeline '", options.name, "': batches ",
                       memory->location() == MemoryLocation::kHost ? "in " : "on ",
                       memory->description()));

  absl::StatusOr<AutotunePlan> autotune = ResolveAutotune(options, &*parts);
  if (!autotune.ok()) return autotune.status();
  auto knob_text = [](int value) {
    return value == PipelineOptions::kAuto ? std::string("auto") : absl::StrCat(value);
  };
  auto stats = std::make_shared<PipelineStats>(options.name);
  stats->SetSources(parts->dataset->source_names());
  stats->autotune.enabled = autotune->enabled;
  stats->autotune.num_workers = parts->graph.num_workers;
  stats->autotune.prefetch_batches = parts->graph.prefetch_batches;
  stats->build_info = {{"version", Version()},
                       {"num_workers", knob_text(options.num_workers)},
                       {"batch_size", absl::StrCat(options.batch_size)},
                       {"prefetch_batches", knob_text(options.prefetch_batches)},
                       {"decoder", "libjpeg-turbo"},
                       {"memory", LocationName(memory->location())}};
  if (options.trace_spans > 0) stats->trace = std::make_unique<TraceBuffer>(options.trace_spans);
  absl::StatusOr<std::unique_ptr<PipelineGraph>> graph =
      PipelineGraph::Create(parts->graph, parts->dataset, parts->sampler, memory, stats);
  if (!graph.ok()) return graph.status();
  const int arena_workers = std::max(parts->graph.num_workers, parts->graph.max_workers);
  if ((*graph)->effective_threads() < arena_workers) {
    LogWarning(absl::StrCat("num_workers=", arena_workers, " but oneTBB grants ",
                            (*graph)->effective_threads(), " threads"));
  }
  std::unique_ptr<Pipeline> pipeline(new Pipeline(options, std::move(stats), memory,
                                                  std::move(*graph), samples_per_epoch));
  pipeline->dataset_ = parts->dataset;
  pipeline->graph_->Start();
  if (autotune->enabled) {
    pipeline->autotune_ = std::make_unique<AutotuneLoop>(
        pipeline->graph_.get(), pipeline->stats_, autotune->policy, kAutotuneWindowSeconds);
  }
  return pipeline;
}

Pipeline::Pipeline(const PipelineOptions& options, std::shared_ptr<PipelineStats> stats,
                   std::shared_ptr<DeviceMemory> memory, std::unique_ptr<PipelineGraph> graph,
                   int64_t samples_per_epoch)
    : options_(options),
      stats_(std::move(stats)),
      memory_(std::move(memory)),
      graph_(std::move(graph)),
      samples_per_epoch_(samples_per_epoch),
      checksum_(options.checksum ? std::make_unique<DataChecksum>() : nullptr) {
  // Create has checked the cursor; spell out what its defaults mean, so Checkpoint()
  // before the first batch is as complete as after it.
  cursor_ = options.resume;
  if (cursor_.sample < 0) cursor_.sample = cursor_.batch * options.batch_size;
  if (cursor_.batch_size <= 0) cursor_.batch_size = options.batch_size;
  // Resumed at the end of the last epoch: nothing is left to deliver.
  done_ = options.epochs > 0 && cursor_.epoch >= options.epochs;
}

Pipeline::~Pipeline() {
  Stop();
  // A Next blocked in another thread returns Cancelled now; wait until it has left.
  std::unique_lock<std::mutex> lock(mu_);
  no_active_next_.wait(lock, [this] { return active_next_calls_ == 0; });
}

absl::Status Pipeline::Next(std::shared_ptr<const Batch>* batch, bool* end_of_epoch) {
  *batch = nullptr;
  *end_of_epoch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_end_of_epoch_ || done_) {
      pending_end_of_epoch_ = false;
      *end_of_epoch = true;
      // The cursor is past the last configured epoch: this end is the final one.
      if (options_.epochs > 0 && cursor_.epoch >= options_.epochs) done_ = true;
      return absl::OkStatus();
    }
    ++active_next_calls_;
  }
  absl::Status status;
  while (true) {
    PipelineGraph::Popped popped;
    status = graph_->Pop(&popped);  // Blocks without holding mu_.
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok()) break;
    if (popped.done) {
      done_ = true;
      *end_of_epoch = true;
      break;
    }
    AdvanceCursorLocked(popped);
    if (popped.batch != nullptr) {
      *batch = std::move(popped.batch);
      pending_end_of_epoch_ = popped.ends_epoch;
      break;
    }
    if (popped.ends_epoch) {  // The epoch's last batch was empty (all skipped).
      *end_of_epoch = true;
      if (options_.epochs > 0 && cursor_.epoch >= options_.epochs) done_ = true;
      break;
    }
  }
  if (*batch != nullptr) stats_->CountSources((*batch)->sources);
  if (checksum_ != nullptr && *batch != nullptr) {
    std::lock_guard<std::mutex> lock(checksum_mu_);
    checksum_->Add(**batch);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (--active_next_calls_ == 0) no_active_next_.notify_all();
  return status;
}

// AdvanceCursorLocked moves the cursor past `popped`, from the source's own plan of it
// (where it ended, whether it was its epoch's last), not by counting batches: batches
// differ in size once SetBatchSize has been called.
void Pipeline::AdvanceCursorLocked(const PipelineGraph::Popped& popped) {
  const int batch_size = graph_->batch_size();
  if (popped.ends_epoch) {
    cursor_ = Cursor{popped.epoch + 1, 0, 0, batch_size};
  } else {
    cursor_ = Cursor{popped.epoch, popped.index + 1, popped.end_position, batch_size};
  }
}

absl::Status Pipeline::SetBatchSize(int batch_size) {
  if (absl::Status s = graph_->SetBatchSize(batch_size); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  // A checkpoint taken now resumes at the new size, as this pipeline continues.
  cursor_.batch_size = batch_size;
  return absl::OkStatus();
}

std::string Pipeline::data_checksum() const {
  if (checksum_ == nullptr) return "";
  std::lock_guard<std::mutex> lock(checksum_mu_);
  return checksum_->Text();
}

std::vector<std::pair<int64_t, std::string>> Pipeline::epoch_checksums() const {
  if (checksum_ == nullptr) return {};
  std::lock_guard<std::mutex> lock(checksum_mu_);
  return checksum_->EpochTexts();
}

void Pipeline::Stop() {
  if (autotune_ != nullptr) autotune_->Stop();  // No resize of a graph being stopped.
  // First, so the graph's drain below never waits on a server.
  if (dataset_ != nullptr && dataset_->http_env() != nullptr) dataset_->http_env()->Cancel();
  graph_->Stop();
}

bool Pipeline::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Cursor Pipeline::Checkpoint() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cursor_;
}

}  // namespace flowloader
