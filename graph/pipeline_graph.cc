#include "graph/pipeline_graph.h"

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <condition_variable>
#include <algorithm>
#include <deque>
#include <exception>
#include <mutex>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/internal/graph_plan.h"
#include "graph/internal/memory_planning.h"
#include "graph/internal/parallelism.h"
#include "graph/internal/token_pool.h"
#include "stages/collate/pad_images.h"
#include "stages/core/log.h"
#include "stages/core/sample_error.h"

namespace flowloader {
namespace {

namespace flow = tbb::flow;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// BatchPlan is what the source emits: which batch to fill next. The source alone decides
// where batches begin and end and which one ends its epoch, so a batch size changed
// mid-run (SetBatchSize) moves only batches not yet planned.
struct BatchPlan {
  int64_t epoch = 0;
  int64_t index = 0;     // Batch number within the epoch.
  int64_t begin = 0;     // Its positions [begin, end) in the epoch's sample order.
  int64_t end = 0;
  bool last_of_epoch = false;
  int64_t sequence = 0;  // Delivery order across epochs.
};

BatchToken* TokenOf(SampleContext* s) { return static_cast<BatchToken*>(s->owner); }

// MaxWorkers / MaxBuffers are the autotuner's ceilings; without one the value is fixed.
int MaxWorkers(const GraphOptions& o) { return o.max_workers > 0 ? o.max_workers : o.num_workers; }
int MaxBuffers(const GraphOptions& o) {
  return o.max_prefetch_batches > 0 ? o.max_prefetch_batches : o.prefetch_batches;
}

// CheckAutotuneRanges refuses a ceiling below the value it bounds.
absl::Status CheckAutotuneRanges(const GraphOptions& o) {
  if (o.max_workers != 0 && o.max_workers < o.num_workers) {
    return absl::InvalidArgumentError(absl::StrCat("max_workers ", o.max_workers,
                                                   " is below num_workers ", o.num_workers));
  }
  if (o.max_prefetch_batches != 0 && o.max_prefetch_batches < o.prefetch_batches) {
    return absl::InvalidArgumentError(absl::StrCat("max_prefetch_batches ", o.max_prefetch_batches,
                                                   " is below prefetch_batches ",
                                                   o.prefetch_batches));
  }
  return absl::OkStatus();
}

}  // namespace

class PipelineGraph::Impl {
 public:
  using SampleNode = flow::function_node<SampleContext*, SampleContext*>;

  Impl(const GraphOptions& options, std::shared_ptr<const Dataset> dataset,
       std::shared_ptr<const Sampler> sampler, std::shared_ptr<DeviceMemory> memory,
       std::shared_ptr<PipelineStats> stats)
      : options_(options),
        dataset_(std::move(dataset)),
        sampler_(std::move(sampler)),
        memory_(std::move(memory)),
        stats_(std::move(stats)),
        parallelism_(MaxWorkers(options)),
        arena_(MaxWorkers(options), /*reserved_for_masters=*/0),
        max_workers_(MaxWorkers(options)),
        max_buffers_(MaxBuffers(options)),
        workers_(options.num_workers) {}

  ~Impl() {
    Stop();
    // Nodes and the graph are destroyed inside the arena they were built in.
    arena_.execute([this] {
      nodes_.clear();
      graph_.reset();
    });
  }

  // Build allocates the batch pool the plan sized and wires the graph from its stages.
  absl::Status Build(graph_internal::GraphPlan plan);
  void Start();
  absl::Status Pop(Popped* out);
  absl::Status SetBatchSize(int batch_size);
  int batch_size() const { return batch_size_.load(std::memory_order_relaxed); }
  int pool_rows() const { return pool_rows_; }
  int64_t batches_per_epoch() const {
    return NumBatches(samples_per_epoch_, batch_size(), options_.drop_last);
  }
  void Stop();
  int effective_threads() { return arena_.max_concurrency(); }
  absl::Status SetWorkers(int workers);
  int workers() const { return workers_.load(std::memory_order_relaxed); }
  absl::Status SetPrefetchBatches(int count);
  int prefetch_batches() const { return pool_->Count(); }
  int waiting_pops() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_pops_;
  }

 private:
  // BatchRunner is one batch stage (graph/batch_stage.h) with its statistics row.
  struct BatchRunner {
    std::unique_ptr<BatchStage> stage;
    StageStats* stats = nullptr;
    EdgeStats* in_edge = nullptr;  // Batches waiting for it.
  };

  struct StageRunner {
    std::unique_ptr<SampleStage> stage;
    StageStats* stats = nullptr;
    int concurrency = 1;
    int32_t trace_index = -1;  // Position of `stats` in PipelineStats::stages().
  };

  // NodeGroup is a run of consecutive stages with the same concurrency, executed by one
  // function_node: a sample goes through all of them on one thread, while its bytes and
  // pixels are still in cache. It also keeps the number of oneTBB tasks per node within
  // the node's concurrency: with one node per stage, spawned-but-waiting tasks sit in a
  // busy worker's LIFO deque and the oldest samples starve (measured: a batch delivered
  // ten batches late with 2 workers).
  struct NodeGroup {
    std::vector<StageRunner*> runners;
    int concurrency = 1;
    EdgeStats* in_edge = nullptr;  // The queue in front of the group's node.
    // Admits SetWorkers' count of bodies when the group's concurrency follows
    // num_workers; nullptr for a group of fixed concurrency.
    std::unique_ptr<ConcurrencyGate> gate;
  };

  // Trace records a span when tracing is on.
  void Trace(const StageStats* stage, int64_t start, int64_t duration, int64_t item) {
    if (stats_->trace != nullptr) {
      stats_->trace->Record(stats_->StageIndex(stage), start, duration, item);
    }
  }

  void RegisterStages(std::vector<graph_internal::PlannedStage> stages,
                      std::vector<graph_internal::PlannedBatchStage> batch_stages);
  bool FollowsNumWorkers(size_t stage) const;
  MemoryPlan PlanForBuffers(int count) const;
  void Wire();
  bool NextPlan(BatchPlan* plan);
  bool EndsEpoch(int64_t end, int64_t batch_size) const;
  bool EpochDeliveredLocked(const BatchToken& token);
  void Dispatch(const BatchPlan& plan, BatchToken* token,
                flow::multifunction_node<std::tuple<BatchPlan, BatchToken*>,
                                         std::tuple<SampleContext*>>::output_ports_type& out);
  void AnnounceAhead(const BatchPlan& plan);
  void AnnounceOne(int64_t epoch, int64_t position, int64_t index, bool due_now) const;
  void SetOutputSlots(void* buffer, int slot, SampleContext& s) const;
  void PadRows(BatchToken* token);
  void FillTensors(BatchToken* token);
  void FillLabel(BatchToken* token);
  SampleContext* RunGroup(NodeGroup& group, EdgeStats* out_edge, SampleContext* s);
  void RunStage(StageRunner& runner, SampleContext* s);
  void Collect(BatchToken* token);
  bool LabelInRange(SampleContext& s);
  BatchToken* RunBatchStages(BatchToken* token);
  void RunBatchStage(BatchRunner& runner, BatchToken* token);
  absl::Status UploadTensors(BatchToken* token, size_t* bytes);
  BatchToken* Upload(BatchToken* token);
  void Deliver(BatchToken* token);
  void ApplyErrorPolicy(BatchToken* token, int64_t failed_in_batch, SampleContext* first_failed,
                        SampleContext* last_failed);
  void LogFirstSkips(const std::vector<SkippedSample>& skipped);
  void CountEpochSkips(const BatchToken& token, bool ends_epoch);
  // CountStageErrors adds the token's skipped samples to their stages' error counts.
  static void CountStageErrors(const BatchToken& token);
  void Fail(absl::Status status);

  const GraphOptions options_;
  const std::shared_ptr<const Dataset> dataset_;
  const std::shared_ptr<const Sampler> sampler_;
  const std::shared_ptr<DeviceMemory> memory_;
  const std::shared_ptr<PipelineStats> stats_;
  ScopedParallelism parallelism_;  // Lets oneTBB run num_workers worker threads.
  tbb::task_arena arena_;
  // The autotuner's ranges, constant after construction: the arena is max_workers_ wide;
  // the pool grows to at most max_buffers_.
  const int max_workers_;
  const int max_buffers_;
  std::atomic<int> workers_;
  // What PlanForBuffers needs, constant after Build: the pool's rows, the stages'
  // declared memory, where the buffers live.
  int planned_rows_ = 0;
  std::vector<MemoryPart> stage_memory_;
  // What a worker may hold for one sample (the stages check it): its share of the
  // budget the plan leaves, recomputed when the pool grows or shrinks.
  std::shared_ptr<WorkerMemory> worker_memory_;
  std::mutex resize_mu_;  // One pool resize at a time.

  std::vector<OutputSpec> outputs_;   // Every batch tensor, in the plan's order.
  std::vector<TensorRegion> regions_;  // Their parts of each batch buffer.
  LabelSpec label_;                    // The label tensor's shape (constant after Build).
  bool repeats_ = false;               // The sampler repeats samples (Batch::copies).
  TensorRegion label_region_;          // Its part of each batch buffer, after the tensors.
  std::vector<StageRunner> runners_;
  std::vector<NodeGroup> groups_;
  std::vector<BatchRunner> batch_runners_;  // In list order; run serially after collate.
  std::shared_ptr<TokenPool> pool_;
  StageStats* source_stats_ = nullptr;
  StageStats* collate_stats_ = nullptr;
  StageStats* upload_stats_ = nullptr;
  EdgeStats* collate_edge_ = nullptr;   // Samples waiting for collect.
  EdgeStats* upload_edge_ = nullptr;    // Batches waiting for order/upload.
  EdgeStats* collated_edge_ = nullptr;  // Where collect puts batches: the first batch
                                        // stage's queue, else upload_edge_.
  EdgeStats* consumer_edge_ = nullptr;  // Batches ready for Next().

  // The graph and its nodes; built in Wire, inside the arena.
  std::unique_ptr<flow::graph> graph_;
  std::vector<std::shared_ptr<void>> nodes_;
  flow::buffer_node<BatchToken*>* free_tokens_ = nullptr;
  flow::input_node<BatchPlan>* source_ = nullptr;

  // Source state: touched only by the input_node body (oneTBB runs it serially).
  int64_t next_epoch_ = 0;
  int64_t next_batch_ = 0;
  int64_t next_position_ = 0;  // Where the next batch begins in its epoch's order.
  int64_t next_sequence_ = 0;
  int64_t samples_per_epoch_ = 0;  // Constant after Build.
  int pool_rows_ = 0;              // Constant after Build: the largest batch allowed.
  // The size of the next batch the source plans: set by SetBatchSize from any thread.
  std::atomic<int> batch_size_{0};
  // Dispatch state (serial node).
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
  // Read-ahead (AnnounceAhead): the stages that want to hear of samples before they are
  // dispatched (the read stage of remote data), how far ahead, the next sample to
  // announce, and the next epoch's order once announcing has reached into it.
  std::vector<const SampleStage*> announcers_;
  int64_t announce_window_ = 0;
  int64_t announce_epoch_ = -1;
  int64_t announce_position_ = 0;
  int64_t next_order_epoch_ = -1;
  std::vector<int64_t> next_order_;

  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> processed_{0};
  std::atomic<int64_t> failed_{0};
  // Blocked-on-buffers accounting for the source.
  std::atomic<int> free_count_{0};
  std::atomic<int64_t> empty_since_{0};

  // The consumer queue.
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<BatchToken*> queue_;
  absl::Status fatal_;
  bool stopped_ = false;
  int waiting_pops_ = 0;            // Pops inside ready_'s wait.
  int64_t delivered_sequence_ = 0;  // Batches popped so far.
  int64_t delivering_epoch_ = 0;    // The epoch Pop is delivering.
  int64_t delivered_in_epoch_ = 0;  // Batches of it popped so far.
  int64_t epoch_first_index_ = 0;   // Its first batch's number (start_batch on resume).
  int64_t epoch_last_index_ = -1;   // Its last batch's number once popped; -1 before.
  std::vector<SkippedSample> carried_skips_;  // From empty batches, for the next one.
  std::vector<StageStats*> carried_stages_;  // The stage that failed each of them.
  int64_t skipped_in_epoch_ = 0;    // Skips delivered in the epoch being delivered.

  // Dataset indexes of the skipped samples already logged (each is logged once a run).
  std::mutex log_mu_;
  std::set<int64_t> logged_skips_ ABSL_GUARDED_BY(log_mu_);
};

// RegisterStages takes the planned stages, groups consecutive ones of equal concurrency
// into one node each, and registers their stats and edges in flow order.
void PipelineGraph::Impl::RegisterStages(
    std::vector<graph_internal::PlannedStage> stages,
    std::vector<graph_internal::PlannedBatchStage> batch_stages) {
  const int64_t sample_capacity =
      static_cast<int64_t>(options_.prefetch_batches) * options_.batch_size;
  source_stats_ = stats_->AddStage("source", 1);
  stats_->counts_skips.store(true);  // The summary's errors by reason: CountEpochSkips.
  std::string previous = "source";
  runners_.resize(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    StageRunner& runner = runners_[i];
    runner.stage = std::move(stages[i].stage);
    runner.concurrency = stages[i].concurrency;
    const std::string& name = stages[i].name;
    if (groups_.empty() || groups_.back().concurrency != runner.concurrency) {
      groups_.push_back(NodeGroup{{}, runner.concurrency,
                                  stats_->AddEdge(previous, name, sample_capacity)});
    }
    groups_.back().runners.push_back(&runner);
    if (groups_.back().runners.size() == 1) {
      if (FollowsNumWorkers(i)) groups_.back().gate = std::make_unique<ConcurrencyGate>(workers());
    } else if (!FollowsNumWorkers(i)) {
      groups_.back().gate.reset();  // A fixed-concurrency stage shares the node: no gate.
    }
    runner.stats = stats_->AddStage(name, runner.concurrency);
    runner.stats->set_op_costs(runner.stage->OpCosts());  // Per-op rows (transforms).
    runner.trace_index = static_cast<int32_t>(stats_->stages().size()) - 1;
    previous = name;
  }
  for (const NodeGroup& group : groups_) {
    if (group.runners.size() < 2) continue;
    std::string group_name;
    for (const StageRunner* r : group.runners) {
      group_name += (group_name.empty() ? "" : "+") + r->stats->name();
    }
    for (StageRunner* r : group.runners) r->stats->set_worker_group(group_name);
  }
  collate_edge_ = stats_->AddEdge(previous, "collate", sample_capacity);
  collate_stats_ = stats_->AddStage("collate", 1);
  // Batch stages: one statistics row each, serial, between collate and upload.
  previous = "collate";
  for (graph_internal::PlannedBatchStage& planned : batch_stages) {
    BatchRunner runner;
    runner.stage = std::move(planned.stage);
    runner.in_edge = stats_->AddEdge(previous, planned.name, options_.prefetch_batches);
    runner.stats = stats_->AddStage(planned.name, 1);
    previous = planned.name;
    batch_runners_.push_back(std::move(runner));
  }
  upload_edge_ = stats_->AddEdge(previous, "upload", options_.prefetch_batches);
  collated_edge_ = batch_runners_.empty() ? upload_edge_ : batch_runners_.front().in_edge;
  upload_stats_ = stats_->AddStage("upload", 1);
  upload_stats_->set_kind(StageKind::kTransfer);
  consumer_edge_ = stats_->AddEdge("upload", "consumer", options_.prefetch_batches);
}

absl::Status PipelineGraph::Impl::Build(graph_internal::GraphPlan plan) {
  outputs_ = plan.outputs;
  regions_ = LayOutTensors(outputs_, plan.pool_rows);
  label_ = plan.label;
  repeats_ = sampler_->repeated_augment() > 1;
  label_region_ = LabelRegion(regions_, label_, plan.pool_rows);
  samples_per_epoch_ = sampler_->samples_per_rank();
  pool_rows_ = plan.pool_rows;
  batch_size_.store(plan.start_batch_size);
  next_epoch_ = options_.start_epoch;
  delivering_epoch_ = options_.start_epoch;
  next_batch_ = options_.start_batch;
  next_position_ = plan.start_sample;
  epoch_first_index_ = options_.start_batch;
  planned_rows_ = plan.pool_rows;
  worker_memory_ = plan.worker_memory;
  for (const MemoryPart& part : plan.memory.parts()) {
    if (part.key != "batch_pool" && part.key != "batch_labels" && part.key != "device_batches") {
      stage_memory_.push_back(part);
    }
  }
  RegisterStages(std::move(plan.stages), std::move(plan.batch_stages));
  for (const StageRunner& runner : runners_) {
    const int64_t window = runner.stage->AnnounceWindow();
    if (window <= 0) continue;
    announcers_.push_back(runner.stage.get());
    announce_window_ = std::max(announce_window_, window);
  }

  const size_t buffer_bytes = label_region_.offset + label_region_.bytes;
  absl::StatusOr<std::shared_ptr<TokenPool>> pool = TokenPool::Create(
      memory_, options_.prefetch_batches, buffer_bytes, plan.pool_rows, stats_);
  if (!pool.ok()) return pool.status();
  pool_ = std::move(*pool);

  arena_.execute([this] { Wire(); });
  return absl::OkStatus();
}

void PipelineGraph::Impl::Wire() {
  graph_ = std::make_unique<flow::graph>();
  flow::graph& g = *graph_;
  auto keep = [this](auto node) {
    auto* raw = node.get();
    nodes_.push_back(std::move(node));
    return raw;
  };

  free_tokens_ = keep(std::make_shared<flow::buffer_node<BatchToken*>>(g));
  source_ = keep(std::make_shared<flow::input_node<BatchPlan>>(
      g, [this](tbb::flow_control& fc) {
        BatchPlan plan;
        if (!NextPlan(&plan)) fc.stop();
        return plan;
      }));
  auto* join = keep(std::make_shared<
                    flow::join_node<std::tuple<BatchPlan, BatchToken*>, flow::reserving>>(g));
  using DispatchNode =
      flow::multifunction_node<std::tuple<BatchPlan, BatchToken*>, std::tuple<SampleContext*>>;
  auto* dispatch = keep(std::make_shared<DispatchNode>(
      g, flow::serial,
      [this](const std::tuple<BatchPlan, BatchToken*>& in, DispatchNode::output_ports_type& out) {
        Dispatch(std::get<0>(in), std::get<1>(in), out);
      }));

  std::vector<SampleNode*> stage_nodes;
  for (size_t i = 0; i < groups_.size(); ++i) {
    EdgeStats* out_edge = i + 1 < groups_.size() ? groups_[i + 1].in_edge : collate_edge_;
    NodeGroup* group = &groups_[i];
    stage_nodes.push_back(keep(std::make_shared<SampleNode>(
        g, static_cast<size_t>(group->concurrency),
        [this, group, out_edge](SampleContext* s) { return RunGroup(*group, out_edge, s); })));
  }

  using CollectNode = flow::multifunction_node<SampleContext*, std::tuple<BatchToken*>>;
  // Unlimited: each call is a decrement; only the batch's last sample does real work.
  auto* collect = keep(std::make_shared<CollectNode>(
      g, flow::unlimited, [this](SampleContext* s, CollectNode::output_ports_type& out) {
        collate_edge_->depth.fetch_sub(1, std::memory_order_relaxed);
        BatchToken* token = TokenOf(s);
        if (token->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        Collect(token);
        collated_edge_->depth.fetch_add(1, std::memory_order_relaxed);
        std::get<0>(out).try_put(token);
      }));
  auto* upload = keep(std::make_shared<flow::function_node<BatchToken*, BatchToken*>>(
      g, flow::serial, [this](BatchToken* t) { return Upload(t); }));
  // The batch stages, when there are any: one serial node in front of upload, after the
  // sequencer, so they see batches in order (their RNG does not depend on it).
  flow::receiver<BatchToken*>* after_collate = upload;
  if (!batch_runners_.empty()) {
    auto* batch_ops = keep(std::make_shared<flow::function_node<BatchToken*, BatchToken*>>(
        g, flow::serial, [this](BatchToken* t) { return RunBatchStages(t); }));
    flow::make_edge(*batch_ops, *upload);
    after_collate = batch_ops;
  }
  auto* deliver = keep(std::make_shared<flow::function_node<BatchToken*>>(
      g, flow::serial, [this](BatchToken* t) { Deliver(t); }));

  flow::make_edge(*source_, flow::input_port<0>(*join));
  flow::make_edge(*free_tokens_, flow::input_port<1>(*join));
  flow::make_edge(*join, *dispatch);
  flow::make_edge(flow::output_port<0>(*dispatch), *stage_nodes.front());
  for (size_t i = 0; i + 1 < stage_nodes.size(); ++i) {
    flow::make_edge(*stage_nodes[i], *stage_nodes[i + 1]);
  }
  flow::make_edge(*stage_nodes.back(), *collect);
  if (options_.in_order) {
    // The sequencer buffers out-of-order batches; at most prefetch_batches exist.
    auto* order = keep(std::make_shared<flow::sequencer_node<BatchToken*>>(
        g, [](BatchToken* t) { return static_cast<size_t>(t->sequence); }));
    flow::make_edge(flow::output_port<0>(*collect), *order);
    flow::make_edge(*order, *after_collate);
  } else {
    flow::make_edge(flow::output_port<0>(*collect), *after_collate);
  }
  flow::make_edge(*upload, *deliver);
}

// FollowsNumWorkers says whether stage `stage` runs on num_workers workers: neither its
// spec nor its type fixes a concurrency (the planner's rule).
bool PipelineGraph::Impl::FollowsNumWorkers(size_t stage) const {
  if (stage >= options_.stages.size()) return false;
  const StageSpec& spec = options_.stages[stage];
  const absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec.type);
  return spec.concurrency <= 0 && schema.ok() && schema->default_concurrency <= 0;
}

// PlanForBuffers is the memory plan Create checked, with `count` batch buffers.
MemoryPlan PipelineGraph::Impl::PlanForBuffers(int count) const {
  GraphOptions options = options_;
  options.prefetch_batches = count;
  return PlanGraphMemory(options, outputs_, planned_rows_, memory_->pinned(),
                         memory_->location() == MemoryLocation::kDevice, stage_memory_, label_);
}

absl::Status PipelineGraph::Impl::SetWorkers(int workers) {
  if (workers < 1 || workers > max_workers_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers ", workers, " is outside [1, ", max_workers_,
        "], the range the graph was built for (raise cpu_budget for more)"));
  }
  workers_.store(workers, std::memory_order_relaxed);
  for (NodeGroup& group : groups_) {
    if (group.gate != nullptr) group.gate->SetLimit(workers);
  }
  return absl::OkStatus();
}

absl::Status PipelineGraph::Impl::SetPrefetchBatches(int count) {
  if (count < 1 || count > max_buffers_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prefetch_batches ", count, " is outside [1, ", max_buffers_,
        "], the most buffers the ram_budget allows"));
  }
  std::lock_guard<std::mutex> lock(resize_mu_);
  while (pool_->Count() < count) {
    // Checked before allocating, against what the process may use now.
    const MemoryPlan plan = PlanForBuffers(pool_->Count() + 1);
    if (absl::Status s = plan.CheckFits(PlanBudget(GraphMemoryBudget(options_.memory_limit_bytes)));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = pool_->Add(); !s.ok()) return s;
  }
  while (pool_->Count() > count) pool_->Retire();
  // The workers' share of what is left changes with the pool.
  worker_memory_->Update(WorkerImageBytes(PlanForBuffers(pool_->Count()),
                                          GraphMemoryBudget(options_.memory_limit_bytes),
                                          max_workers_));
  return absl::OkStatus();
}

void PipelineGraph::Impl::Start() {
  // Label the stages that run on num_workers workers (neither their spec nor their type
  // fixes a concurrency; the planner's rule), so that the diagnosis tells a stage held to
  // one worker by --num_workers=1 from a serial one, and each stage with the kind its
  // type declares.
  for (size_t i = 0; i < runners_.size() && i < options_.stages.size(); ++i) {
    const StageSpec& spec = options_.stages[i];
    const absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec.type);
    runners_[i].stats->set_follows_num_workers(spec.concurrency <= 0 && schema.ok() &&
                                               schema->default_concurrency <= 0);
    if (schema.ok()) runners_[i].stats->set_kind(schema->kind);
    runners_[i].stats->set_type(spec.type);
  }
  pool_->SetRecycler([this](BatchToken* token) {
    // Back to the free buffers; count the source's blocked time if it was starved.
    if (free_count_.fetch_add(1) == 0) {
      const int64_t since = empty_since_.load();
      if (since > 0) source_stats_->blocked_nanos.fetch_add(NowNanos() - since);
    }
    // The consumer's thread never runs graph code: a put from outside the arena would
    // have to join it (and wait while every slot is busy). enqueue hands the put to a
    // worker and returns at once; reserve_wait keeps wait_for_all (Stop) from finishing
    // before that put has happened.
    graph_->reserve_wait();
    arena_.enqueue([this, token] {
      free_tokens_->try_put(token);
      graph_->release_wait();
    });
  });
  stats_->start_unix_nanos = absl::GetCurrentTimeNanos();
  arena_.execute([this] {
    for (BatchToken* token : pool_->Tokens()) {
      free_count_.fetch_add(1);
      free_tokens_->try_put(token);
    }
    source_->activate();
  });
}

bool PipelineGraph::Impl::NextPlan(BatchPlan* plan) {
  if (stopping_.load(std::memory_order_acquire)) return false;
  if (options_.epochs > 0 && next_epoch_ >= options_.epochs) return false;
  // The size is read once per batch: a SetBatchSize racing with this plan applies to it
  // or to the next one, never to half of one.
  const int64_t batch_size = batch_size_.load(std::memory_order_relaxed);
  plan->epoch = next_epoch_;
  plan->index = next_batch_;
  plan->begin = next_position_;
  plan->end = std::min(next_position_ + batch_size, samples_per_epoch_);
  plan->last_of_epoch = EndsEpoch(plan->end, batch_size);
  plan->sequence = next_sequence_++;
  if (plan->last_of_epoch) {
    next_batch_ = 0;
    next_position_ = 0;
    ++next_epoch_;
  } else {
    ++next_batch_;
    next_position_ = plan->end;
  }
  return true;
}

// EndsEpoch says whether a batch ending at `end` is its epoch's last: nothing is left, or
// drop_last drops what is left because it is shorter than the batch size in effect now.
// (A batch size grown after that test was passed can make the epoch's last batch
// partial even under drop_last: its samples were already left in the epoch.)
bool PipelineGraph::Impl::EndsEpoch(int64_t end, int64_t batch_size) const {
  const int64_t left = samples_per_epoch_ - end;
  return left == 0 || (options_.drop_last && left < batch_size);
}

// SetOutputSlots points sample `s` at row `slot` of each tensor's region of `buffer`.
// The vectors are sized on a slot's first use only: no allocation per sample once warm.
void PipelineGraph::Impl::SetOutputSlots(void* buffer, int slot, SampleContext& s) const {
  const size_t views = regions_.size();
  if (s.outputs.size() != views) {
    s.outputs.resize(views);
    s.plans.resize(views);
    s.planned.resize(views);
  }
  for (size_t k = 0; k < views; ++k) {
    const size_t row_bytes = regions_[k].spec.sample_bytes;
    s.outputs[k].data =
        static_cast<uint8_t*>(buffer) + regions_[k].offset + static_cast<size_t>(slot) * row_bytes;
    s.outputs[k].bytes = row_bytes;
  }
  std::fill(s.planned.begin(), s.planned.end(), 0);
}

void PipelineGraph::Impl::Dispatch(
    const BatchPlan& plan, BatchToken* token,
    flow::multifunction_node<std::tuple<BatchPlan, BatchToken*>,
                             std::tuple<SampleContext*>>::output_ports_type& out) {
  const int64_t t0 = NowNanos();
  if (free_count_.fetch_sub(1) == 1) empty_since_.store(t0);
  pool_->MarkInFlight();
  if (plan.epoch != order_epoch_) {
    if (next_order_epoch_ == plan.epoch) {  // Made early by AnnounceAhead.
      order_ = std::move(next_order_);
      next_order_epoch_ = -1;
    } else {
      order_ = sampler_->EpochIndices(plan.epoch);
    }
    order_epoch_ = plan.epoch;
  }
  if (announce_window_ > 0) AnnounceAhead(plan);
  const int64_t begin = plan.begin;
  const int64_t end = plan.end;
  token->sequence = plan.sequence;
  token->size = static_cast<int>(end - begin);
  token->end_position = end;
  token->last_of_epoch = plan.last_of_epoch;
  token->batch.epoch = plan.epoch;
  token->batch.index = plan.index;
  token->remaining.store(token->size, std::memory_order_relaxed);
  for (int slot = 0; slot < token->size; ++slot) {
    SampleContext& s = token->samples[slot];
    s.epoch = plan.epoch;
    s.position = begin + slot;
    s.index = order_[static_cast<size_t>(begin + slot)];
    s.rng_key = sampler_->RngKey(s.position, s.index);
    s.copy = sampler_->Copy(s.position);
    s.slot = slot;
    s.seed = options_.seed;
    s.source = &dataset_->SampleAt(s.index, &s.computed_source);
    s.path = dataset_->FullPath(s.index);
    SetOutputSlots(token->buffer.host, slot, s);
    s.has_plan = false;
    s.status = absl::OkStatus();
    s.failed_stage.clear();
  }
  source_stats_->items_in.fetch_add(1, std::memory_order_relaxed);
  source_stats_->items_out.fetch_add(token->size, std::memory_order_relaxed);
  const int64_t dt = NowNanos() - t0;
  source_stats_->busy_nanos.fetch_add(dt, std::memory_order_relaxed);
  Trace(source_stats_, t0, dt, plan.sequence);
  groups_.front().in_edge->depth.fetch_add(token->size, std::memory_order_relaxed);
  for (int slot = 0; slot < token->size; ++slot) std::get<0>(out).try_put(&token->samples[slot]);
}

// AnnounceAhead tells the announcing stages of every sample up to announce_window_
// positions past the end of `plan`, continuing into the next epoch's order when this
// epoch ends first (and the run goes on), each sample once: the read stage of remote data
// then has their reads in flight before the workers ask for them.
void PipelineGraph::Impl::AnnounceAhead(const BatchPlan& plan) {
  if (announce_epoch_ < plan.epoch ||
      (announce_epoch_ == plan.epoch && announce_position_ < plan.begin)) {
    announce_epoch_ = plan.epoch;  // Never behind the batch being dispatched.
    announce_position_ = plan.begin;
  }
  const int64_t until = plan.end + announce_window_;  // In this epoch's positions.
  const int64_t size = static_cast<int64_t>(order_.size());
  if (announce_epoch_ == plan.epoch) {
    for (; announce_position_ < std::min(until, size); ++announce_position_) {
      AnnounceOne(plan.epoch, announce_position_, order_[announce_position_],
                  /*due_now=*/announce_position_ < plan.end);
    }
    const bool more_epochs = options_.epochs == 0 || plan.epoch + 1 < options_.epochs;
    if (until <= size || !more_epochs) return;
    announce_epoch_ = plan.epoch + 1;
    announce_position_ = 0;
  }
  if (announce_epoch_ != plan.epoch + 1) return;
  if (next_order_epoch_ != announce_epoch_) {
    next_order_ = sampler_->EpochIndices(announce_epoch_);
    next_order_epoch_ = announce_epoch_;
  }
  const int64_t next_until = std::min(until - size, static_cast<int64_t>(next_order_.size()));
  for (; announce_position_ < next_until; ++announce_position_) {
    AnnounceOne(announce_epoch_, announce_position_, next_order_[announce_position_],
                /*due_now=*/false);
  }
}

void PipelineGraph::Impl::AnnounceOne(int64_t epoch, int64_t position, int64_t index,
                                      bool due_now) const {
  for (const SampleStage* stage : announcers_) stage->Announce(epoch, position, index, due_now);
}

SampleContext* PipelineGraph::Impl::RunGroup(NodeGroup& group, EdgeStats* out_edge,
                                             SampleContext* s) {
  group.in_edge->depth.fetch_sub(1, std::memory_order_relaxed);
  if (group.gate != nullptr) group.gate->Enter();
  for (StageRunner* runner : group.runners) RunStage(*runner, s);
  if (group.gate != nullptr) group.gate->Leave();
  out_edge->depth.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void PipelineGraph::Impl::RunStage(StageRunner& runner, SampleContext* s) {
  // A failed sample, or any sample once stopping, passes through untouched so that its
  // batch still completes (the sequencer must see every batch number).
  if (!s->status.ok() || stopping_.load(std::memory_order_relaxed)) return;
  StageStats& st = *runner.stats;
  st.items_in.fetch_add(1, std::memory_order_relaxed);
  st.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (stats_->trace != nullptr) {  // Lets the stage nest its ops' spans in its own.
    s->trace = stats_->trace.get();
    s->trace_stage = runner.trace_index;
  }
  const int64_t t0 = NowNanos();
  absl::Status status;
  try {
    status = runner.stage->Process(*s);
  } catch (const std::exception& e) {
    status = SampleError(absl::StatusCode::kInternal, reason::kStageError,
                         absl::StrCat("threw: ", e.what()));
  } catch (...) {
    status = SampleError(absl::StatusCode::kInternal, reason::kStageError,
                         "threw a non-standard exception");
  }
  const int64_t dt = NowNanos() - t0;
  st.busy_nanos.fetch_add(dt, std::memory_order_relaxed);
  st.latency.Observe(dt);
  st.in_flight.fetch_sub(1, std::memory_order_relaxed);
  if (stats_->trace != nullptr) stats_->trace->Record(runner.trace_index, t0, dt, s->index);
  if (status.ok()) {
    st.items_out.fetch_add(1, std::memory_order_relaxed);
    st.bytes.fetch_add(runner.stage->BytesProduced(*s), std::memory_order_relaxed);
    return;
  }
  // Its stage's error count grows when the sample's batch is delivered (CountEpochSkips).
  s->failed_stage = st.name();
  s->status = WithContext(status, absl::StrCat(st.name(), " failed on ", s->key()));
}

// ReserveHuge grows `v` once to hold `n` elements (a quarter more, for the next batch)
// onto transparent huge pages, instead of doubling it row by row: each growth is fresh
// memory, and on the VMs here the first touch of each fresh 4 KiB page costs a hypervisor
// fault (stages/upload/host_memory.cc). A vector that already holds `n` is left as it is:
// the batch token keeps it, so later batches write into memory already faulted in.
template <typename T>
static void ReserveHuge(std::vector<T>& v, size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n + n / 4);
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t start = reinterpret_cast<uintptr_t>(v.data());
  const uintptr_t first = (start + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t last = (start + v.capacity() * sizeof(T)) & ~(kHuge - 1);
  // A hint: where THP is off (EINVAL) the pages stay 4 KiB.
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

// ReleaseLargeTargets frees a slot's instance masks and label map once copied into the
// batch when they hold over 16 MiB: each slot of each batch buffer kept the largest it
// ever held (4 slots × 80 masks of 1200×900 and more), outside the plan, which counts two
// copies per worker (a rotate with expand over 60-instance 3 Mpx images: 1072 MiB under
// memory_limit_mb 1024). Smaller ones keep their storage for the next sample.
static void ReleaseLargeTargets(detection::Targets& targets) {
  constexpr size_t kKeep = size_t{16} << 20;
  if (targets.masks.capacity() > kKeep) std::vector<uint8_t>().swap(targets.masks);
  if (targets.semantic.capacity() > kKeep) std::vector<uint8_t>().swap(targets.semantic);
}

// ReserveBatchTargets sizes the batch's instance masks and semantic label maps for all its
// rows at once (ReserveHuge). The LSJ recipe's first batches spent ~10% of their CPU
// faulting the growing mask vector in (perf).
static void ReserveBatchTargets(BatchToken& token) {
  size_t masks = 0, semantic = 0;
  for (int slot = 0; slot < token.size; ++slot) {
    masks += token.samples[slot].targets.MaskPlaneBytes();
    semantic += token.samples[slot].targets.semantic.size();
  }
  ReserveHuge(token.batch.targets.masks, masks);
  ReserveHuge(token.batch.targets.semantic, semantic);
}

void PipelineGraph::Impl::Collect(BatchToken* token) {
  const int64_t t0 = NowNanos();
  Batch& batch = token->batch;
  batch.labels.clear();
  batch.indices.clear();
  batch.keys.clear();
  batch.sources.clear();
  batch.copies.clear();
  batch.skipped.clear();
  token->skipped_stages.clear();
  StartColumns(dataset_->column_names(), &batch.columns);
  batch.targets.Start();
  int64_t failed = 0;
  SampleContext* first_failed = nullptr;
  SampleContext* last_failed = nullptr;
  token->keep.assign(static_cast<size_t>(token->size), false);  // Within capacity.
  ReserveBatchTargets(*token);
  for (int slot = 0; slot < token->size; ++slot) {
    SampleContext& s = token->samples[slot];
    token->keep[slot] = s.status.ok() && LabelInRange(s);
    if (token->keep[slot]) {
      batch.labels.push_back(s.source->label);
      batch.indices.push_back(s.index);
      batch.keys.push_back(s.source->key);
      batch.sources.push_back(s.source->source);
      if (repeats_) batch.copies.push_back(s.copy);
      for (size_t c = 0; c < batch.columns.size(); ++c) {
        const absl::string_view value = dataset_->column(s.index, c);
        batch.columns[c].Append(std::string_view(value.data(), value.size()));
      }
      // Targets were written (the annotations stage sets their canvas); a graph without
      // them pays this one test per sample.
      if (s.targets.canvas_width > 0) {
        batch.targets.Append(s.targets);
        ReleaseLargeTargets(s.targets);
      }
    } else {
      ++failed;
      if (first_failed == nullptr) first_failed = &s;
      last_failed = &s;
      batch.skipped.push_back(SkippedSample{s.index, s.source->key, ErrorReason(s.status),
                                            std::string(s.status.message())});
      token->skipped_stages.push_back(s.failed_stage.empty() ? nullptr
                                                             : stats_->Stage(s.failed_stage));
    }
  }
  FillTensors(token);
  batch.location = memory_->pinned() ? MemoryLocation::kPinnedHost : MemoryLocation::kHost;
  token->fatal = absl::OkStatus();
  if (failed > 0) ApplyErrorPolicy(token, failed, first_failed, last_failed);
  processed_.fetch_add(token->size, std::memory_order_relaxed);
  collate_stats_->items_in.fetch_add(token->size, std::memory_order_relaxed);
  collate_stats_->items_out.fetch_add(1, std::memory_order_relaxed);
  size_t bytes = 0;
  for (const BatchTensor& t : batch.tensors) bytes += t.bytes();
  collate_stats_->bytes.fetch_add(bytes, std::memory_order_relaxed);
  const int64_t dt = NowNanos() - t0;
  collate_stats_->busy_nanos.fetch_add(dt, std::memory_order_relaxed);
  collate_stats_->latency.Observe(dt);
  Trace(collate_stats_, t0, dt, token->sequence);
}

// LabelInRange says whether sample `s`'s label fits the soft targets' columns; one that
// does not is failed (skipped and counted as label_out_of_range on the collate row), so
// that no wrong one-hot row is made. Always true for int64 labels.
bool PipelineGraph::Impl::LabelInRange(SampleContext& s) {
  const int64_t label = s.source->label;
  if (!label_.soft() || (label >= 0 && label < label_.num_classes)) return true;
  s.status = SampleError(
      absl::StatusCode::kOutOfRange, reason::kLabelOutOfRange,
      absl::StrCat(s.key(), ": label ", label, " is outside [0, ", label_.num_classes,
                   "), the soft targets' num_classes"));
  s.failed_stage = "collate";  // Counted on collate at delivery (CountEpochSkips).
  return false;
}

// RunBatchStages runs every batch stage on `token`'s batch in list order (serial node).
BatchToken* PipelineGraph::Impl::RunBatchStages(BatchToken* token) {
  for (BatchRunner& runner : batch_runners_) {
    runner.in_edge->depth.fetch_sub(1, std::memory_order_relaxed);
    RunBatchStage(runner, token);
  }
  upload_edge_->depth.fetch_add(1, std::memory_order_relaxed);
  return token;
}

void PipelineGraph::Impl::RunBatchStage(BatchRunner& runner, BatchToken* token) {
  // A batch that will stop the pipeline, or any once stopping, passes through untouched.
  if (!token->fatal.ok() || stopping_.load(std::memory_order_relaxed)) return;
  StageStats& st = *runner.stats;
  Batch& batch = token->batch;
  st.items_in.fetch_add(1, std::memory_order_relaxed);
  st.in_flight.fetch_add(1, std::memory_order_relaxed);
  const int64_t t0 = NowNanos();
  BatchContext ctx;
  ctx.batch = &batch;
  ctx.data.reserve(regions_.size());
  for (const TensorRegion& region : regions_) {
    ctx.data.push_back(static_cast<uint8_t*>(token->buffer.host) + region.offset);
  }
  ctx.label_data = static_cast<uint8_t*>(token->buffer.host) + label_region_.offset;
  ctx.seed = options_.seed;
  ctx.epoch = batch.epoch;
  ctx.index = batch.index;
  absl::Status status;
  try {
    status = runner.stage->Process(ctx);
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("threw: ", e.what()));
  }
  const int64_t dt = NowNanos() - t0;
  st.busy_nanos.fetch_add(dt, std::memory_order_relaxed);
  st.latency.Observe(dt);
  st.in_flight.fetch_sub(1, std::memory_order_relaxed);
  Trace(runner.stats, t0, dt, token->sequence);
  if (!status.ok()) {
    st.CountError(std::string(reason::kStageError));
    stats_->CountSkip(reason::kStageError);  // Ends the run: no epoch to wait for.
    Fail(WithContext(status, absl::StrCat("batch op ", st.name(), " on epoch ", batch.epoch,
                                          " batch ", batch.index)));
    return;
  }
  st.items_out.fetch_add(1, std::memory_order_relaxed);
  size_t bytes = batch.label.bytes();
  for (const BatchTensor& t : batch.tensors) bytes += t.bytes();
  st.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// FillTensors compacts each tensor's region (skipped rows removed, the same rows in
// each) and describes it in batch.tensors.
void PipelineGraph::Impl::FillTensors(BatchToken* token) {
  Batch& batch = token->batch;
  batch.tensors.resize(regions_.size());  // Within capacity after the first batch.
  for (size_t k = 0; k < regions_.size(); ++k) {
    const TensorRegion& region = regions_[k];
    void* host = static_cast<uint8_t*>(token->buffer.host) + region.offset;
    const int64_t kept = CompactSlots(host, region.spec.sample_bytes, token->keep);
    BatchTensor& t = batch.tensors[k];
    t.name = region.spec.name;
    t.shape.clear();
    t.shape.push_back(kept);
    for (int64_t d : region.spec.sample_shape) t.shape.push_back(d);
    t.dtype = region.spec.dtype();
    t.host_data = host;
    t.device_data = nullptr;
  }
  batch.image_sizes.clear();
  if (options_.size_divisibility >= 0 && !regions_.empty()) PadRows(token);
  FillLabel(token);
}

// PadRows lays the kept rows of the one batch tensor out as a padded batch (each image
// at the top left, zeros around it, sides rounded up to size_divisibility) and records
// each row's image size (Batch::image_sizes). A row whose stage did not say its size
// (a stage other than transforms) is the declared shape's.
void PipelineGraph::Impl::PadRows(BatchToken* token) {
  Batch& batch = token->batch;
  const TensorRegion& region = regions_[0];
  const std::vector<int64_t>& shape = region.spec.sample_shape;  // [C, H, W] or [H, W, C].
  const bool chw = region.spec.is_float;
  PaddedImages images;
  images.data = static_cast<uint8_t*>(token->buffer.host) + region.offset;
  images.slot_bytes = region.spec.sample_bytes;
  images.channels = chw ? shape[0] : shape[2];
  images.elem_bytes = DTypeBytes(region.spec.dtype());
  images.chw = chw;
  for (int slot = 0; slot < token->size; ++slot) {
    if (!token->keep[slot]) continue;
    const SampleContext::OutputSlot& out = token->samples[slot].outputs[0];
    images.sizes.push_back(out.height > 0 ? out.height : shape[chw ? 1 : 0]);
    images.sizes.push_back(out.width > 0 ? out.width : shape[chw ? 2 : 1]);
  }
  batch.tensors[0].shape = PadImages(images, options_.size_divisibility);
  batch.image_sizes = std::move(images.sizes);
}

// FillLabel writes the label tensor into its region of the buffer: each kept row's class
// index (int64), or its one-hot target (float32 [N, C]) for the batch stages to soften
// and mix in place. batch.labels is already compacted, so this needs no compaction.
void PipelineGraph::Impl::FillLabel(BatchToken* token) {
  Batch& batch = token->batch;
  void* host = static_cast<uint8_t*>(token->buffer.host) + label_region_.offset;
  const size_t rows = batch.labels.size();
  if (label_.soft()) {
    float* target = static_cast<float*>(host);
    const size_t classes = static_cast<size_t>(label_.num_classes);
    std::fill(target, target + rows * classes, 0.0f);
    for (size_t r = 0; r < rows; ++r) {
      target[r * classes + static_cast<size_t>(batch.labels[r])] = 1.0f;  // In range: Collect.
    }
  } else if (rows > 0) {
    std::memcpy(host, batch.labels.data(), rows * sizeof(int64_t));
  }
  BatchTensor& t = batch.label;
  t.name = "label";
  t.shape.assign(1, static_cast<int64_t>(rows));
  if (label_.soft()) t.shape.push_back(label_.num_classes);
  t.dtype = label_.dtype();
  t.host_data = host;
  t.device_data = nullptr;
}

// UploadTensors copies each tensor's rows to its region of the device buffer
// (tests:cuda_upload_test reads them back on a machine with a device).
absl::Status PipelineGraph::Impl::UploadTensors(BatchToken* token, size_t* bytes) {
  *bytes = 0;
  Batch& batch = token->batch;
  for (size_t k = 0; k < regions_.size(); ++k) {
    BatchTensor& t = batch.tensors[k];
    const BatchBuffer region{static_cast<uint8_t*>(token->buffer.host) + regions_[k].offset,
                             static_cast<uint8_t*>(token->buffer.device) + regions_[k].offset,
                             regions_[k].bytes};
    if (absl::Status s = memory_->Upload(region, t.bytes()); !s.ok()) return s;
    t.device_data = region.device;
    *bytes += t.bytes();
  }
  // The label tensor goes with them (its region follows theirs in the buffer).
  BatchTensor& label = batch.label;
  const BatchBuffer label_region{
      static_cast<uint8_t*>(token->buffer.host) + label_region_.offset,
      static_cast<uint8_t*>(token->buffer.device) + label_region_.offset, label_region_.bytes};
  if (absl::Status s = memory_->Upload(label_region, label.bytes()); !s.ok()) return s;
  label.device_data = label_region.device;
  *bytes += label.bytes();
  return absl::OkStatus();
}

void PipelineGraph::Impl::ApplyErrorPolicy(BatchToken* token, int64_t failed_in_batch,
                                           SampleContext* first_failed,
                                           SampleContext* last_failed) {
  if (stopping_.load()) return;  // Samples cut short by Stop are not errors.
  const int64_t failed = failed_.fetch_add(failed_in_batch) + failed_in_batch;
  const int64_t processed = processed_.load() + token->size;
  LogFirstSkips(token->batch.skipped);
  if (options_.on_error == ErrorPolicy::kFail) {
    token->fatal = first_failed->status;  // Raised by Pop, in delivery order.
    return;
  }
  // The limits are named as the user sets them (--max_errors, spec max_errors). The batch
  // that passes one ends the run undelivered: its failures count on their stages now.
  if (options_.max_errors >= 0 && failed > options_.max_errors) {
    CountStageErrors(*token);
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        failed, " samples failed, more than max_errors=", options_.max_errors,
        " allows; last: ", last_failed->status.message())));
    return;
  }
  if (options_.max_error_fraction < 1.0 && processed >= 100 &&
      static_cast<double>(failed) > options_.max_error_fraction * static_cast<double>(processed)) {
    CountStageErrors(*token);
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        failed, " of ", processed, " samples failed, more than max_errors=",
        options_.max_error_fraction * 100, "% allows; last: ", last_failed->status.message())));
  }
}

void PipelineGraph::Impl::CountStageErrors(const BatchToken& token) {
  for (size_t i = 0; i < token.batch.skipped.size() && i < token.skipped_stages.size(); ++i) {
    if (token.skipped_stages[i] == nullptr) continue;
    const std::string& reason = token.batch.skipped[i].reason;
    token.skipped_stages[i]->CountError(reason.empty() ? std::string(reason::kStageError)
                                                       : reason);
  }
}

void PipelineGraph::Impl::LogFirstSkips(const std::vector<SkippedSample>& skipped) {
  std::lock_guard<std::mutex> lock(log_mu_);
  for (const SkippedSample& s : skipped) {
    // Once per run: a bad file fails the same way every epoch (CountEpochSkips counts it).
    if (!logged_skips_.insert(s.index).second) continue;
    LogWarning(absl::StrCat("skipped ", s.key, " (", s.reason, "): ", s.message));
  }
}

// CountEpochSkips counts the delivered batch's skips, in the run's totals and by reason,
// and on the stages that failed them, at delivery: workers finish the next epoch's first
// batches ahead of the consumer, and counting their skips then showed an epoch more skips
// than it had (and the stages' error counters more than the summary's skips).
void PipelineGraph::Impl::CountEpochSkips(const BatchToken& token, bool ends_epoch) {
  const Batch& batch = token.batch;
  CountStageErrors(token);
  stats_->skipped.fetch_add(batch.skipped.size(), std::memory_order_relaxed);
  for (const SkippedSample& s : batch.skipped) {
    stats_->CountSkip(s.reason.empty() ? std::string(reason::kStageError) : s.reason);
  }
  skipped_in_epoch_ += static_cast<int64_t>(batch.skipped.size());
  if (!ends_epoch) return;
  if (skipped_in_epoch_ > 0) {
    LogWarning(absl::StrCat("epoch ", batch.epoch, ": ", skipped_in_epoch_,
                            " samples skipped (each file is named once, when first skipped)"));
  }
  skipped_in_epoch_ = 0;
}

BatchToken* PipelineGraph::Impl::Upload(BatchToken* token) {
  upload_edge_->depth.fetch_sub(1, std::memory_order_relaxed);
  StageStats& st = *upload_stats_;
  st.items_in.fetch_add(1, std::memory_order_relaxed);
  if (memory_->location() == MemoryLocation::kDevice && !stopping_.load()) {
    const int64_t t0 = NowNanos();
    size_t bytes = 0;
    absl::Status status = UploadTensors(token, &bytes);
    const int64_t dt = NowNanos() - t0;
    st.busy_nanos.fetch_add(dt, std::memory_order_relaxed);
    st.latency.Observe(dt);
    Trace(upload_stats_, t0, dt, token->sequence);
    if (!status.ok()) {
      st.CountError(reason::kCudaError);
      stats_->CountSkip(reason::kCudaError);  // Ends the run: no epoch to wait for.
      Fail(WithContext(status, "upload to the device"));
    } else {
      st.bytes.fetch_add(bytes, std::memory_order_relaxed);
      token->batch.location = MemoryLocation::kDevice;
    }
  }
  st.items_out.fetch_add(1, std::memory_order_relaxed);
  return token;
}

void PipelineGraph::Impl::Deliver(BatchToken* token) {
  consumer_edge_->depth.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(token);
  }
  ready_.notify_one();
}

void PipelineGraph::Impl::Fail(absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (fatal_.ok()) fatal_ = std::move(status);
  }
  stopping_.store(true);
  ready_.notify_all();
}

absl::Status PipelineGraph::Impl::Pop(Popped* out) {
  *out = Popped{};
  std::unique_lock<std::mutex> lock(mu_);
  if (options_.epochs > 0 && delivering_epoch_ >= options_.epochs) {
    out->done = true;
    return absl::OkStatus();
  }
  const int64_t t0 = NowNanos();
  // In order, the next batch is the one numbered delivered_sequence_, wherever it sits in
  // the queue: the sequencer orders batches, but the serial function_nodes after it
  // (upload, deliver) do not promise FIFO order under oneTBB, and with the autotuner's
  // gate parking threads two batches were seen to reach the queue swapped. As completed,
  // it is the oldest ready one of the epoch being delivered: a batch of the next epoch
  // waits until this epoch is complete, so epoch boundaries stay exact.
  auto next_of_epoch = [this] {
    return std::find_if(queue_.begin(), queue_.end(), [this](BatchToken* t) {
      if (options_.in_order) return t->sequence == delivered_sequence_;
      return t->batch.epoch == delivering_epoch_;
    });
  };
  // Counted under mu_ while inside the wait (waiting_pops): a thread that reads it > 0
  // knows a Pop is blocked here, not about to be.
  ++waiting_pops_;
  ready_.wait(lock, [&] { return next_of_epoch() != queue_.end() || !fatal_.ok() || stopped_; });
  --waiting_pops_;
  if (!fatal_.ok()) return fatal_;
  if (stopped_) return absl::CancelledError("the pipeline was stopped");
  const auto it = next_of_epoch();
  BatchToken* token = *it;
  queue_.erase(it);
  consumer_edge_->depth.fetch_sub(1, std::memory_order_relaxed);
  ++delivered_sequence_;
  out->epoch = token->batch.epoch;
  out->index = token->batch.index;
  out->end_position = token->end_position;
  if (EpochDeliveredLocked(*token)) {
    out->ends_epoch = true;
    ++delivering_epoch_;
    delivered_in_epoch_ = 0;
    epoch_first_index_ = 0;
    epoch_last_index_ = -1;
  }
  const int64_t waited = NowNanos() - t0;
  stats_->consumer_wait_nanos.fetch_add(waited, std::memory_order_relaxed);
  if (delivered_sequence_ > 1) stats_->steady_consumer_waits.Observe(waited);
  if (!token->fatal.ok()) {
    CountStageErrors(*token);  // Not skips: the run ends with the first of them.
    const absl::Status fatal = token->fatal;
    if (fatal_.ok()) fatal_ = fatal;
    stopping_.store(true);
    lock.unlock();
    ready_.notify_all();
    pool_->Release(token);
    return fatal;
  }
  if (stats_->trace != nullptr) stats_->trace->Record(-1, t0, waited, delivered_sequence_ - 1);
  if (token->batch.size() == 0 && !out->ends_epoch) {
    // Every sample was skipped: recycle the buffer, hand out nothing, and report its
    // skips with the epoch's next batch. (An epoch's last batch is handed out even when
    // empty, so that no skip is reported in the wrong epoch or lost after the last one.)
    carried_skips_.insert(carried_skips_.end(), token->batch.skipped.begin(),
                          token->batch.skipped.end());
    carried_stages_.insert(carried_stages_.end(), token->skipped_stages.begin(),
                           token->skipped_stages.end());
    lock.unlock();
    pool_->Release(token);
    return absl::OkStatus();
  }
  if (!carried_skips_.empty()) {
    auto& skipped = token->batch.skipped;
    skipped.insert(skipped.begin(), carried_skips_.begin(), carried_skips_.end());
    carried_skips_.clear();
    token->skipped_stages.insert(token->skipped_stages.begin(), carried_stages_.begin(),
                                 carried_stages_.end());
    carried_stages_.clear();
  }
  CountEpochSkips(*token, out->ends_epoch);
  stats_->batches.fetch_add(1, std::memory_order_relaxed);
  stats_->samples.fetch_add(token->batch.size(), std::memory_order_relaxed);
  stats_->epoch.store(token->batch.epoch, std::memory_order_relaxed);
  stats_->last_batch_unix_nanos.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  out->batch = pool_->Hand(token);
  return absl::OkStatus();
}

// SetBatchSize is checked against the pool the plan allocated: its buffers hold pool_rows_
// samples each and are never reallocated mid-run (that would stall every batch in flight
// and could fail for memory the plan never counted).
absl::Status PipelineGraph::Impl::SetBatchSize(int batch_size) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("SetBatchSize: batch_size must be >= 1, got ", batch_size));
  }
  if (!BatchFitsPool(batch_size, pool_rows_, samples_per_epoch_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SetBatchSize: batch_size ", batch_size, " does not fit the batch pool's ", pool_rows_,
        " samples per buffer: create the pipeline with batch_size >= ", batch_size,
        " to grow to it"));
  }
  batch_size_.store(batch_size, std::memory_order_relaxed);
  return absl::OkStatus();
}

// EpochDeliveredLocked counts `token` as delivered in the epoch being delivered and says
// whether that completes the epoch. How many batches an epoch has is known only once the
// source has planned its last one (the batch size may change mid-epoch): the epoch is
// complete when that batch and every batch numbered before it have been popped, which in
// as-completed order may happen after the last batch itself.
bool PipelineGraph::Impl::EpochDeliveredLocked(const BatchToken& token) {
  ++delivered_in_epoch_;
  if (token.last_of_epoch) epoch_last_index_ = token.batch.index;
  return epoch_last_index_ >= 0 &&
         delivered_in_epoch_ == epoch_last_index_ + 1 - epoch_first_index_;
}

void PipelineGraph::Impl::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  stopping_.store(true);
  ready_.notify_all();
  if (graph_ == nullptr) return;
  // From here on a released batch stays in the pool instead of re-entering the graph.
  pool_->SetRecycler(nullptr);
  arena_.execute([this] {
    // Work in flight drains fast: every stage passes samples through once stopping.
    graph_->wait_for_all();
  });
  std::lock_guard<std::mutex> lock(mu_);
  queue_.clear();
}

PipelineGraph::PipelineGraph(std::unique_ptr<Impl> impl, const GraphOptions& options,
                             std::vector<OutputSpec> outputs, LabelSpec label)
    : impl_(std::move(impl)),
      options_(options),
      outputs_(std::move(outputs)),
      label_(label) {}

PipelineGraph::~PipelineGraph() = default;

absl::StatusOr<MemoryPlan> PipelineGraph::Plan(const GraphOptions& options,
                                                const Dataset& dataset, const Sampler& sampler,
                                                const DeviceMemory& memory) {
  GraphOptions widest = options;  // As Create plans it.
  widest.num_workers = MaxWorkers(options);
  absl::StatusOr<graph_internal::GraphPlan> plan =
      graph_internal::PlanGraph(widest, dataset, sampler, memory);
  if (!plan.ok()) return plan.status();
  return std::move(plan->memory);
}

MemoryBudget PipelineGraph::Budget(const GraphOptions& options) {
  return PlanBudget(GraphMemoryBudget(options.memory_limit_bytes));
}

absl::StatusOr<std::unique_ptr<PipelineGraph>> PipelineGraph::Create(
    const GraphOptions& options, std::shared_ptr<const Dataset> dataset,
    std::shared_ptr<const Sampler> sampler, std::shared_ptr<DeviceMemory> memory,
    std::shared_ptr<PipelineStats> stats) {
  if (dataset == nullptr || sampler == nullptr || memory == nullptr || stats == nullptr) {
    return absl::InvalidArgumentError("PipelineGraph::Create needs a dataset, sampler, memory and stats");
  }
  if (absl::Status s = CheckAutotuneRanges(options); !s.ok()) return s;
  // Planned at the most workers the autotuner may allow: the stages that follow
  // num_workers are built that wide, with their per-worker memory.
  GraphOptions widest = options;
  widest.num_workers = MaxWorkers(options);
  absl::StatusOr<graph_internal::GraphPlan> plan =
      graph_internal::PlanGraph(widest, *dataset, *sampler, *memory);
  if (!plan.ok()) return plan.status();
  // Check the memory plan before the pool exists: a configuration that cannot fit is
  // refused in one line instead of failing to map or being OOM-killed mid-epoch.
  if (absl::Status s = plan->memory.CheckFits(Budget(options)); !s.ok()) return s;
  // The whole budget: the workers' share leaves the process its part itself.
  const MemoryBudget budget = GraphMemoryBudget(options.memory_limit_bytes);
  // What the plan leaves is the workers' for their samples' images (WorkerMemory).
  plan->worker_memory->Set(WorkerImageBytes(plan->memory, budget, widest.num_workers),
                           widest.num_workers,
                           absl::StrCat(budget.source, " ", FormatBytes(budget.bytes)));
  stats->memory_plan = plan->memory.BytesByKey();
  stats->memory_plan.emplace_back("available_bytes", budget.bytes);

  auto impl = std::make_unique<Impl>(options, std::move(dataset), std::move(sampler),
                                     std::move(memory), std::move(stats));
  std::vector<OutputSpec> outputs = plan->outputs;
  const LabelSpec label = plan->label;
  if (absl::Status s = impl->Build(*std::move(plan)); !s.ok()) return s;
  return std::unique_ptr<PipelineGraph>(
      new PipelineGraph(std::move(impl), options, std::move(outputs), label));
}

void PipelineGraph::Start() { impl_->Start(); }
absl::Status PipelineGraph::Pop(Popped* out) { return impl_->Pop(out); }
absl::Status PipelineGraph::SetBatchSize(int batch_size) {
  return impl_->SetBatchSize(batch_size);
}
int PipelineGraph::batch_size() const { return impl_->batch_size(); }
int PipelineGraph::pool_rows() const { return impl_->pool_rows(); }
int64_t PipelineGraph::batches_per_epoch() const { return impl_->batches_per_epoch(); }
void PipelineGraph::Stop() { impl_->Stop(); }
int PipelineGraph::effective_threads() const { return impl_->effective_threads(); }
absl::Status PipelineGraph::SetWorkers(int workers) { return impl_->SetWorkers(workers); }
int PipelineGraph::workers() const { return impl_->workers(); }
absl::Status PipelineGraph::SetPrefetchBatches(int count) {
  return impl_->SetPrefetchBatches(count);
}
int PipelineGraph::prefetch_batches() const { return impl_->prefetch_batches(); }
int PipelineGraph::waiting_pops() const { return impl_->waiting_pops(); }

}  // namespace flowloader
