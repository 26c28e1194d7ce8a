// synthetic_stats.cc: the synthetic "train" and "stuck" pipelines and their driver.
#include "exporters/testing/synthetic_stats.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"

namespace flowloader {
namespace exporters_testing {
namespace {

constexpr int64_t kReadBytes = 55'000;       // An ImageNet-like JPEG.
constexpr int64_t kDecodedBytes = 513'000;   // 450 x 380 x 3.
constexpr int64_t kCroppedBytes = 150'528;   // 224 x 224 x 3.
constexpr int64_t kEdgeCapacity = 16;
constexpr int64_t kHostBudget = int64_t{1} << 30;
constexpr int64_t kPinnedBudget = int64_t{256} << 20;

int64_t Nanos(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// Work records `items` through `s`, which was busy `busy_seconds` in total for them.
void Work(StageStats* s, uint64_t items_in, uint64_t items_out, int64_t bytes_per_item,
          double busy_seconds) {
  s->items_in.fetch_add(items_in, std::memory_order_relaxed);
  s->items_out.fetch_add(items_out, std::memory_order_relaxed);
  s->bytes.fetch_add(items_out * bytes_per_item, std::memory_order_relaxed);
  s->busy_nanos.fetch_add(Nanos(busy_seconds), std::memory_order_relaxed);
  if (items_in == 0) return;
  const int64_t per_item = Nanos(busy_seconds / items_in);
  for (uint64_t i = 0; i < items_in; ++i) s->latency.Observe(per_item);
}

// kAugmentOps are the synthetic augment stage's ops and their shares of its busy time.
constexpr struct {
  const char* name;
  double share;
} kAugmentOps[] = {{"random_resized_crop", 0.50}, {"color_jitter", 0.35}, {"normalize", 0.10}};

// AddAugmentOps gives `augment` op rows, as a transforms stage's OpCosts() would.
void AddAugmentOps(StageStats* augment) {
  std::vector<OpCostRow> rows;
  for (const auto& op : kAugmentOps) {
    rows.push_back({op.name, std::make_shared<std::atomic<int64_t>>(0),
                    std::make_shared<std::atomic<int64_t>>(0)});
  }
  augment->set_op_costs(std::move(rows));
}

// WorkOps adds `items` applications and their share of `busy_seconds` to each op row.
// The synthetic pipeline plays the stage that owns these counters, hence the casts.
void WorkOps(StageStats* augment, uint64_t items, double busy_seconds) {
  const std::vector<OpCostRow>& rows = augment->op_costs();
  for (size_t i = 0; i < rows.size(); ++i) {
    const_cast<std::atomic<int64_t>*>(rows[i].busy_nanos.get())
        ->fetch_add(Nanos(kAugmentOps[i].share * busy_seconds), std::memory_order_relaxed);
    const_cast<std::atomic<int64_t>*>(rows[i].applied.get())
        ->fetch_add(static_cast<int64_t>(items), std::memory_order_relaxed);
  }
}

void SetBuildInfo(PipelineStats* stats) {
  stats->build_info = {{"version", "0.1.0-synthetic"}, {"compiler", "gcc"}, {"cuda", "none"}};
}

}  // namespace

std::shared_ptr<PipelineStats> MakeTrainStats(absl::string_view name, absl::Time start) {
  auto stats = std::make_shared<PipelineStats>(std::string(name));
  stats->AddStage("reader", 1)->set_kind(StageKind::kStorage);
  stats->AddStage("decode", 2);
  AddAugmentOps(stats->AddStage("augment", 2));
  stats->AddStage("collate", 1);
  stats->AddStage("upload", 1)->set_kind(StageKind::kTransfer);
  stats->AddEdge("reader", "decode", kEdgeCapacity);
  stats->AddEdge("augment", "collate", kEdgeCapacity);
  stats->AddEdge("collate", "upload", 4);
  stats->start_unix_nanos = absl::ToUnixNanos(start);
  stats->host_bytes_budget = kHostBudget;
  stats->pinned_bytes_budget = kPinnedBudget;
  SetBuildInfo(stats.get());
  // The autotuner grew the workers once, as a num_workers: auto run would at start-up.
  stats->autotune.enabled = true;
  stats->autotune.prefetch_batches = 4;
  stats->autotune.num_workers = 1;
  stats->autotune.Record({0.4, kKnobNumWorkers, 1, 2, "the consumer waited 40.0%"});
  stats->storage = std::make_shared<StorageStats>();  // The reader's s3:// requests.
  return stats;
}

void AdvanceTrain(PipelineStats& stats, int samples, double seconds, absl::Time now) {
  const uint64_t n = static_cast<uint64_t>(samples);
  StageStats* decode = stats.Stage("decode");
  // Errors from cumulative counts, so any step size gives the same totals.
  const uint64_t before = decode->items_in.load(std::memory_order_relaxed);
  const auto failed = [](uint64_t in) {
    return static_cast<uint64_t>(in * kTrainDecodeErrorShare);
  };
  const uint64_t errors = failed(before + n) - failed(before);
  const uint64_t good = n - errors;

  Work(stats.Stage("reader"), n, n, kReadBytes, 0.30 * seconds);
  // One s3 GET of ~20 ms per sample, every 50th answered SlowDown first (then retried).
  // The StorageStats is the driver's own: made non-const here as the op counters are.
  auto* storage = const_cast<StorageStats*>(stats.storage.get());
  for (uint64_t i = 0; storage != nullptr && i < n; ++i) {
    const bool slowdown = (before + i) % 50 == 0;
    if (slowdown) storage->Record("s3", 5'000'000, 0, "SlowDown", false);
    storage->Record("s3", 15'000'000 + static_cast<int64_t>((before + i) % 11) * 1'000'000,
                    kReadBytes, "", slowdown);
  }
  Work(decode, n, good, kDecodedBytes, 2 * kTrainDecodeUtilization * seconds);
  decode->blocked_nanos.fetch_add(Nanos(2 * 0.02 * seconds), std::memory_order_relaxed);
  for (uint64_t i = 0; i < errors; ++i) decode->CountError("truncated");
  Work(stats.Stage("augment"), good, good, kCroppedBytes, 2 * 0.55 * seconds);
  WorkOps(stats.Stage("augment"), good, 2 * 0.55 * seconds);
  Work(stats.Stage("collate"), good, good, kCroppedBytes, 0.20 * seconds);
  Work(stats.Stage("upload"), good, good, kCroppedBytes, 0.10 * seconds);
  decode->in_flight.store(2, std::memory_order_relaxed);
  stats.Stage("augment")->in_flight.store(1, std::memory_order_relaxed);

  const uint64_t total = stats.samples.fetch_add(good, std::memory_order_relaxed) + good;
  stats.skipped.fetch_add(errors, std::memory_order_relaxed);
  stats.batches.store(total / kTrainBatchSize, std::memory_order_relaxed);
  stats.epoch.store(static_cast<int64_t>(total / 50'000), std::memory_order_relaxed);
  stats.consumer_wait_nanos.fetch_add(Nanos(kTrainConsumerWaitShare * seconds),
                                      std::memory_order_relaxed);
  stats.last_batch_unix_nanos.store(absl::ToUnixNanos(now), std::memory_order_relaxed);
  int64_t depth = static_cast<int64_t>(total % 7);
  for (const auto& e : stats.edges()) {
    e->depth.store(std::min(depth, e->capacity), std::memory_order_relaxed);
    depth += 3;
  }
  stats.host_bytes_in_flight.store(kHostBudget / 10 * 7, std::memory_order_relaxed);
  stats.pinned_bytes_in_flight.store(kPinnedBudget / 2, std::memory_order_relaxed);
}

std::shared_ptr<PipelineStats> MakeStuckStats(absl::string_view name, absl::Time now) {
  auto stats = std::make_shared<PipelineStats>(std::string(name));
  StageStats* reader = stats->AddStage("reader", 1);
  reader->set_kind(StageKind::kStorage);
  StageStats* decode = stats->AddStage("decode", 2);
  StageStats* collate = stats->AddStage("collate", 1);
  stats->AddEdge("reader", "decode", 8)->depth = 8;  // Full: the reader waits on decode.
  stats->AddEdge("decode", "collate", 8);
  stats->start_unix_nanos = absl::ToUnixNanos(now - absl::Hours(1));
  stats->last_batch_unix_nanos = absl::ToUnixNanos(now - absl::Minutes(10));
  Work(reader, 6410, 6410, kReadBytes, 300);
  Work(decode, 6402, 6400, kDecodedBytes, 2900);
  decode->in_flight = 2;  // The two items that never came back.
  Work(collate, 6400, 6400, kCroppedBytes, 60);
  stats->samples = 6400;
  stats->batches = 100;
  stats->consumer_wait_nanos = Nanos(1800);
  stats->host_bytes_budget = kHostBudget;
  stats->host_bytes_in_flight = kHostBudget / 4;
  SetBuildInfo(stats.get());
  return stats;
}

SyntheticDriver::SyntheticDriver(std::vector<std::shared_ptr<PipelineStats>> train,
                                 absl::Duration step)
    : train_(std::move(train)), step_(step), thread_([this] { Run(); }) {}

SyntheticDriver::~SyntheticDriver() {
  stop_.Notify();
  thread_.join();
}

void SyntheticDriver::Run() {
  absl::Time last = absl::Now();
  double owed = 0;  // Fractional samples carried to the next step.
  while (!stop_.WaitForNotificationWithTimeout(step_)) {
    const absl::Time now = absl::Now();
    const double seconds = absl::ToDoubleSeconds(now - last);
    last = now;
    owed += seconds * kTrainSamplesPerSecond;
    const int samples = static_cast<int>(owed);
    owed -= samples;
    for (const auto& stats : train_) AdvanceTrain(*stats, samples, seconds, now);
  }
}

}  // namespace exporters_testing
}  // namespace flowloader
