// pipeline.h: the embedding API. Create a pipeline, pull batches, stop, resume.
//
//   flowloader::PipelineOptions options;
//   options.data = "/data/imagenet/train";
//   options.batch_size = 256;
//   options.num_workers = 8;
//   auto pipeline = flowloader::Pipeline::Create(options);   // absl::StatusOr
//   if (!pipeline.ok()) { /* bad options or data: the status says which */ }
//   for (;;) {
//     std::shared_ptr<const flowloader::Batch> batch;
//     bool end_of_epoch = false;
//     absl::Status s = (*pipeline)->Next(&batch, &end_of_epoch);
//     if (!s.ok()) { /* fatal: names the file and the reason */ break; }
//     if (end_of_epoch) { if ((*pipeline)->done()) break; continue; }
//     train_step(batch->host_data(), batch->shape(), batch->labels);  // or device_data
//   }
//
// Batches arrive in sampler order; the pipeline keeps running across epochs without
// restarting threads. A batch's memory returns to the pool when the last shared_ptr to it
// is dropped; hold fewer than prefetch_batches at once, or Next waits for one of them.
//
// Thread-safety: Next is called from one thread at a time; Stop, Checkpoint and the
// accessors from any thread. Destroying the pipeline stops it, waiting for a Next that is
// blocked in another thread to return (with Cancelled).
#ifndef FLOWLOADER_RUNTIME_PIPELINE_H_
#define FLOWLOADER_RUNTIME_PIPELINE_H_

#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/pipeline_graph.h"
#include "graph/stage_stats.h"
#include "stages/augment/transform.h"
#include "stages/collate/batch.h"
#include "stages/core/memory_plan.h"
#include "stages/detection/coco.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/http_env.h"
#include "stages/reader/s3_options.h"
#include "stages/upload/device_memory.h"

namespace flowloader {

class DataChecksum;  // runtime/internal/data_checksum.h
class AutotuneLoop;  // runtime/internal/autotune_loop.h

// Cursor is a position to resume from: the next batch to deliver. With the same seed
// and options, a pipeline created with `resume` = Checkpoint() delivers exactly the
// samples the checkpointed one would have delivered next, in the same order, each
// byte-identical, grouped at the batch size in effect at the checkpoint.
struct Cursor {
  int64_t epoch = 0;
  // The next batch's number within the epoch (Batch::index).
  int64_t batch = 0;
  // Where the next batch begins in the epoch's sample order; -1 = batch × batch_size,
  // which is what a cursor written as EPOCH:BATCH means, and is exact for a run whose
  // batch size never changed.
  int64_t sample = -1;
  // The size of the batches from the cursor on (SetBatchSize's); 0 = the options'
  // batch_size. At most that batch_size (the pool's rows), else Create refuses it.
  int batch_size = 0;
};

// WeightedSource is one dataset of a mixture (PipelineOptions::sources).
struct WeightedSource {
  // The `source` label in metrics, the summary and --samples_out; unique, not empty.
  std::string name;
  // What PipelineOptions::data takes: an ImageFolder root, a list file or tar shards.
  std::string data;
  // Relative share of each epoch's samples; > 0. Default 1.
  double weight = 1.0;
};

struct PipelineOptions {
  // An ImageFolder root directory or a list file (`relative/path<TAB>label`), or
  // WebDataset tar shards: `DIR/train-{000000..000146}.tar`, a `.tar`, an http(s):// URL
  // (braces too), a directory of `.tar` files or a list of them (see
  // stages/reader/dataset.h). Required unless `sources` is set.
  std::string data;
  // A COCO instances file (`instances_train2017.json`): the samples are the images it
  // lists, under `data` (their directory), and the `annotations` stage writes their
  // detection targets (stages/detection/coco.h). Empty (default): no targets.
  std::string annotations;
  // With `annotations`: drop images without an instance (counted), instead of keeping
  // them with empty targets.
  bool skip_empty = false;
  // With tar-shard annotations (`annotations: .json`): a JSON file whose top-level
  // `categories` list maps category ids to labels (a COCO instances file, or the
  // OUT/categories.json `flowloader pack` writes); local, http(s):// or s3://. Empty
  // (default): the sorted category ids seen in the shards.
  std::string categories;
  // Semantic segmentation: PNG label maps paired with the images by key, a directory
  // (beside `data`, the images' directory) or a list file of `image label_map` lines
  // (Dataset::OpenLabelMaps); the `label_map` stage writes them as the field masks.
  // Empty (default): none.
  std::string label_maps;
  // Weighted sources instead of `data` (stages/reader/mixture_sampler.h): each epoch
  // draws every source's weight share of its samples, exactly, in a shuffled schedule;
  // each source goes through its own shuffled passes, every sample once per pass.
  // ImageFolder sources share one class map by class name; list files and tar shards
  // keep their label numbers. Empty = the single source `data`.
  std::vector<WeightedSource> sources;
  // An already-open dataset instead of `data` or `sources` (Dataset::OfSize for the
  // Python module's dataset=, whose read stage in `stages` fetches each sample); the
  // sampler, ranks, resume and skip accounting treat it as any other. Null (default) =
  // open `data` or `sources`.
  std::shared_ptr<const Dataset> dataset;
  // Samples per epoch (before sharding by rank); 0 = the sum of the sources' sizes (the
  // dataset's). Default 0.
  int64_t epoch_samples = 0;
  // Repeated augmentation (torchvision's/DeiT's RASampler, timm's --aug-repeats): each
  // epoch's order with every sample k times in a row, spread over ranks, each rank's
  // epoch cut to floor(n // 256 * 256 / world_size) (stages/reader/sampler.h); every copy
  // a different random view. >= 1; default 1 (off).
  int repeated_augment = 1;
  // Tar shards: the `.json` member's integer field holding the label; empty (default) =
  // the `.cls` member.
  std::string label_key;
  // Extra per-sample columns (Batch::columns): tar shards' member extensions to read as
  // strings ("txt", "json"), or a list file's `#columns:` to keep. Empty (default): none
  // from shards, every column of a list file (stages/reader/dataset.h).
  std::vector<std::string> columns;
  // Tar shards: the largest column member, bytes; a larger one is skipped as
  // column_too_large. >= 1. Default 64 KiB.
  int64_t column_max_bytes = 65536;
  // Tar shards over HTTP(S): timeouts, retries and backoff, and ca_file (the spec key
  // http_ca_file: a PEM bundle of CAs to trust for https://, checked at Create whatever
  // the data) (stages/reader/http_env.h). Its cache_bytes is not read: http_cache_mb sets it.
  HttpOptions http;
  // s3:// data: endpoint, region, profile, addressing, anonymous (spec keys s3_*;
  // stages/reader/s3_env.h). Credentials come from the AWS variables and profile files.
  S3Options s3;
  // Tar shards over HTTP(S): MiB of whole shards, admitted in listing order while they
  // fit, whose reads are served from 1 MiB blocks kept in memory (one request per block
  // instead of one per member; counted in the memory plan as `http_cache`); shards past
  // it are read one request per member. >= 0; 0 = off. Default 256.
  int64_t http_cache_mb = 256;
  // Remote data (s3://, http(s)://): the on-disk cache keeping whole objects and 1 MiB
  // blocks of shards across epochs and runs, in DIR/flowloader-cache; processes naming
  // the same directory (ranks on one machine) share it. Empty (default) = no disk cache
  // (stages/reader/disk_cache_env.h). With it, http_cache_mb admits nothing.
  std::string cache_dir;
  // Most bytes the disk cache may hold (least recently used removed past it); >= 1.
  // Default 10 GiB.
  int64_t cache_bytes = int64_t{10} << 30;
  // The `pipeline` label in metrics; several pipelines in a process need distinct names.
  std::string name = "default";
  // Samples per batch; >= 1. Default 64.
  int batch_size = 64;
  // kAuto for num_workers or prefetch_batches: the online autotuner sets it while the
  // pipeline runs (docs/tuning.md): the fewest workers and buffers that keep Next
  // waiting under 5% of the time, within cpu_budget and ram_budget_bytes.
  static constexpr int kAuto = 0;
  // Threads, and the concurrency of decode/augment; >= 1, or kAuto. Default kAuto: it
  // starts at 1 and grows while Next waits and a CPU of cpu_budget is free.
  int num_workers = kAuto;
  // Batch buffers, the bound on batches in flight (memory = prefetch_batches × batch
  // bytes; 38.5 MB each at batch 64 × 3×224² float32); >= 1, or kAuto. Default kAuto: it
  // starts at 2 and grows only within ram_budget_bytes.
  int prefetch_batches = kAuto;
  // CPUs the autotuner may give the workers (num_workers: auto grows to at most this);
  // 0 = what the process may use (affinity mask ∩ cgroup quota). Default 0.
  int cpu_budget = 0;
  // Host memory the autotuner's buffers may bring the process to, in bytes (prefetch_
  // batches: auto adds a buffer only while the memory plan with it, plus what the process
  // already holds, fits); 0 = half of what the process may use. Default 0.
  int64_t ram_budget_bytes = 0;
  // Epochs to deliver; 0 = until Stop. Default 1.
  int64_t epochs = 1;
  // Seeds the shuffle and every random crop/flip. Default 0.
  uint64_t seed = 0;
  // Shuffle each epoch (a different order per epoch, the same per seed). Default true.
  bool shuffle = true;
  // Drop each epoch's last partial batch. Default false.
  bool drop_last = false;
  // Padded batches of images of different sizes (GraphOptions::size_divisibility): -1
  // (default) off; >= 0 pads each batch's images to its largest height and width rounded
  // up to a multiple of this (0: not rounded), recording each row's size.
  int size_divisibility = -1;
  // Sharding across ranks (each gets the same number of samples per epoch), as
  // torch.utils.data.DistributedSampler shards: rank r takes positions r, r + world_size,
  // ... of the epoch's order. ShardFromEnvironment() (runtime/shard_env.h) reads them
  // from torchrun's or Slurm's variables.
  int rank = 0;
  int world_size = 1;
  // How shards are made equal when world_size does not divide the dataset: "pad"
  // repeats the epoch's first samples (DistributedSampler's default), "trim" drops the
  // tail (DistributedSampler(drop_last=True)). Default "pad".
  std::string even_shards = "pad";
  // Built-in stages (used when `stages` is empty): "train" = RandomResizedCrop +
  // horizontal flip + ImageNet Normalize; "eval" = Resize(image_size*256/224) +
  // CenterCrop + Normalize.
  std::string transform = augment::ModeName(augment::Mode::kTrain);
  // Output side in pixels; > 0. Default 224.
  int image_size = 224;
  // "float_chw" (normalized float32 [N,3,H,W]) or "uint8_hwc" (raw [N,H,W,3]).
  std::string layout = augment::LayoutName(augment::Layout::kFloatCHW);
  // Custom per-sample stages; empty means read → decode → augment configured from the
  // fields above. See graph/stage.h for registering your own stage types.
  std::vector<StageSpec> stages;
  // Batch stages (a spec's `batch_ops:`; graph/batch_stage.h), run in order on each
  // collated batch: mixup_cutmix, label_smoothing, mosaic, copy_paste, or a registered
  // type. Empty = none.
  std::vector<StageSpec> batch_ops;
  // skip (count, name and drop bad samples) or fail (stop with the file and reason).
  ErrorPolicy on_error = ErrorPolicy::kSkip;
  // Stop once more than this many samples failed; < 0 = no limit. Default -1.
  int64_t max_errors = -1;
  // Stop once more than this fraction of samples failed; >= 1 = no limit. Default 1.
  double max_error_fraction = 1.0;
  // Deliver in sampler order (default) or as batches complete.
  bool in_order = true;
  // Where batches go: auto (CUDA device if present, else host, logged), cpu or cuda.
  DeviceChoice device = DeviceChoice::kAuto;
  bool pin_memory = true;
  // Memory the pipeline may plan for, in MiB (batch pool, seek index, decode scratch;
  // stats()->memory_plan has the parts); 0 = what the process may use (MemAvailable and
  // the cgroup memory limit). Create refuses a plan above it with the bytes and the knobs
  // to lower. Default 0.
  int64_t memory_limit_mb = 0;
  // Under memory_limit_mb, the most MiB the plan's sample room (what the workers may hold
  // for one sample each, at least 32 MiB a worker less its planned decode memory) may
  // take; -1 = all of it. Create cuts it, after the seek index and prefetch_batches, when
  // the plan does not fit otherwise (samples that need more are then skipped, counted).
  int64_t sample_room_mb = -1;
  // Record the first trace_spans per-stage spans for a Chrome/Perfetto trace (see
  // stats()->trace); 0 = off. Each span is 32 bytes, allocated up front.
  size_t trace_spans = 0;
  // Resume position (see Cursor).
  Cursor resume;
  // Hash every delivered batch (each row's tensor bytes, then its label) in delivery
  // order: data_checksum() and epoch_checksums(). Costs one XXH3 pass over each batch
  // on the consumer's thread. Default false.
  bool checksum = false;
  // File system; nullptr = the real one. Not owned; must outlive the pipeline.
  Env* env = nullptr;
};

class Pipeline {
 public:
  // Create validates everything (options, dataset listing, stage options), allocates the
  // batch buffers and starts prefetching. Errors say what is wrong in one line.
  // A configuration over its memory budget is made with its optional caches shrunk
  // (FitOptionalMemory, logged) before it is refused.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(const PipelineOptions& options);
  ~Pipeline();

  // PlanMemory opens the dataset and creates the stages exactly as Create does, and
  // returns the memory plan Create checks before allocating (the batch pool, decode's seek
  // index budget and per-worker scratch, the device buffers where batches go to a device),
  // without allocating the batch buffers or starting anything. Errors are Create's.
  // A configuration over its budget is planned as Create makes it: with the optional
  // caches shrunk (FitOptionalMemory).
  static absl::StatusOr<MemoryPlan> PlanMemory(const PipelineOptions& options);
  // PlanMemoryAsGiven is PlanMemory without shrinking anything.
  static absl::StatusOr<MemoryPlan> PlanMemoryAsGiven(const PipelineOptions& options);
  // MemoryBudgetFor is what Create checks that plan against: what the process may use
  // (MemAvailable, the cgroup limit), capped by memory_limit_mb when set (less the 48 MiB
  // the process holds itself besides the plan: the limit is the whole process's).
  static MemoryBudget MemoryBudgetFor(const PipelineOptions& options);

  // Next sets *batch to the next batch, or sets *end_of_epoch (and leaves *batch null)
  // once after the last batch of each epoch. After the last configured epoch, every call
  // reports end_of_epoch and done() is true. A non-OK status is fatal (a file under
  // on_error=fail, too many errors, a device error) or Cancelled after Stop.
  absl::Status Next(std::shared_ptr<const Batch>* batch, bool* end_of_epoch);

  // Stop ends the pipeline promptly, even mid-epoch; a blocked Next returns Cancelled.
  // Destroying the Pipeline stops it the same way and waits until a Next blocked in
  // another thread has returned; a Next called once destruction has begun is a use
  // after free, as for any object (the caller must order its calls before that).
  void Stop();
  // blocked_next_calls is how many Next calls are now blocked waiting for a batch (for
  // tests that must destroy or stop while a consumer waits, and for monitoring).
  int blocked_next_calls() const;

  // done reports whether every configured epoch has been delivered.
  bool done() const;
  // Checkpoint returns the position of the next batch Next would deliver: its epoch, its
  // number, its first sample's position and the batch size from there on.
  Cursor Checkpoint() const;

  // SetBatchSize changes the batch size from the next batch the source plans (the
  // batches already planned, at most prefetch_batches + 1, keep theirs), e.g. to retry
  // with half the batch after the training step ran out of device memory. Every sample
  // of the epoch is still delivered exactly once, in the same order, byte-identical, and
  // Checkpoint() stays exact. With drop_last, an epoch ends once fewer samples are left
  // than the batch size in effect when a batch is planned (so shrinking drops less; a
  // size grown after that point can leave one last, partial batch). The batch pool is
  // never reallocated: a size above options().batch_size (its rows per buffer) or below
  // 1 is InvalidArgument, naming the value and the knob, and changes nothing.
  // Thread-safe.
  absl::Status SetBatchSize(int batch_size);
  // batch_size is the size the next planned batch gets.
  int batch_size() const { return graph_->batch_size(); }

  // data_checksum is "xxh3:XXXXXXXXXXXXXXXX" over every batch delivered so far (each
  // row's tensor bytes' hash, then its label), in delivery order, so it
  // depends on the samples and their order, not on num_workers or how they were grouped
  // into batches; "" unless options.checksum. A resumed run's covers what it delivered:
  // compare epochs it delivered whole with epoch_checksums().
  std::string data_checksum() const;
  // epoch_checksums is data_checksum per epoch, for the epochs this pipeline delivered
  // (a resumed run's first one only from the cursor on), in epoch order.
  std::vector<std::pair<int64_t, std::string>> epoch_checksums() const;

  const std::shared_ptr<PipelineStats>& stats() const { return stats_; }
  // batches_per_epoch is an epoch's batches at the current batch_size(): exact while the
  // batch size is unchanged; after SetBatchSize, an estimate for the epoch under way.
  int64_t batches_per_epoch() const { return graph_->batches_per_epoch(); }
  int64_t samples_per_epoch() const { return samples_per_epoch_; }
  // annotations is the COCO file of `annotations` (its category → label map in
  // categories(), its skips by reason in skipped()), or nullptr without one.
  const detection::CocoDataset* annotations() const {
    return dataset_ != nullptr ? dataset_->annotations() : nullptr;
  }
  // source_names are the sources by number (Batch::sources): "default" for `data`.
  const std::vector<std::string>& source_names() const { return stats_->source_names; }
  // memory_description says where batches live and, for the host fallback, why.
  const std::string& memory_description() const { return memory_->description(); }
  const OutputSpec& output() const { return graph_->output(); }
  // outputs lists every batch tensor's name and per-sample shape (Batch::tensors' order).
  const std::vector<OutputSpec>& outputs() const { return graph_->outputs(); }
  // label is the label tensor's shape (Batch::label): int64 [N], or float32 [N, C].
  const LabelSpec& label() const { return graph_->label(); }
  const PipelineOptions& options() const { return options_; }
  // storage routes the data's paths by scheme (stages/reader/storage_env.h): where remote
  // requests go, whose credentials sign them, requests and retries; nullptr without one.
  const StorageEnv* storage() const { return dataset_ != nullptr ? dataset_->storage() : nullptr; }
  // dataset is what the pipeline reads (its shards, their index counts); nullptr for a
  // pipeline made without one.
  const Dataset* dataset() const { return dataset_.get(); }
  int effective_threads() const { return graph_->effective_threads(); }
  // num_workers / prefetch_batches are the values in effect now: the autotuner's
  // current choice for a knob that is auto, else the option.
  int num_workers() const { return graph_->workers(); }
  int prefetch_batches() const { return graph_->prefetch_batches(); }

 private:
  Pipeline(const PipelineOptions& options, std::shared_ptr<PipelineStats> stats,
           std::shared_ptr<DeviceMemory> memory, std::unique_ptr<PipelineGraph> graph,
           int64_t samples_per_epoch);

  const PipelineOptions options_;
  const std::shared_ptr<PipelineStats> stats_;
  const std::shared_ptr<DeviceMemory> memory_;
  const std::unique_ptr<PipelineGraph> graph_;
  const int64_t samples_per_epoch_;
  // The autotuner's thread when a knob is auto, else nullptr; set once by Create.
  std::unique_ptr<AutotuneLoop> autotune_;
  // The dataset the graph reads, kept so Stop can cancel its HTTP reads in flight (a
  // worker inside a transfer would otherwise hold Stop until the network lets go); set
  // once by Create.
  std::shared_ptr<const Dataset> dataset_;

  // std::mutex rather than absl::Mutex throughout: Debian's Abseil is not built for
  // ThreadSanitizer, which then cannot see its locking.
  mutable std::mutex mu_;
  std::condition_variable no_active_next_;
  int active_next_calls_ ABSL_GUARDED_BY(mu_) = 0;
  bool pending_end_of_epoch_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  Cursor cursor_ ABSL_GUARDED_BY(mu_);
  // Extended by Next when options_.checksum (null otherwise), under its own mutex so a
  // batch being hashed never delays Checkpoint or Stop.
  mutable std::mutex checksum_mu_;
  const std::unique_ptr<DataChecksum> checksum_ ABSL_PT_GUARDED_BY(checksum_mu_);

  // CreateAsGiven is Create without shrinking anything.
  static absl::StatusOr<std::unique_ptr<Pipeline>> CreateAsGiven(const PipelineOptions& options);

  void AdvanceCursorLocked(const PipelineGraph::Popped& popped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

// DefaultStages returns read → decode → augment configured from `options`.
absl::StatusOr<std::vector<StageSpec>> DefaultStages(const PipelineOptions& options);

// FitOptionalMemory shrinks the optional caches of the memory plan (decode's seek index:
// it only speeds up later epochs) until `fits` accepts the options: the options unchanged
// when they fit, the original ResourceExhausted when they do not fit even without the
// caches. `fits` returns ResourceExhausted for "over budget". Create and PlanMemory use it
// with the run's budget (memory_limit_mb, what the process may use, the autotuner's
// ram_budget); `flowloader tune` with its ram_budget. *note says what was shrunk.
absl::StatusOr<PipelineOptions> FitOptionalMemory(
    const PipelineOptions& options, const std::function<absl::Status(const PipelineOptions&)>& fits,
    std::string* note = nullptr);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_PIPELINE_H_
