// pipeline_graph.h: the oneTBB flow graph that runs a pipeline.
//
// Wiring, all in PipelineGraph::Wire (pipeline_graph.cc; the diagram is in
// docs/architecture.md, "Data flow"): batch plans joined with free batch buffers → dispatch
// → the per-sample stages → collect → order (sequencer) → upload → deliver; the consumer's
// release returns the buffer. A batch plan enters only with a free buffer, so at most
// prefetch_batches batches are in flight and memory is fixed before the first sample: a
// slow consumer stalls the source, never grows a queue.
//
// The graph is built and runs inside a task_arena of num_workers threads, so the loader
// never takes more cores than asked.
//
// Thread-safety: Pop is called by one consumer thread at a time; Release and Stop may be
// called from any thread.
#ifndef FLOWLOADER_GRAPH_PIPELINE_GRAPH_H_
#define FLOWLOADER_GRAPH_PIPELINE_GRAPH_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/stage.h"
#include "graph/stage_stats.h"
#include "stages/collate/batch.h"
#include "stages/core/memory_plan.h"
#include "stages/reader/dataset.h"
#include "stages/reader/sampler.h"
#include "stages/upload/device_memory.h"

namespace flowloader {

// StageSpec is one per-sample stage of a pipeline: a registered type, its options, an
// instance name (the `stage` label in metrics; defaults to the type) and concurrency
// (0 = the type's default).
struct StageSpec {
  std::string type;
  std::string name;
  std::map<std::string, std::string> args;
  int concurrency = 0;
  // Where the stage was written ("spec.yaml:12:5"), prefixed to errors about it; empty
  // for a stage built in code.
  std::string where;
  // The per-sample fields bound to the type's declared ports (StageSchema::inputs and
  // outputs, in their order): a spec item's `inputs: [image]` / `outputs: [view0]`. Empty
  // = the ports' own names, which chain read → decode → augment.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  // Where each bound name was written, parallel to inputs/outputs (empty in code).
  std::vector<std::string> inputs_where;
  std::vector<std::string> outputs_where;
};

enum class ErrorPolicy {
  kSkip,  // Skip the sample, count it by reason, name it in the log.
  kFail,  // Stop the pipeline with a status naming the file and reason.
};

struct GraphOptions {
  // Per-sample stages in order; must include one that writes the batch slot (augment).
  std::vector<StageSpec> stages;
  // Batch stages in order (graph/batch_stage.h: a spec's `batch_ops:`), each run once per
  // collated batch, serially, after the sequencer and before upload. Their `inputs` and
  // `outputs` are unused (a batch stage sees the whole batch).
  std::vector<StageSpec> batch_stages;
  // Threads of the graph's arena, and the concurrency of CPU-heavy stages. In
  // [1, kMaxWorkers].
  int num_workers = 2;
  // kMaxWorkers bounds num_workers and max_workers: a thread each, far past any machine's
  // cores and below where thread creation starts failing in a default container.
  static constexpr int kMaxWorkers = 1024;
  // The most workers SetWorkers may allow (online autotune): the arena and the stages
  // that follow num_workers are built this wide, and num_workers is how many of them run
  // at first. 0 = num_workers (fixed); else >= num_workers.
  int max_workers = 0;
  // Samples per batch. >= 1.
  int batch_size = 64;
  // Batch buffers: the bound on batches in flight (and on memory). >= 1.
  int prefetch_batches = 3;
  // The most batch buffers SetPrefetchBatches may grow the pool to (online autotune);
  // each one added is allocated only when added, after the memory plan with it is
  // checked. 0 = prefetch_batches (fixed); else >= prefetch_batches.
  int max_prefetch_batches = 0;
  // Drop each epoch's last partial batch.
  bool drop_last = false;
  // Padded batches of images of different sizes (Detectron2's size_divisibility): -1
  // (default) off, every row one size; >= 0: the op list may make sizes that depend on
  // the image (up to its bound), and collate pads each image bottom and right with 0 to
  // the batch's largest height and width, rounded up to a multiple of this (0: not
  // rounded), recording each row's size (Batch::image_sizes). One batch tensor only.
  int size_divisibility = -1;
  // Deliver batches in sampler order (true) or as they complete (false).
  bool in_order = true;
  // Epochs to run; 0 = until Stop.
  int64_t epochs = 1;
  // Where to start (resume): the first batch delivered is batch number start_batch of
  // start_epoch, beginning at sample position start_sample of that epoch's order
  // (-1 = start_batch × batch_size, what a cursor of only EPOCH:BATCH means) and holding
  // start_batch_size samples (0 = batch_size; at most the pool's rows).
  int64_t start_epoch = 0;
  int64_t start_batch = 0;
  int64_t start_sample = -1;
  int start_batch_size = 0;
  // Seed of every per-sample random draw (crops, flips); the sampler has its own.
  uint64_t seed = 0;
  ErrorPolicy on_error = ErrorPolicy::kSkip;
  // Stop once more than this many samples failed; < 0 = no limit.
  int64_t max_errors = -1;
  // Stop once more than this fraction of processed samples failed (checked after 100
  // samples and at each epoch end); >= 1 = no limit.
  double max_error_fraction = 1.0;
  // File system for the read stage; nullptr = Env::Default(). Not owned.
  Env* env = nullptr;
  // Memory the graph may plan for (batch pool and the stages' declared parts); 0 = what
  // the process may use (resources.h AvailableMemory). Build refuses a plan above it.
  int64_t memory_limit_bytes = 0;
  // Under memory_limit_bytes, the most bytes the plan's sample room may take (the least
  // the workers may hold for one sample each, memory_planning.h SampleRoomPart); -1 = all
  // of it. Cut by Pipeline::Create when nothing else makes the plan fit.
  int64_t sample_room_bytes = -1;
  // What the data sources keep in memory (stages/reader/data_sources.h DataSources::
  // memory: the HTTP block cache, the sampler's order), planned after the stages' parts.
  std::vector<MemoryPart> source_memory;
};

class PipelineGraph {
 public:
  // Plan validates the options and creates the stages (last first; see StageEnv), as
  // Create does, and returns the memory plan Create would check against Budget and then
  // allocate, without allocating the batch buffers or building the graph.
  static absl::StatusOr<MemoryPlan> Plan(const GraphOptions& options, const Dataset& dataset,
                                         const Sampler& sampler, const DeviceMemory& memory);
  // Budget is what Create checks the plan against: what the process may use
  // (resources.h AvailableMemory), capped by options.memory_limit_bytes when that is set,
  // less what the process holds besides the plan when it is (PlanBudget).
  static MemoryBudget Budget(const GraphOptions& options);

  // Create validates the options, creates the stages (last first; see StageEnv), checks
  // the memory plan (Plan) against Budget, creates the batch buffers and wires the graph.
  // Nothing runs until Start.
  static absl::StatusOr<std::unique_ptr<PipelineGraph>> Create(
      const GraphOptions& options, std::shared_ptr<const Dataset> dataset,
      std::shared_ptr<const Sampler> sampler, std::shared_ptr<DeviceMemory> memory,
      std::shared_ptr<PipelineStats> stats);
  ~PipelineGraph();  // Stops and waits for the graph.

  // Start activates the source. Call once.
  void Start();

  // Popped is one result of Pop.
  struct Popped {
    // The next batch; nullptr when every sample of it was skipped (its skips are then
    // reported in the epoch's next batch's `skipped`) or when `done`. An epoch's last
    // batch is never dropped: when all its samples were skipped it has 0 rows and
    // carries the skips. Its
    // buffer goes back to the pool when the last copy is released (from any thread, at
    // any time, even after Stop or destruction of the graph).
    std::shared_ptr<const Batch> batch;
    // This was the last batch of its epoch (as completed, batches of the next epoch are
    // held back until this one is complete, so this is exact in both orders).
    bool ends_epoch = false;
    // Every configured epoch has been delivered; nothing else is set.
    bool done = false;
    // The popped batch's place, also when `batch` is nullptr: its epoch, its number
    // within the epoch and the epoch position just past its last sample (what a cursor
    // resumes from).
    int64_t epoch = 0;
    int64_t index = 0;
    int64_t end_position = 0;
  };

  // Pop blocks until the next batch is ready, or returns an error: the fatal error that
  // stopped the pipeline, or Cancelled after Stop.
  absl::Status Pop(Popped* out);
  // waiting_pops is how many Pop calls are now blocked waiting for a batch (for tests
  // that must act while a consumer waits, and for monitoring).
  int waiting_pops() const;

  // Stop stops the source, wakes Pop, cancels work in flight and waits for the graph.
  // Idempotent; returns promptly.
  void Stop();

  // SetBatchSize makes every batch the source plans from now on hold `batch_size`
  // samples (the epoch's last one fewer); batches already planned keep their size. The
  // pool is not reallocated: a size above its rows per buffer is InvalidArgument naming
  // the value and the knob, and changes nothing. Thread-safe.
  absl::Status SetBatchSize(int batch_size);
  // batch_size is the size the next planned batch gets.
  int batch_size() const;
  // pool_rows is the most samples a batch buffer holds: the largest batch_size allowed.
  int pool_rows() const;

  // SetWorkers changes how many sample bodies run at once, in [1, max_workers], without
  // rebuilding the graph: the arena was built max_workers wide and a gate in front of
  // each stage group admits `workers` (a cut takes effect as running bodies finish).
  // Out of range is InvalidArgument naming the value. Thread-safe.
  absl::Status SetWorkers(int workers);
  int workers() const;
  // SetPrefetchBatches grows or shrinks the batch pool toward `count` buffers, in
  // [1, max_prefetch_batches]. Growing checks the memory plan with each new buffer
  // against Budget before allocating it and stops, ResourceExhausted naming the bytes,
  // at the first that does not fit; shrinking frees buffers as the consumer releases
  // them, so no batch in flight is touched. Thread-safe.
  absl::Status SetPrefetchBatches(int count);
  // prefetch_batches is the pool size it is heading for (pending shrinks counted).
  int prefetch_batches() const;

  // output is the first batch tensor's per-sample shape; outputs lists every batch tensor
  // (a graph with several augment views has several), in Batch::tensors' order.
  const OutputSpec& output() const { return outputs_.front(); }
  const std::vector<OutputSpec>& outputs() const { return outputs_; }
  // label is the label tensor's shape (Batch::label): int64 [N] unless a batch stage
  // makes float32 [N, num_classes] soft targets.
  const LabelSpec& label() const { return label_; }
  // batches_per_epoch is the batches of an epoch at the current batch_size(): exact
  // until SetBatchSize; after a change, an estimate for the epoch under way.
  int64_t batches_per_epoch() const;
  const GraphOptions& options() const { return options_; }
  // effective_threads is the arena's concurrency as oneTBB granted it.
  int effective_threads() const;

 private:
  class Impl;
  explicit PipelineGraph(std::unique_ptr<Impl> impl, const GraphOptions& options,
                         std::vector<OutputSpec> outputs, LabelSpec label);
  std::unique_ptr<Impl> impl_;
  const GraphOptions options_;
  const std::vector<OutputSpec> outputs_;
  const LabelSpec label_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_PIPELINE_GRAPH_H_
