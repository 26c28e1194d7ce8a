#include "runtime/pipeline.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/stage.h"
#include "runtime/internal/autotune_loop.h"
#include "runtime/internal/data_checksum.h"
#include "runtime/internal/optional_memory.h"
#include "runtime/internal/options_check.h"
#include "runtime/version.h"
#include "stages/core/log.h"
#include "stages/core/resources.h"
#include "stages/detection/coco.h"
#include "stages/reader/data_sources.h"
#include "stages/reader/dataset_storage.h"
#include "stages/reader/http_env.h"
#include "stages/reader/schemes.h"
#include "stages/reader/storage_env.h"

namespace flowloader {

absl::StatusOr<std::vector<StageSpec>> DefaultStages(const PipelineOptions& options) {
  if (!options.annotations.empty()) {
    // Detection: the targets follow the image through a transforms list, and sanitize
    // drops what the crop left degenerate.
    return std::vector<StageSpec>{StageSpec{"read"}, StageSpec{"annotations"},
                                  StageSpec{"decode"}, StageSpec{"transforms"},
                                  StageSpec{"sanitize_bounding_boxes"}};
  }
  if (!options.label_maps.empty()) {
    // Semantic segmentation: the label map follows the image through a transforms list.
    return std::vector<StageSpec>{StageSpec{"read"}, StageSpec{"label_map"},
                                  StageSpec{"decode"}, StageSpec{"transforms"}};
  }
  if (absl::StatusOr<augment::Mode> mode = augment::ParseMode(options.transform, "transform");
      !mode.ok()) {
    return mode.status();
  }
  // The built-in stages in their order (read, decode, augment); the last one, augment,
  // takes the transform options.
  std::vector<StageSpec> stages;
  for (const std::string& type : BuiltinStageOrder()) stages.push_back(StageSpec{type});
  stages.back().args = {{"mode", options.transform},
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

// DataSourcesOptionsFor is what step 2 opens: `dataset`, the weighted `sources` or
// `data`, read with the options' file system, columns and HTTP settings, and the sampler.
DataSourcesOptions DataSourcesOptionsFor(const PipelineOptions& options) {
  DataSourcesOptions data;
  data.opened = options.dataset;
  DatasetOptions& dataset_options = data.dataset;
  dataset_options.path = options.data;
  dataset_options.env = options.env;
  dataset_options.label_key = options.label_key;
  dataset_options.columns = options.columns;
  dataset_options.column_max_bytes = options.column_max_bytes;
  dataset_options.http = options.http;
  dataset_options.http.cache_bytes = options.http_cache_mb << 20;
  dataset_options.s3 = options.s3;
  dataset_options.cache.dir = options.cache_dir;
  dataset_options.cache.bytes = options.cache_bytes;
  for (const WeightedSource& w : options.sources) {
    DatasetSource source{w.name, dataset_options, w.weight};
    source.options.path = w.data;
    data.sources.push_back(std::move(source));
  }
  SamplerOptions& sampler_options = data.sampler;
  sampler_options.shuffle = options.shuffle;
  sampler_options.seed = options.seed;
  sampler_options.rank = options.rank;
  sampler_options.world_size = options.world_size;
  sampler_options.drop_remainder = options.even_shards == "trim";
  sampler_options.epoch_samples = options.epoch_samples;
  sampler_options.repeated_augment = options.repeated_augment;
  return data;
}

// ReadCategories reads the `categories` file (local, or through the storage Envs).
absl::Status ReadCategories(const DatasetOptions& dataset, const std::string& path,
                            int64_t max_bytes, std::string* text) {
  if (!IsRemotePath(path)) {
    absl::Status s = Env::Default()->ReadFile(path, max_bytes, text);
    return s.ok() ? s : absl::Status(s.code(), absl::StrCat("categories: ", s.message()));
  }
  absl::StatusOr<std::unique_ptr<StorageEnv>> storage = OpenStorage(dataset);
  if (!storage.ok()) return storage.status();
  absl::Status s = (*storage)->ReadFile(path, max_bytes, text);
  return s.ok() ? s : absl::Status(s.code(), absl::StrCat("categories: ", s.message()));
}

// OpenData is step 2: the data sources of DataSourcesOptionsFor, or with `annotations`
// the images a COCO instances file lists under `data` (its targets ride on the dataset).
absl::StatusOr<DataSources> OpenData(const PipelineOptions& options) {
  DataSourcesOptions data = DataSourcesOptionsFor(options);
  if (!options.categories.empty() && !Dataset::IsMemberExtension(options.annotations)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "categories ", options.categories, " is for tar shards with annotations: .json; ",
        options.annotations.empty() ? "there are no annotations"
                                    : "a COCO instances file has its own categories"));
  }
  if (Dataset::IsMemberExtension(options.annotations)) {
    // Tar shards whose samples carry their annotations as a member (".json").
    detection::CocoOptions coco;
    coco.skip_empty = options.skip_empty;
    std::string categories;
    if (!options.categories.empty()) {
      absl::Status read = ReadCategories(data.dataset, options.categories, coco.max_json_bytes,
                                         &categories);
      if (!read.ok()) return read;
    }
    absl::StatusOr<std::unique_ptr<Dataset>> opened = Dataset::OpenShardAnnotations(
        data.dataset, coco, options.annotations, categories, options.categories);
    if (!opened.ok()) return opened.status();
    data.opened = std::move(*opened);
  } else if (!options.annotations.empty()) {
    detection::CocoOptions coco;
    coco.annotations = options.annotations;
    coco.images = options.data;
    coco.skip_empty = options.skip_empty;
    // The images, and a remote JSON (s3://, http(s)://), are read through the storage
    // Envs, so either may lie in a bucket.
    absl::StatusOr<std::unique_ptr<StorageEnv>> storage = OpenStorage(data.dataset);
    if (!storage.ok()) return storage.status();
    if (IsRemotePath(options.annotations)) {
      coco.read_file = [env = storage->get()](const std::string& path, int64_t max_bytes,
                                              std::string* text) {
        return env->ReadFile(path, max_bytes, text);
      };
    }
    absl::StatusOr<std::unique_ptr<detection::CocoDataset>> opened =
        detection::CocoDataset::Open(coco);
    if (!opened.ok()) return opened.status();
    for (const std::string& line : (*opened)->skip_messages()) LogInfo(line);
    data.opened = Dataset::OfCoco(std::move(*opened), std::move(*storage));
  }
  if (!options.label_maps.empty()) {
    if (!options.annotations.empty() || !options.sources.empty()) {
      return absl::InvalidArgumentError(
          "label_maps: give it with `data:` alone, not with annotations or sources");
    }
    absl::StatusOr<std::unique_ptr<Dataset>> opened =
        Dataset::OpenLabelMaps(data.dataset, options.label_maps);
    if (!opened.ok()) return opened.status();
    data.opened = std::move(*opened);
  }
  return OpenDataSources(data);
}

// BatchMemory is where batches live (the device and pinning options).
absl::StatusOr<std::shared_ptr<DeviceMemory>> BatchMemory(const PipelineOptions& options) {
  DeviceOptions device_options;
  device_options.device = options.device;
  device_options.pin_memory = options.pin_memory;
  absl::StatusOr<std::unique_ptr<DeviceMemory>> memory = DeviceMemory::Create(device_options);
  if (!memory.ok()) return memory.status();
  return std::shared_ptr<DeviceMemory>(std::move(*memory));
}

GraphOptions GraphOptionsFor(const PipelineOptions& options, const DataSources& data) {
  GraphOptions graph_options;
  graph_options.num_workers = options.num_workers;
  graph_options.batch_size = options.batch_size;
  graph_options.prefetch_batches = options.prefetch_batches;
  graph_options.drop_last = options.drop_last;
  graph_options.size_divisibility = options.size_divisibility;
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
  graph_options.sample_room_bytes = options.sample_room_mb < 0 ? -1 : options.sample_room_mb << 20;
  graph_options.batch_stages = options.batch_ops;
  graph_options.source_memory = data.memory;
  return graph_options;
}

// Planned is step 3's result: the graph's options with the stage list and every `auto`
// knob resolved, and what autotune decided.
struct Planned {
  GraphOptions graph;
  AutotunePlan autotune;
};

// Plan makes the graph's options for `data` with batches in `memory`: the stage list
// (the built-in one unless options.stages), then the `auto` knobs resolved against the
// memory plan (autotune_loop.h).
absl::StatusOr<Planned> Plan(const PipelineOptions& options, const DataSources& data,
                             const DeviceMemory& memory) {
  Planned planned;
  planned.graph = GraphOptionsFor(options, data);
  if (options.stages.empty()) {
    absl::StatusOr<std::vector<StageSpec>> stages = DefaultStages(options);
    if (!stages.ok()) return stages.status();
    planned.graph.stages = std::move(*stages);
  } else {
    planned.graph.stages = options.stages;
  }
  absl::StatusOr<AutotunePlan> autotune = PlanAutotune(
      options,
      [&data, &memory](const GraphOptions& graph) {
        return PipelineGraph::Plan(graph, *data.dataset, *data.sampler, memory);
      },
      std::max<int64_t>(0, ResidentBytes()), &planned.graph);
  if (!autotune.ok()) return autotune.status();
  planned.autotune = *autotune;
  return planned;
}

// StatsFor is the statistics a pipeline's graph reports into, labelled with the build
// and the knobs as given (`auto` where autotune sets them).
std::shared_ptr<PipelineStats> StatsFor(const PipelineOptions& options, const DataSources& data,
                                        const DeviceMemory& memory, const Planned& planned) {
  auto knob_text = [](int value) {
    return value == PipelineOptions::kAuto ? std::string("auto") : absl::StrCat(value);
  };
  auto stats = std::make_shared<PipelineStats>(options.name);
  stats->SetSources(data.dataset->source_names());
  if (const StorageEnv* storage = data.dataset->storage(); storage != nullptr) {
    stats->storage = storage->storage_stats();
  }
  stats->autotune.enabled = planned.autotune.enabled;
  stats->autotune.num_workers = planned.graph.num_workers;
  stats->autotune.prefetch_batches = planned.graph.prefetch_batches;
  stats->build_info = {{"version", Version()},
                       {"num_workers", knob_text(options.num_workers)},
                       {"batch_size", absl::StrCat(options.batch_size)},
                       {"prefetch_batches", knob_text(options.prefetch_batches)},
                       {"decoder", "libjpeg-turbo"},
                       {"memory", LocationName(memory.location())}};
  if (options.trace_spans > 0) stats->trace = std::make_unique<TraceBuffer>(options.trace_spans);
  return stats;
}

}  // namespace

absl::StatusOr<PipelineOptions> FitOptionalMemory(
    const PipelineOptions& options, const std::function<absl::Status(const PipelineOptions&)>& fits,
    std::string* note) {
  return pipeline_internal::ShrinkOptionalMemory(options, fits, note);
}

namespace {

// FitsRunBudget is Create's memory check without creating anything: the plan (the
// autotuner's ram_budget check included) against MemoryBudgetFor.
absl::Status FitsRunBudget(const PipelineOptions& options) {
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemoryAsGiven(options);
  if (!plan.ok()) return plan.status();
  return plan->CheckFits(Pipeline::MemoryBudgetFor(options));
}

// FitOptions sets *fitted to `options` with the optional caches shrunk to the run's
// budget and returns true, or returns false when nothing optional makes them fit (or
// they fit as given).
bool FitOptions(const PipelineOptions& options, PipelineOptions* fitted) {
  std::string note;
  absl::StatusOr<PipelineOptions> shrunk = FitOptionalMemory(options, FitsRunBudget, &note);
  if (!shrunk.ok() || note.empty()) return false;
  LogInfo(absl::StrCat("pipeline '", options.name, "': ", note));
  *fitted = *std::move(shrunk);
  return true;
}

}  // namespace

absl::StatusOr<MemoryPlan> Pipeline::PlanMemory(const PipelineOptions& options) {
  absl::StatusOr<MemoryPlan> plan = PlanMemoryAsGiven(options);
  const bool over = plan.ok() ? !plan->CheckFits(MemoryBudgetFor(options)).ok()
                              : plan.status().code() == absl::StatusCode::kResourceExhausted;
  PipelineOptions fitted;
  if (over && FitOptions(options, &fitted)) return PlanMemoryAsGiven(fitted);
  return plan;
}

absl::StatusOr<MemoryPlan> Pipeline::PlanMemoryAsGiven(const PipelineOptions& options) {
  if (absl::Status s = CheckPipelineOptions(options); !s.ok()) return s;
  absl::StatusOr<DataSources> data = OpenData(options);
  if (!data.ok()) return data.status();
  absl::StatusOr<std::shared_ptr<DeviceMemory>> memory = BatchMemory(options);
  if (!memory.ok()) return memory.status();
  absl::StatusOr<Planned> planned = Plan(options, *data, **memory);
  if (!planned.ok()) return planned.status();
  return PipelineGraph::Plan(planned->graph, *data->dataset, *data->sampler, **memory);
}

MemoryBudget Pipeline::MemoryBudgetFor(const PipelineOptions& options) {
  GraphOptions graph_options;
  graph_options.memory_limit_bytes = MemoryLimitBytes(options);
  return PipelineGraph::Budget(graph_options);
}

// Create walks four steps, each on what the one before made: check the options, open the
// data sources (each declaring its memory parts), plan (stages, fields, auto knobs,
// memory), then build and start the graph.
absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(const PipelineOptions& options) {
  absl::StatusOr<std::unique_ptr<Pipeline>> made = CreateAsGiven(options);
  if (made.ok() || made.status().code() != absl::StatusCode::kResourceExhausted) return made;
  // Over its memory budget: the optional caches shrink before the configuration is
  // refused (the refusal stands when it does not fit without them).
  PipelineOptions fitted;
  if (!FitOptions(options, &fitted)) return made;
  return CreateAsGiven(fitted);
}

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::CreateAsGiven(const PipelineOptions& options) {
  // 1. Check the options.
  if (absl::Status s = CheckPipelineOptions(options); !s.ok()) return s;
  // 2. Open the data sources.
  absl::StatusOr<DataSources> data = OpenData(options);
  if (!data.ok()) return data.status();
  // 3. Plan, with batches where the device options put them.
  absl::StatusOr<std::shared_ptr<DeviceMemory>> memory = BatchMemory(options);
  if (!memory.ok()) return memory.status();
  if ((*memory)->detail().empty()) {
    LogInfo(absl::StrCat("pipeline '", options.name, "': batches ",
                         (*memory)->location() == MemoryLocation::kHost ? "in " : "on ",
                         (*memory)->description()));
  } else {  // The host fallback: the runtime's reason only when asked for (--verbose).
    LogInfo(absl::StrCat("pipeline '", options.name, "': ", (*memory)->description()));
    LogDebug(absl::StrCat("pipeline '", options.name, "': no CUDA device because ",
                          (*memory)->detail()));
  }
  absl::StatusOr<Planned> planned = Plan(options, *data, **memory);
  if (!planned.ok()) return planned.status();
  // 4. Build the graph (PipelineGraph::Create checks the memory plan first) and start it.
  std::shared_ptr<PipelineStats> stats = StatsFor(options, *data, **memory, *planned);
  absl::StatusOr<std::unique_ptr<PipelineGraph>> graph =
      PipelineGraph::Create(planned->graph, data->dataset, data->sampler, *memory, stats);
  if (!graph.ok()) return graph.status();
  const int arena_workers = std::max(planned->graph.num_workers, planned->graph.max_workers);
  if ((*graph)->effective_threads() < arena_workers) {
    LogWarning(absl::StrCat("num_workers=", arena_workers, " but oneTBB grants ",
                            (*graph)->effective_threads(), " threads"));
  }
  std::unique_ptr<Pipeline> pipeline(new Pipeline(options, std::move(stats), *memory,
                                                  std::move(*graph),
                                                  data->sampler->samples_per_rank()));
  pipeline->dataset_ = data->dataset;
  pipeline->graph_->Start();
  if (planned->autotune.enabled) {
    pipeline->autotune_ = std::make_unique<AutotuneLoop>(pipeline->graph_.get(), pipeline->stats_,
                                                         planned->autotune.policy,
                                                         kAutotuneWindowSeconds);
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

int Pipeline::blocked_next_calls() const { return graph_->waiting_pops(); }

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
  if (dataset_ != nullptr && dataset_->storage() != nullptr) dataset_->storage()->Cancel();
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
