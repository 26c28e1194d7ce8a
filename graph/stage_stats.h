// stage_stats.h: what every stage and pipeline counts, as plain atomics.
//
// Stage bodies update these on the hot path (relaxed atomics, no locks except the rare
// error-by-reason map); exporters/ and the CLI's report read snapshots at their own pace.
// Nothing here knows Prometheus or oneTBB: the graph records, exporters translate.
//
// Thread-safety: every member may be updated and read concurrently. Names, concurrency
// limits and capacities are constant after the pipeline is built.
#ifndef FLOWLOADER_GRAPH_STAGE_STATS_H_
#define FLOWLOADER_GRAPH_STAGE_STATS_H_

#include <mutex>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "graph/autotune_stats.h"
#include "stages/reader/storage_stats.h"

namespace flowloader {

// LatencyHistogram counts per-item latencies in fixed buckets (seconds, upper bounds).
class LatencyHistogram {
 public:
  // Upper bounds in seconds: 50 µs … 10 s, roughly ×2.5 apart; a last bucket is +Inf.
  static constexpr std::array<double, 14> kBounds = {
      0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
      0.01,    0.025,  0.05,    0.1,    0.25,  1.0,    10.0};

  void Observe(int64_t nanos);

  struct Snapshot {
    std::array<uint64_t, kBounds.size() + 1> counts{};  // Not cumulative; last is +Inf.
    uint64_t count = 0;
    double sum_seconds = 0;
  };
  Snapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_nanos_{0};
};

// WaitSpread accumulates the consumer's per-batch waits (count, sum, sum of squares),
// enough for their mean and coefficient of variation: whether batches arrive evenly.
class WaitSpread {
 public:
  void Observe(int64_t nanos);

  struct Snapshot {
    uint64_t count = 0;
    double sum_seconds = 0;
    double sum_squares = 0;  // Of the waits in seconds: s².
  };
  Snapshot Read() const;

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<int64_t> sum_nanos_{0};
  // µs², so a 1 s wait adds 1e12 and 2^64 holds 1.8e7 s² (int64 ns² would overflow
  // after nine 1 s waits).
  std::atomic<uint64_t> sum_squared_micros_{0};
};

// OpCostRow is one part of a stage's work counted on its own: an op of a `transforms`
// stage's list, or the fused head that runs several ops in one pass (named "a+b+c").
// The stage updates the counters on its hot path (relaxed adds); the pointers share
// ownership of them with the stage, so a report may outlive the stage that counted.
struct OpCostRow {
  std::string name;  // The op, unique within its stage ("color_jitter#2" for a repeat).
  std::shared_ptr<const std::atomic<int64_t>> busy_nanos;  // Summed over threads.
  std::shared_ptr<const std::atomic<int64_t>> applied;     // Samples the op changed.
};

// StageKind is what a stage's work is, as its type declares it (StageSchema::kind); it
// decides which advice fits when the stage is saturated.
enum class StageKind {
  kStorage,   // Reads bytes: saturation means the storage is the limit, not the CPU.
  kCompute,   // Decode, augment, collate: CPU work.
  kTransfer,  // Pinning and host-to-device copies.
};

// StageStats is one stage's counters.
class StageStats {
 public:
  StageStats(std::string name, int concurrency)
      : name_(std::move(name)), concurrency_(concurrency) {}

  const std::string& name() const { return name_; }
  // concurrency is the stage's limit on parallel bodies (num_workers for decode/augment).
  int concurrency() const { return concurrency_; }
  // worker_group names the stages that run one after another on the same workers (one
  // graph node, e.g. read+decode+augment): their busy times add up against the same
  // concurrency × wall. Empty: the stage has its own workers. Set while building.
  const std::string& worker_group() const { return worker_group_; }
  void set_worker_group(std::string group) { worker_group_ = std::move(group); }
  // follows_num_workers: the stage's concurrency is num_workers (no fixed concurrency of
  // its own or its spec's), so raising num_workers raises it. False for the graph's own
  // serial stages (source, collate, upload). Set while building.
  bool follows_num_workers() const { return follows_num_workers_; }
  void set_follows_num_workers(bool follows) { follows_num_workers_ = follows; }
  // kind is what the stage's work is (its type's StageSchema::kind; upload is a
  // transfer, the graph's other own stages compute). Set while building.
  StageKind kind() const { return kind_; }
  void set_kind(StageKind kind) { kind_ = kind; }
  // type is the stage's registered type (StageSpec::type: "decode", a user's type), which
  // its user-chosen name need not contain; empty for the graph's own stages. Set while
  // building.
  const std::string& type() const { return type_; }
  void set_type(std::string type) { type_ = std::move(type); }
  // op_costs are the stage's parts with their own counters (SampleStage::OpCosts), in
  // run order; empty for a stage without parts. Set while building.
  const std::vector<OpCostRow>& op_costs() const { return op_costs_; }
  void set_op_costs(std::vector<OpCostRow> rows) { op_costs_ = std::move(rows); }

  std::atomic<uint64_t> items_in{0};
  std::atomic<uint64_t> items_out{0};
  std::atomic<uint64_t> bytes{0};         // Bytes produced (read, decoded, written).
  std::atomic<int64_t> busy_nanos{0};     // Summed over parallel bodies.
  std::atomic<int64_t> blocked_nanos{0};  // Waiting on downstream / free batch buffers.
  std::atomic<int64_t> in_flight{0};      // Items inside the body right now.
  LatencyHistogram latency;               // Per item.

  // CountError adds one error with `reason` (a low-cardinality tag).
  void CountError(absl::string_view reason);
  std::map<std::string, uint64_t> Errors() const;
  uint64_t TotalErrors() const;

 private:
  const std::string name_;
  const int concurrency_;
  std::string worker_group_;
  bool follows_num_workers_ = false;
  StageKind kind_ = StageKind::kCompute;
  std::string type_;
  std::vector<OpCostRow> op_costs_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> errors_ ABSL_GUARDED_BY(mu_);
};

// EdgeStats is the occupancy of one bounded hand-off between stages.
struct EdgeStats {
  EdgeStats(std::string from_stage, std::string to_stage, int64_t capacity)
      : from(std::move(from_stage)), to(std::move(to_stage)), capacity(capacity) {}
  const std::string from;
  const std::string to;
  const int64_t capacity;  // Items; the bound that keeps memory flat.
  std::atomic<int64_t> depth{0};
};

// TraceBuffer records per-stage spans for a bounded window: the first `capacity` spans
// of the run, then nothing more (a full buffer costs one relaxed load per span). Written
// out as a Chrome/Perfetto trace by exporters/trace.h.
class TraceBuffer {
 public:
  struct Span {
    int32_t stage = 0;     // Index into PipelineStats::stages(), or -1 for the consumer.
    uint32_t thread = 0;   // A small per-thread number.
    int64_t start_nanos = 0;  // steady_clock.
    int64_t duration_nanos = 0;
    int64_t item = 0;      // Sample index, or batch sequence for batch stages.
    int32_t op = -1;       // Index into the stage's op_costs() for an op's span, or -1.
  };
  explicit TraceBuffer(size_t capacity) : spans_(capacity) {}

  // op >= 0 records one op's span inside the stage's (the stage's op_costs()[op]).
  void Record(int32_t stage, int64_t start_nanos, int64_t duration_nanos, int64_t item,
              int32_t op = -1);
  // Spans returns the recorded spans (call after the pipeline stopped, or accept that the
  // last few may be half-written).
  std::vector<Span> Spans() const;
  size_t capacity() const { return spans_.size(); }

 private:
  std::vector<Span> spans_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> done_{0};
};

// PipelineStats is everything one pipeline reports.
class PipelineStats {
 public:
  explicit PipelineStats(std::string pipeline) : pipeline_(std::move(pipeline)) {}

  const std::string& pipeline() const { return pipeline_; }

  // AddStage / AddEdge are called while the graph is built, before any item flows.
  StageStats* AddStage(const std::string& name, int concurrency);
  EdgeStats* AddEdge(const std::string& from, const std::string& to, int64_t capacity);
  // Stage returns the stage named `name`, or nullptr.
  StageStats* Stage(absl::string_view name) const;
  const std::vector<std::unique_ptr<StageStats>>& stages() const { return stages_; }
  const std::vector<std::unique_ptr<EdgeStats>>& edges() const { return edges_; }

  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> samples{0};
  // Samples skipped, counted when their batch is delivered (so an epoch's count never
  // holds the next epoch's samples that workers finished ahead), and their reasons.
  std::atomic<uint64_t> skipped{0};
  // CountSkip adds one delivered skip with `reason`; also used for the batch-level errors
  // that end a run (a batch op's, the upload's), which belong to no sample's epoch.
  void CountSkip(absl::string_view reason);
  std::map<std::string, uint64_t> SkipReasons() const;
  // Whether the graph counts skips by reason at delivery (CountSkip): the summary's
  // "errors" then come from SkipReasons, not from the stages' counters (which count when
  // a sample is processed, the next epoch's read-ahead included).
  std::atomic<bool> counts_skips{false};
  std::atomic<int64_t> epoch{0};
  std::atomic<int64_t> consumer_wait_nanos{0};   // Time Next() blocked: the GPU starving.
  // The same waits one by one, after the first batch (whose wait is the start-up).
  WaitSpread steady_consumer_waits;
  std::atomic<int64_t> last_batch_unix_nanos{0};  // Wall clock of the last delivery.
  std::atomic<int64_t> start_unix_nanos{0};       // When the pipeline started.
  std::atomic<int64_t> host_bytes_in_flight{0};
  std::atomic<int64_t> host_bytes_budget{0};
  std::atomic<int64_t> pinned_bytes_in_flight{0};
  std::atomic<int64_t> pinned_bytes_budget{0};

  // Build information, shown as labels of a constant gauge. Set before the first item.
  std::map<std::string, std::string> build_info;
  // The memory plan the pipeline was created with, in bytes by part ("batch_pool_bytes",
  // ..., "pinned_bytes", "total_bytes", "available_bytes" (-1 = unknown)), for the run
  // summary and tuning. Set before the first item.
  std::vector<std::pair<std::string, int64_t>> memory_plan;

  // Remote storage's requests, bytes, retries, errors by code and latency, by scheme
  // (the dataset's StorageEnv counts them); null when the data has no StorageEnv. Set
  // before the first item.
  std::shared_ptr<const StorageStats> storage;

  // What the online autotuner chose and why (autotune.enabled when a knob is auto).
  AutotuneStats autotune;

  // Weighted sources (PipelineOptions::sources): their names by number, set once before
  // the first item ({"default"} for one source), and the samples delivered from each.
  void SetSources(std::vector<std::string> names);
  std::vector<std::string> source_names;
  // CountSources adds one delivered sample per entry of `sources` (Batch::sources).
  void CountSources(const std::vector<int32_t>& sources);
  // SourceSamples returns (name, samples delivered) per source, in source order.
  std::vector<std::pair<std::string, uint64_t>> SourceSamples() const;

  // Span trace, when enabled (set before the first item; nullptr = off).
  std::unique_ptr<TraceBuffer> trace;
  // StageIndex returns the position of `stage` in stages(), or -1.
  int32_t StageIndex(const StageStats* stage) const;

 private:
  const std::string pipeline_;
  std::vector<std::unique_ptr<StageStats>> stages_;
  std::vector<std::unique_ptr<EdgeStats>> edges_;
  std::unique_ptr<std::atomic<uint64_t>[]> source_samples_;  // source_names.size() of them.
  mutable std::mutex skips_mu_;
  std::map<std::string, uint64_t> skip_reasons_ ABSL_GUARDED_BY(skips_mu_);
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_STAGE_STATS_H_
