// autotune_loop.cc: PlanAutotune and AutotuneLoop.
#include "runtime/internal/autotune_loop.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/autotune_stats.h"
#include "graph/pipeline_graph.h"
#include "stages/core/log.h"
#include "stages/core/resources.h"

namespace flowloader {
namespace {

// The pool never grows past this many buffers, whatever memory allows: past a few, more
// buffers only smooth uneven batches, and the sequencer holds every one out of order.
constexpr int kMaxAutoBuffers = 16;
constexpr int kFirstAutoBuffers = 2;

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t ProcessCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// PoolPartBytes is what one batch buffer adds to the plan: its tensors and its labels
// (soft labels of a million classes are 244 MiB a buffer of 64, beside 37 MiB of pixels:
// counted without them, auto took two buffers that did not fit memory_limit_mb 512).
int64_t PoolPartBytes(const MemoryPlan& plan) {
  int64_t bytes = 0;
  for (const MemoryPart& part : plan.parts()) {
    if (part.key == "batch_pool" || part.key == "batch_labels") bytes += part.bytes;
  }
  return bytes;
}

// BuffersWithin is the most buffers (up to kMaxAutoBuffers) whose plan, with what the
// process holds, fits `ram_budget`: the one-buffer plan plus a buffer's bytes per extra.
int BuffersWithin(const MemoryPlan& one_buffer_plan, int64_t resident_bytes, int64_t ram_budget) {
  const int64_t per_buffer = std::max<int64_t>(1, PoolPartBytes(one_buffer_plan));
  const int64_t room = ram_budget - resident_bytes - one_buffer_plan.total_bytes();
  if (room < 0) return 0;
  return static_cast<int>(std::min<int64_t>(kMaxAutoBuffers, 1 + room / per_buffer));
}

// LargestPartKnob names the option that most shrinks the plan's largest part.
std::string LargestPartKnob(const MemoryPlan& plan) {
  const MemoryPart* largest = plan.LargestHostPart();
  return largest == nullptr || largest->knobs.empty() ? "batch_size" : largest->knobs.front();
}

// WorkersWithin is the most workers, up to graph.max_workers, whose plan fits the run's
// budget when that is memory_limit_mb (each worker plans its scratch and its sample room:
// 16 auto workers' 512 MiB of sample room would refuse memory_limit_mb 256 outright).
// With no limit, graph.max_workers; when not even one worker fits, 1 (Create then cuts
// its sample room, or refuses naming the parts). `auto_buffers`: planned with one batch
// buffer, where auto prefetch starts from.
absl::StatusOr<int> WorkersWithin(const PlanGraphMemoryFn& plan_memory, const GraphOptions& graph,
                                  bool auto_buffers) {
  const int most = graph.max_workers;
  if (graph.memory_limit_bytes <= 0 || most <= 1) return most;
  const MemoryBudget budget = PipelineGraph::Budget(graph);
  absl::Status error;
  const auto fits = [&](int workers) {
    GraphOptions g = graph;
    g.num_workers = workers;
    g.max_workers = workers;
    if (auto_buffers) {
      g.prefetch_batches = 1;
      g.max_prefetch_batches = 0;
    }
    const absl::StatusOr<MemoryPlan> plan = plan_memory(g);
    if (!plan.ok()) {
      error = plan.status();
      return false;
    }
    return plan->CheckFits(budget).ok();
  };
  if (fits(most)) return most;
  if (!error.ok()) return error;
  // Not even one: one worker, whose sample room Create then cuts (or refuses the rest).
  if (!fits(1)) return error.ok() ? absl::StatusOr<int>(1) : error;
  int lo = 1, hi = most;  // lo fits, hi does not.
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

absl::StatusOr<AutotunePlan> PlanAutotune(const PipelineOptions& options,
                                          const PlanGraphMemoryFn& plan_memory,
                                          int64_t resident_bytes, GraphOptions* graph) {
  AutotunePlan plan;
  const bool auto_workers = options.num_workers == PipelineOptions::kAuto;
  const bool auto_buffers = options.prefetch_batches == PipelineOptions::kAuto;
  plan.enabled = auto_workers || auto_buffers;
  if (!plan.enabled) return plan;
  AutotunePolicyOptions& policy = plan.policy;
  policy.tune_workers = auto_workers;
  policy.tune_buffers = auto_buffers;
  policy.cpu_budget = options.cpu_budget > 0 ? options.cpu_budget : UsableCpus();
  if (auto_workers) {
    policy.max_workers = std::min(policy.cpu_budget, GraphOptions::kMaxWorkers);
    // Start at the CPU budget (the fewest workers made the first batch 2× later than
    // the best fixed setting); the policy shrinks when the consumer is the bottleneck.
    graph->num_workers = policy.max_workers;
    graph->max_workers = policy.max_workers;
    if (absl::StatusOr<int> fit = WorkersWithin(plan_memory, *graph, auto_buffers);
        !fit.ok()) {
      return fit.status();
    } else if (*fit < policy.max_workers) {
      LogInfo(absl::StrCat("num_workers auto: at most ", *fit, " of ", policy.max_workers,
                           " workers fit memory_limit_mb (each plans its own scratch and "
                           "sample room)"));
      policy.max_workers = *fit;
      graph->num_workers = *fit;
      graph->max_workers = *fit;
    }
  } else {
    policy.max_workers = options.num_workers;
  }
  if (auto_buffers) {
    int64_t ram_budget = options.ram_budget_bytes;
    const bool ram_budget_set = ram_budget > 0;
    if (ram_budget <= 0) {
      const MemoryBudget available = AvailableMemory();
      ram_budget = available.known() ? available.bytes / 2 : std::numeric_limits<int64_t>::max();
    }
    GraphOptions one_buffer = *graph;
    one_buffer.prefetch_batches = 1;
    one_buffer.max_prefetch_batches = 0;
    const absl::StatusOr<MemoryPlan> one_buffer_plan = plan_memory(one_buffer);
    if (!one_buffer_plan.ok()) return one_buffer_plan.status();
    int most = BuffersWithin(*one_buffer_plan, resident_bytes, ram_budget);
    // The run's own budget (memory_limit_mb less the process's part, or what the process
    // may use) caps them too: auto started at two buffers whatever memory_limit_mb said,
    // and was refused where one fit (memory_limit_mb 128 over 2000 files).
    const MemoryBudget run_budget = PipelineGraph::Budget(*graph);
    if (run_budget.known()) {
      most = std::min(most, BuffersWithin(*one_buffer_plan, 0, run_budget.bytes));
    }
    if (most < 1) {
      // A limit the user set (memory_limit_mb), or what the process may use, that the one
      // buffer's plan does not fit either is the refusal Create would make: it names that
      // limit and the plan's own knobs, not an unset ram_budget's default (half of
      // MemAvailable, 10 GiB here, where memory_limit_mb 1024 was what did not fit).
      if (absl::Status fits = one_buffer_plan->CheckFits(run_budget); !fits.ok()) {
        return fits;
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          ram_budget_set ? "ram_budget " : "ram_budget (unset: half of MemAvailable) ",
          FormatBytes(ram_budget), " is below one batch buffer's plan (",
          FormatBytes(one_buffer_plan->total_bytes()), one_buffer_plan->LargestPartNote(),
          ", plus ", FormatBytes(resident_bytes), " the process holds): raise ram_budget or lower ",
          LargestPartKnob(*one_buffer_plan), " (flowloader plan lists every part)"));
    }
    policy.max_buffers = most;
    policy.min_buffers = std::min(kFirstAutoBuffers, most);
    graph->prefetch_batches = policy.min_buffers;
    graph->max_prefetch_batches = most;
  } else {
    policy.max_buffers = options.prefetch_batches;
    policy.min_buffers = options.prefetch_batches;
  }
  return plan;
}

AutotuneLoop::AutotuneLoop(PipelineGraph* graph, std::shared_ptr<PipelineStats> stats,
                           const AutotunePolicyOptions& policy, double window_seconds)
    : graph_(graph),
      stats_(std::move(stats)),
      policy_(WithReadAhead(policy, *stats_)),
      window_nanos_(static_cast<int64_t>(window_seconds * 1e9)) {
  thread_ = std::thread([this] { Run(); });
}

AutotuneLoop::~AutotuneLoop() { Stop(); }

AutotunePolicyOptions AutotuneLoop::WithReadAhead(AutotunePolicyOptions policy,
                                                  PipelineStats& stats) {
  if (stats.storage == nullptr) return policy;
  const ReadAheadFigures r = stats.storage->read_ahead();
  if (!r.present || !r.adaptive) return policy;  // Local data, or read_ahead=N: not ours.
  policy.tune_read_ahead = true;
  policy.min_read_ahead = r.min_in_flight;
  policy.max_read_ahead = r.max_in_flight;
  policy.read_ahead_bytes = r.max_bytes;
  stats.autotune.read_ahead.store(r.floor);
  return policy;
}

void AutotuneLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

AutotuneLoop::Totals AutotuneLoop::Read() const {
  Totals t;
  t.wall_nanos = SteadyNanos();
  // The waits after the first batch: the start-up wait is not the workers' doing.
  t.consumer_wait_seconds = stats_->steady_consumer_waits.Read().sum_seconds;
  for (const auto& stage : stats_->stages()) {
    if (stage->follows_num_workers()) {
      const int64_t busy = stage->busy_nanos.load(std::memory_order_relaxed);
      t.worker_busy_nanos += busy;
      // The read stage's busy time is the workers waiting for their bytes.
      if (stage->kind() == StageKind::kStorage) t.storage_busy_nanos += busy;
    }
  }
  if (stats_->storage != nullptr) {
    const StorageSchemeStats total = stats_->storage->Total();
    t.storage_requests = total.requests;
    t.storage_latency_seconds = total.latency_sum_seconds;
    t.storage_bytes = total.bytes;
  }
  if (const StageStats* source = stats_->Stage("source"); source != nullptr) {
    t.source_blocked_nanos = source->blocked_nanos.load(std::memory_order_relaxed);
  }
  t.cpu_nanos = ProcessCpuNanos();
  return t;
}

AutotuneWindow AutotuneLoop::Difference(const Totals& before, const Totals& after,
                                        int workers) const {
  AutotuneWindow w;
  const double wall = (after.wall_nanos - before.wall_nanos) / 1e9;
  w.seconds = wall;
  if (wall <= 0) return w;
  w.consumer_wait_fraction = (after.consumer_wait_seconds - before.consumer_wait_seconds) / wall;
  w.worker_busy_fraction =
      (after.worker_busy_nanos - before.worker_busy_nanos) / 1e9 / (std::max(1, workers) * wall);
  w.source_blocked_fraction =
      (after.source_blocked_nanos - before.source_blocked_nanos) / 1e9 / wall;
  w.cpu_cores = (after.cpu_nanos - before.cpu_nanos) / 1e9 / wall;
  w.storage_wait_fraction = (after.storage_busy_nanos - before.storage_busy_nanos) / 1e9 /
                            (std::max(1, workers) * wall);
  const int64_t requests = after.storage_requests - before.storage_requests;
  w.storage_requests_per_second = requests / wall;
  if (requests > 0) {
    w.storage_latency_seconds =
        (after.storage_latency_seconds - before.storage_latency_seconds) / requests;
    w.storage_bytes_per_request =
        static_cast<double>(after.storage_bytes - before.storage_bytes) / requests;
  }
  if (stats_->storage != nullptr) w.read_ahead_limit = stats_->storage->read_ahead().limit;
  return w;
}

void AutotuneLoop::Run() {
  Totals before = Read();
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, std::chrono::nanoseconds(window_nanos_),
                         [this] { return stopping_; })) {
    lock.unlock();
    const Totals after = Read();
    // Until the first batch is out, the run is starting up: nothing to judge yet.
    if (stats_->batches.load(std::memory_order_relaxed) > 0) {
      const int workers = graph_->workers();
      const AutotuneWindow window = Difference(before, after, workers);
      const std::optional<AutotuneChange> change =
          policy_.Decide(window, workers, graph_->prefetch_batches(),
                         stats_->autotune.read_ahead.load(std::memory_order_relaxed));
      if (change.has_value()) Apply(*change);
    }
    before = after;
    lock.lock();
  }
}

void AutotuneLoop::Apply(const AutotuneChange& change) {
  const bool workers = change.knob == kKnobNumWorkers;
  absl::Status status;
  if (change.knob == kKnobReadAhead) {
    if (stats_->storage == nullptr || !stats_->storage->SetReadAheadFloor(change.to)) {
      return;  // The read-ahead is gone (the run is ending): nothing to change.
    }
  } else {
    status = workers ? graph_->SetWorkers(change.to) : graph_->SetPrefetchBatches(change.to);
  }
  if (!status.ok()) {
    if (!workers) policy_.MarkBuffersFull(change.to);
    LogInfo(absl::StrCat("autotune: keeping ", change.knob, " at ", change.from, ": ",
                         status.message()));
    return;
  }
  const int64_t start = stats_->start_unix_nanos.load(std::memory_order_relaxed);
  AutotuneRecord record;
  record.seconds = (absl::GetCurrentTimeNanos() - start) / 1e9;
  record.knob = change.knob;
  record.from = change.from;
  record.to = change.to;
  record.reason = change.reason;
  stats_->autotune.Record(record);
}

}  // namespace flowloader
