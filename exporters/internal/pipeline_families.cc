// pipeline_families.cc: the metric catalogue and the stats → MetricFamily translation.
#include "exporters/internal/pipeline_families.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"
#include "stages/core/sample_error.h"

namespace flowloader {
namespace exporters_internal {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Family indexes NewFamilies(); the order of the enum is the exposition order.
enum Family : int {
  kStageItemsIn,
  kStageItemsOut,
  kStageBytes,
  kStageBusy,
  kStageIdle,
  kStageBlocked,
  kStageInFlight,
  kStageConcurrency,
  kStageErrors,
  kStageLatency,
  kOpBusy,
  kOpApplied,
  kBatches,
  kSamples,
  kSkipped,
  kSourceSamples,
  kEpoch,
  kConsumerWait,
  kStartTime,
  kUptime,
  kLastBatch,
  kHostInFlight,
  kHostBudget,
  kPinnedInFlight,
  kPinnedBudget,
  kQueueDepth,
  kQueueCapacity,
  kAutotuneValue,
  kAutotuneDecisions,
  kStorageRequests,
  kStorageBytes,
  kStorageRetries,
  kStorageErrors,
  kStorageLatency,
  kBuildInfo,
  kNumFamilies,
};

struct FamilySpec {
  Family id;
  const char* name;
  MetricType type;
  const char* help;
};

// kSpecs is the catalogue; HELP says what a number means and, for derived ones, how it
// is derived. ASCII only, so every scraper and terminal shows it unchanged.
constexpr FamilySpec kSpecs[] = {
    {kStageItemsIn, "flowloader_stage_items_in_total", MetricType::Counter,
     "Items that entered the stage."},
    {kStageItemsOut, "flowloader_stage_items_out_total", MetricType::Counter,
     "Items the stage passed downstream."},
    {kStageBytes, "flowloader_stage_bytes_total", MetricType::Counter,
     "Bytes the stage produced (read, decoded or written)."},
    {kStageBusy, "flowloader_stage_busy_seconds_total", MetricType::Counter,
     "Seconds the stage's bodies spent working, summed over parallel workers."},
    {kStageIdle, "flowloader_stage_idle_seconds_total", MetricType::Counter,
     "Seconds the stage's workers waited for input (starved): concurrency x uptime - "
     "busy - blocked, never negative."},
    {kStageBlocked, "flowloader_stage_blocked_seconds_total", MetricType::Counter,
     "Seconds the stage waited on downstream or for a free batch buffer."},
    {kStageInFlight, "flowloader_stage_in_flight", MetricType::Gauge,
     "Items inside the stage's body right now."},
    {kStageConcurrency, "flowloader_stage_concurrency", MetricType::Gauge,
     "Limit on the stage's parallel bodies (num_workers for decode and augment)."},
    {kStageErrors, "flowloader_stage_errors_total", MetricType::Counter,
     "Items the stage failed, by reason."},
    {kStageLatency, "flowloader_stage_latency_seconds", MetricType::Histogram,
     "Seconds one item spent in the stage's body."},
    {kOpBusy, "flowloader_op_busy_seconds_total", MetricType::Counter,
     "Seconds one op of a stage's op list spent working, summed over workers; part of the "
     "stage's busy seconds (a fused head's ops are one op named a+b+c)."},
    {kOpApplied, "flowloader_op_applied_total", MetricType::Counter,
     "Samples one op of a stage's op list ran on (fewer than the stage's items when the "
     "op's p is under 1)."},
    {kBatches, "flowloader_batches_total", MetricType::Counter,
     "Batches delivered to the consumer."},
    {kSamples, "flowloader_samples_total", MetricType::Counter,
     "Samples delivered to the consumer inside batches."},
    {kSkipped, "flowloader_samples_skipped_total", MetricType::Counter,
     "Samples dropped by the error policy (see flowloader_stage_errors_total)."},
    {kSourceSamples, "flowloader_source_samples_total", MetricType::Counter,
     "Samples delivered to the consumer, by the source they came from (weighted sources; "
     "one source is named default)."},
    {kEpoch, "flowloader_epoch", MetricType::Gauge, "Epoch being delivered (0-based)."},
    {kConsumerWait, "flowloader_consumer_wait_seconds_total", MetricType::Counter,
     "Seconds the consumer blocked in Next() waiting for a batch (the GPU starving)."},
    {kStartTime, "flowloader_start_time_seconds", MetricType::Gauge,
     "Unix time the pipeline started, in seconds."},
    {kUptime, "flowloader_uptime_seconds", MetricType::Gauge,
     "Seconds since the pipeline started (0 before it starts)."},
    {kLastBatch, "flowloader_last_batch_timestamp_seconds", MetricType::Gauge,
     "Unix time of the last batch delivered, in seconds (0 before the first)."},
    {kHostInFlight, "flowloader_host_bytes_in_flight", MetricType::Gauge,
     "Host memory held by samples and batches in the pipeline, in bytes."},
    {kHostBudget, "flowloader_host_bytes_budget", MetricType::Gauge,
     "Host memory the pipeline may hold (prefetch x batch bytes), in bytes."},
    {kPinnedInFlight, "flowloader_pinned_bytes_in_flight", MetricType::Gauge,
     "Pinned (page-locked) host memory in use by batch buffers, in bytes."},
    {kPinnedBudget, "flowloader_pinned_bytes_budget", MetricType::Gauge,
     "Pinned host memory the pipeline may hold, in bytes."},
    {kQueueDepth, "flowloader_queue_depth", MetricType::Gauge,
     "Items waiting in the bounded hand-off between two stages."},
    {kQueueCapacity, "flowloader_queue_capacity", MetricType::Gauge,
     "Capacity of the bounded hand-off between two stages, in items."},
    {kAutotuneValue, "flowloader_autotune_value", MetricType::Gauge,
     "Value the online autotuner has set for a knob (num_workers, prefetch_batches, "
     "read_ahead: the remote reads kept in flight at least), or the knob's fixed value "
     "where it is not on auto."},
    {kAutotuneDecisions, "flowloader_autotune_decisions_total", MetricType::Counter,
     "Changes the online autotuner made, by knob and direction (up, down)."},
    {kStorageRequests, "flowloader_storage_requests_total", MetricType::Counter,
     "Requests sent to remote storage (s3, http, https), retries included, by scheme."},
    {kStorageBytes, "flowloader_storage_bytes_total", MetricType::Counter,
     "Body bytes received from remote storage in successful responses, by scheme."},
    {kStorageRetries, "flowloader_storage_retries_total", MetricType::Counter,
     "Requests to remote storage that retried a failed one, by scheme."},
    {kStorageErrors, "flowloader_storage_errors_total", MetricType::Counter,
     "Failed requests to remote storage by scheme and code: the S3 error code "
     "(SlowDown, NoSuchKey, AccessDenied, ...), http_STATUS without one, or the transport's "
     "(timeout, connection_reset, connection_closed, connection_refused, truncated_body)."},
    {kStorageLatency, "flowloader_storage_request_duration_seconds", MetricType::Histogram,
     "Seconds one request to remote storage took, from sending to its last byte, by scheme "
     "(its count equals flowloader_storage_requests_total)."},
    {kBuildInfo, "flowloader_build_info", MetricType::Gauge,
     "Always 1; labels carry the flowloader version and build facts."},
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == kNumFamilies,
              "every Family needs a FamilySpec");

constexpr double kNanosToSeconds = 1e-9;

double Seconds(int64_t nanos) { return static_cast<double>(nanos) * kNanosToSeconds; }

ClientMetric WithLabels(std::vector<ClientMetric::Label> labels) {
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

void AddCounter(MetricFamily* f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m = WithLabels(std::move(labels));
  m.counter.value = value;
  f->metric.push_back(std::move(m));
}

void AddGauge(MetricFamily* f, std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m = WithLabels(std::move(labels));
  m.gauge.value = value;
  f->metric.push_back(std::move(m));
}

// AddHistogram adds one histogram series: `counts` per bucket (not cumulative), the
// bucket after the last of `bounds` being +Inf.
void AddHistogram(MetricFamily* f, std::vector<ClientMetric::Label> labels, uint64_t count,
                  double sum_seconds, absl::Span<const uint64_t> counts,
                  absl::Span<const double> bounds) {
  ClientMetric m = WithLabels(std::move(labels));
  m.histogram.sample_count = count;
  m.histogram.sample_sum = sum_seconds;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    // The last bucket is +Inf; giving it explicitly stops the serializer adding another.
    b.upper_bound = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back(b);
  }
  f->metric.push_back(std::move(m));
}

void AddLatency(MetricFamily* f, std::vector<ClientMetric::Label> labels,
                const LatencyHistogram::Snapshot& snap) {
  AddHistogram(f, std::move(labels), snap.count, snap.sum_seconds, snap.counts,
               LatencyHistogram::kBounds);
}

// AddErrors exports every built-in reason, 0 until counted, as Prometheus' guidance asks
// of label values known in advance: a clean run's error panels then read 0, not "no
// data", and increase() sees the first error instead of a series that starts at 1.
// Reasons only known at run time (a user stage's own) join when first counted.
void AddErrors(const std::string& pipeline, const StageStats& s, MetricFamily* f) {
  std::map<std::string, uint64_t> errors = s.Errors();
  for (absl::string_view r : reason::kBuiltin) errors.emplace(r, 0);  // Keeps counts.
  for (const auto& [r, n] : errors) {
    AddCounter(f, {{"pipeline", pipeline}, {"stage", s.name()}, {"reason", r}}, n);
  }
}

void AppendStages(const PipelineStats& stats, double uptime_seconds, MonotonicState* state,
                  std::vector<MetricFamily>* fams) {
  auto& f = *fams;
  const std::string& pipeline = stats.pipeline();
  state->stage_idle_seconds.resize(stats.stages().size(), 0.0);
  for (size_t i = 0; i < stats.stages().size(); ++i) {
    const StageStats& s = *stats.stages()[i];
    const std::vector<ClientMetric::Label> labels = {{"pipeline", pipeline},
                                                     {"stage", s.name()}};
    const double busy = Seconds(s.busy_nanos.load(std::memory_order_relaxed));
    const double blocked = Seconds(s.blocked_nanos.load(std::memory_order_relaxed));
    const double idle_now =
        std::max(0.0, s.concurrency() * uptime_seconds - busy - blocked);
    double& idle = state->stage_idle_seconds[i];
    idle = std::max(idle, idle_now);

    AddCounter(&f[kStageItemsIn], labels, s.items_in.load(std::memory_order_relaxed));
    AddCounter(&f[kStageItemsOut], labels, s.items_out.load(std::memory_order_relaxed));
    AddCounter(&f[kStageBytes], labels, s.bytes.load(std::memory_order_relaxed));
    AddCounter(&f[kStageBusy], labels, busy);
    AddCounter(&f[kStageIdle], labels, idle);
    AddCounter(&f[kStageBlocked], labels, blocked);
    AddGauge(&f[kStageInFlight], labels, s.in_flight.load(std::memory_order_relaxed));
    AddGauge(&f[kStageConcurrency], labels, s.concurrency());
    AddErrors(pipeline, s, &f[kStageErrors]);
    AddLatency(&f[kStageLatency], labels, s.latency.Read());
    for (const OpCostRow& op : s.op_costs()) {
      const std::vector<ClientMetric::Label> op_labels = {
          {"pipeline", pipeline}, {"stage", s.name()}, {"op", op.name}};
      AddCounter(&f[kOpBusy], op_labels,
                 Seconds(op.busy_nanos->load(std::memory_order_relaxed)));
      AddCounter(&f[kOpApplied], op_labels,
                 static_cast<double>(op.applied->load(std::memory_order_relaxed)));
    }
  }
}

// AppendAutotune adds the autotuner's knob values and its decisions by direction.
void AppendAutotune(const PipelineStats& stats, std::vector<MetricFamily>* families) {
  auto& f = *families;
  const AutotuneStats& a = stats.autotune;
  AddGauge(&f[kAutotuneValue], {{"pipeline", stats.pipeline()}, {"knob", kKnobNumWorkers}},
           a.num_workers.load());
  AddGauge(&f[kAutotuneValue],
           {{"pipeline", stats.pipeline()}, {"knob", kKnobPrefetchBatches}},
           a.prefetch_batches.load());
  if (const int floor = a.read_ahead.load(); floor > 0) {  // Tuned: remote reads, auto.
    AddGauge(&f[kAutotuneValue], {{"pipeline", stats.pipeline()}, {"knob", kKnobReadAhead}},
             floor);
  }
  for (const auto& [key, count] : a.Counts()) {
    AddCounter(&f[kAutotuneDecisions],
               {{"pipeline", stats.pipeline()}, {"knob", key.first}, {"direction", key.second}},
               static_cast<double>(count));
  }
}

// kStorageCodes are exported at 0 until counted (as AddErrors does for reasons), so a
// clean run's storage error panel reads 0 for the codes that matter most.
constexpr absl::string_view kStorageCodes[] = {
    "timeout", "connection_reset", "connection_closed", "truncated_body"};
constexpr absl::string_view kS3Codes[] = {"SlowDown", "InternalError", "ServiceUnavailable",
                                          "NoSuchKey", "AccessDenied"};

// AppendStorage adds remote storage's requests, bytes, retries, errors and latency, by
// scheme. A pipeline that has sent no remote request yet (local data) exports the
// families at 0 under scheme "none", so the dashboard's storage panels read 0 rather than
// No data, as every panel answers for every pipeline.
void AppendStorage(const PipelineStats& stats, std::vector<MetricFamily>* families) {
  auto& f = *families;
  std::vector<StorageSchemeStats> schemes;
  if (stats.storage != nullptr) schemes = stats.storage->Read();
  if (schemes.empty()) {
    schemes.emplace_back();
    schemes.back().scheme = "none";
  }
  for (const StorageSchemeStats& s : schemes) {
    const std::vector<ClientMetric::Label> labels = {{"pipeline", stats.pipeline()},
                                                     {"scheme", s.scheme}};
    AddCounter(&f[kStorageRequests], labels, static_cast<double>(s.requests));
    AddCounter(&f[kStorageBytes], labels, static_cast<double>(s.bytes));
    AddCounter(&f[kStorageRetries], labels, static_cast<double>(s.retries));
    std::map<std::string, int64_t> errors = s.errors;
    for (absl::string_view code : kStorageCodes) errors.emplace(code, 0);  // Keeps counts.
    if (s.scheme == "s3") {
      for (absl::string_view code : kS3Codes) errors.emplace(code, 0);
    }
    for (const auto& [code, n] : errors) {
      AddCounter(&f[kStorageErrors],
                 {{"pipeline", stats.pipeline()}, {"scheme", s.scheme}, {"code", code}},
                 static_cast<double>(n));
    }
    AddHistogram(&f[kStorageLatency], labels, static_cast<uint64_t>(s.requests),
                 s.latency_sum_seconds, s.buckets, StorageSchemeStats::kBounds);
  }
}

void AppendBuildInfo(const PipelineStats& stats, MetricFamily* f) {
  std::vector<ClientMetric::Label> labels = {{"pipeline", stats.pipeline()}};
  auto version = stats.build_info.find("version");
  labels.push_back(
      {"version", version == stats.build_info.end() ? "unknown" : version->second});
  // Keys are sanitised; a key that collides with one already used is dropped rather
  // than emitting a duplicate label (which would make the whole scrape fail).
  for (const auto& [key, value] : stats.build_info) {
    const std::string name = SanitizeLabelName(key);
    if (name.empty()) continue;
    const bool taken = std::any_of(labels.begin(), labels.end(),
                                   [&](const auto& l) { return l.name == name; });
    if (!taken) labels.push_back({name, value});
  }
  AddGauge(f, std::move(labels), 1);
}

}  // namespace

std::vector<MetricFamily> NewFamilies() {
  std::vector<MetricFamily> families(kNumFamilies);
  for (const FamilySpec& spec : kSpecs) {
    MetricFamily& f = families[spec.id];
    f.name = spec.name;
    f.help = spec.help;
    f.type = spec.type;
  }
  return families;
}

void AppendPipeline(const PipelineStats& stats, absl::Time now, MonotonicState* state,
                    std::vector<MetricFamily>* families) {
  auto& f = *families;
  const int64_t start_nanos = stats.start_unix_nanos.load(std::memory_order_relaxed);
  const double uptime =
      start_nanos > 0 ? std::max(0.0, absl::ToDoubleSeconds(
                                          now - absl::FromUnixNanos(start_nanos)))
                      : 0.0;
  AppendStages(stats, uptime, state, families);

  const std::vector<ClientMetric::Label> p = {{"pipeline", stats.pipeline()}};
  AddCounter(&f[kBatches], p, stats.batches.load(std::memory_order_relaxed));
  AddCounter(&f[kSamples], p, stats.samples.load(std::memory_order_relaxed));
  AddCounter(&f[kSkipped], p, stats.skipped.load(std::memory_order_relaxed));
  for (const auto& [source, n] : stats.SourceSamples()) {
    AddCounter(&f[kSourceSamples], {{"pipeline", stats.pipeline()}, {"source", source}}, n);
  }
  AddGauge(&f[kEpoch], p, stats.epoch.load(std::memory_order_relaxed));
  AddCounter(&f[kConsumerWait], p,
             Seconds(stats.consumer_wait_nanos.load(std::memory_order_relaxed)));
  AddGauge(&f[kStartTime], p, Seconds(start_nanos));
  AddGauge(&f[kUptime], p, uptime);
  AddGauge(&f[kLastBatch], p,
           Seconds(stats.last_batch_unix_nanos.load(std::memory_order_relaxed)));
  AddGauge(&f[kHostInFlight], p, stats.host_bytes_in_flight.load(std::memory_order_relaxed));
  AddGauge(&f[kHostBudget], p, stats.host_bytes_budget.load(std::memory_order_relaxed));
  AddGauge(&f[kPinnedInFlight], p,
           stats.pinned_bytes_in_flight.load(std::memory_order_relaxed));
  AddGauge(&f[kPinnedBudget], p, stats.pinned_bytes_budget.load(std::memory_order_relaxed));
  for (const auto& e : stats.edges()) {
    const std::vector<ClientMetric::Label> labels = {
        {"pipeline", stats.pipeline()}, {"from", e->from}, {"to", e->to}};
    AddGauge(&f[kQueueDepth], labels, e->depth.load(std::memory_order_relaxed));
    AddGauge(&f[kQueueCapacity], labels, e->capacity);
  }
  // Fixed knobs too (their values, 0 changes): the dashboard's autotune panel answers for
  // every pipeline (train.yaml's fixed num_workers read No data). Stats a Pipeline has
  // not set up (no knob value yet) have nothing to say.
  if (stats.autotune.enabled.load() || stats.autotune.num_workers.load() > 0) {
    AppendAutotune(stats, families);
  }
  AppendStorage(stats, families);
  AppendBuildInfo(stats, &f[kBuildInfo]);
}

void DropEmptyFamilies(std::vector<MetricFamily>* families) {
  families->erase(std::remove_if(families->begin(), families->end(),
                                 [](const MetricFamily& f) { return f.metric.empty(); }),
                  families->end());
}

std::string SanitizeLabelName(absl::string_view key) {
  std::string name;
  name.reserve(key.size() + 1);
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_';
    name.push_back(ok ? c : '_');
  }
  if (!name.empty() && name[0] >= '0' && name[0] <= '9') name.insert(0, "_");
  // "__" names are reserved for Prometheus itself.
  if (name.empty() || name.rfind("__", 0) == 0) return "";
  return name;
}

}  // namespace exporters_internal
}  // namespace flowloader
