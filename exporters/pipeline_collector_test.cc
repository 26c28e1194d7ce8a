// pipeline_collector_test.cc: PipelineCollector's families: values, label sets, histogram
// cumulativity, derived idle time, registration lifetime, naming conventions.
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "exporters/metrics_exporter.h"
#include "gmock/gmock.h"
#include "graph/stage_stats.h"
#include "gtest/gtest.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"
#include "stages/core/sample_error.h"

namespace flowloader {
namespace {

using ::prometheus::ClientMetric;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

using Labels = std::map<std::string, std::string>;

Labels LabelsOf(const ClientMetric& m) {
  Labels out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

const MetricFamily* FindFamily(const std::vector<MetricFamily>& families,
                               const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// FindMetric returns the series of `name` whose labels are exactly `labels`.
const ClientMetric* FindMetric(const std::vector<MetricFamily>& families,
                               const std::string& name, const Labels& labels) {
  const MetricFamily* f = FindFamily(families, name);
  if (f == nullptr) return nullptr;
  for (const auto& m : f->metric) {
    if (LabelsOf(m) == labels) return &m;
  }
  return nullptr;
}

class PipelineCollectorTest : public ::testing::Test {
 protected:
  PipelineCollectorTest()
      : collector_([this] { return now_; }), stats_(std::make_shared<PipelineStats>("p")) {
    reader_ = stats_->AddStage("reader", 1);
    decode_ = stats_->AddStage("decode", 2);
    edge_ = stats_->AddEdge("reader", "decode", 8);
    stats_->start_unix_nanos = absl::ToUnixNanos(now_ - absl::Seconds(10));
  }

  // Counter / Gauge scrape once and return one series' value (NaN if absent).
  double Counter(const std::string& name, const Labels& labels) {
    const std::vector<MetricFamily> families = collector_.Collect();
    const ClientMetric* m = FindMetric(families, name, labels);
    EXPECT_NE(m, nullptr) << name;
    return m == nullptr ? std::nan("") : m->counter.value;
  }
  double Gauge(const std::string& name, const Labels& labels) {
    const std::vector<MetricFamily> families = collector_.Collect();
    const ClientMetric* m = FindMetric(families, name, labels);
    EXPECT_NE(m, nullptr) << name;
    return m == nullptr ? std::nan("") : m->gauge.value;
  }

  const Labels kDecode = {{"pipeline", "p"}, {"stage", "decode"}};
  const Labels kPipeline = {{"pipeline", "p"}};
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  PipelineCollector collector_;
  std::shared_ptr<PipelineStats> stats_;
  StageStats* reader_;
  StageStats* decode_;
  EdgeStats* edge_;
};

TEST_F(PipelineCollectorTest, ExportsNothingWithoutPipelines) {
  EXPECT_TRUE(collector_.Collect().empty());
  EXPECT_EQ(collector_.size(), 0);
}

TEST_F(PipelineCollectorTest, StageCountersCarryPipelineAndStageLabels) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  decode_->items_in = 10;
  decode_->items_out = 9;
  decode_->bytes = 4096;
  decode_->busy_nanos = 1'500'000'000;
  decode_->blocked_nanos = 250'000'000;
  decode_->in_flight = 2;
  EXPECT_EQ(Counter("flowloader_stage_items_in_total", kDecode), 10);
  EXPECT_EQ(Counter("flowloader_stage_items_out_total", kDecode), 9);
  EXPECT_EQ(Counter("flowloader_stage_bytes_total", kDecode), 4096);
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_busy_seconds_total", kDecode), 1.5);
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_blocked_seconds_total", kDecode), 0.25);
  EXPECT_EQ(Gauge("flowloader_stage_in_flight", kDecode), 2);
  EXPECT_EQ(Gauge("flowloader_stage_concurrency", kDecode), 2);
  EXPECT_EQ(Gauge("flowloader_stage_concurrency", {{"pipeline", "p"}, {"stage", "reader"}}), 1);
}

TEST_F(PipelineCollectorTest, IdleIsConcurrencyTimesUptimeMinusBusyAndBlocked) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  decode_->busy_nanos = 5'000'000'000;
  decode_->blocked_nanos = 3'000'000'000;
  // 2 workers x 10 s uptime - 5 s busy - 3 s blocked.
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 12);
}

TEST_F(PipelineCollectorTest, IdleIsClampedAtZero) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  decode_->busy_nanos = 30'000'000'000;
  EXPECT_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 0);
}

TEST_F(PipelineCollectorTest, IdleNeverDecreasesBetweenScrapes) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 20);
  // A long item finishes: busy jumps by 10 s at once, the raw formula drops to 10.
  decode_->busy_nanos = 10'000'000'000;
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 20);
  now_ += absl::Seconds(10);  // 2 x 20 - 10 = 30.
  EXPECT_DOUBLE_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 30);
}

TEST_F(PipelineCollectorTest, IdleAndUptimeAreZeroBeforeStart) {
  stats_->start_unix_nanos = 0;
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_EQ(Counter("flowloader_stage_idle_seconds_total", kDecode), 0);
  EXPECT_EQ(Gauge("flowloader_uptime_seconds", kPipeline), 0);
}

TEST_F(PipelineCollectorTest, LatencyHistogramIsCumulativeAndEndsInInf) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  decode_->latency.Observe(40'000);          // 40 us: first bucket.
  decode_->latency.Observe(2'000'000);       // 2 ms.
  decode_->latency.Observe(2'000'000);
  decode_->latency.Observe(20'000'000'000);  // 20 s: only +Inf.
  const auto families = collector_.Collect();
  const MetricFamily* f = FindFamily(families, "flowloader_stage_latency_seconds");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, MetricType::Histogram);
  const ClientMetric* m = FindMetric(families, "flowloader_stage_latency_seconds", kDecode);
  ASSERT_NE(m, nullptr);
  const auto& buckets = m->histogram.bucket;
  ASSERT_EQ(buckets.size(), LatencyHistogram::kBounds.size() + 1);
  for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
    EXPECT_EQ(buckets[i].upper_bound, LatencyHistogram::kBounds[i]);
    if (i > 0) {
      EXPECT_GE(buckets[i].cumulative_count, buckets[i - 1].cumulative_count);
    }
  }
  EXPECT_EQ(buckets.front().cumulative_count, 1u);
  EXPECT_EQ(buckets[5].cumulative_count, 3u);  // le=0.0025
  EXPECT_EQ(buckets[buckets.size() - 2].cumulative_count, 3u);  // le=10
  EXPECT_EQ(buckets.back().upper_bound, std::numeric_limits<double>::infinity());
  EXPECT_EQ(buckets.back().cumulative_count, 4u);
  EXPECT_EQ(m->histogram.sample_count, 4u);
  EXPECT_NEAR(m->histogram.sample_sum, 20.00404, 1e-9);
}

// ErrorsByStage maps stage -> reason -> value of flowloader_stage_errors_total, and
// fails the test on a (stage, reason) pair exported twice (it would fail the scrape).
std::map<std::string, std::map<std::string, double>> ErrorsByStage(
    const std::vector<MetricFamily>& families) {
  std::map<std::string, std::map<std::string, double>> out;
  const MetricFamily* f = FindFamily(families, "flowloader_stage_errors_total");
  if (f == nullptr) return out;
  for (const auto& m : f->metric) {
    Labels l = LabelsOf(m);
    EXPECT_EQ(l.size(), 3u);
    EXPECT_TRUE(out[l["stage"]].emplace(l["reason"], m.counter.value).second)
        << l["stage"] << " " << l["reason"] << " exported twice";
  }
  return out;
}

TEST_F(PipelineCollectorTest, ErrorsAreLabelledByReason) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  decode_->CountError("truncated");
  decode_->CountError("truncated");
  decode_->CountError("corrupt");
  auto errors = ErrorsByStage(collector_.Collect());
  EXPECT_EQ(errors["decode"]["truncated"], 2);
  EXPECT_EQ(errors["decode"]["corrupt"], 1);
  EXPECT_EQ(errors["decode"].at("not_found"), 0);  // at(): absent fails, not 0.
  EXPECT_EQ(errors["reader"].at("truncated"), 0);
}

// Label values known in advance are exported at 0 (Prometheus' instrumentation
// guidance): a clean run's error panels read 0, not "No data".
TEST_F(PipelineCollectorTest, EveryStageAndBuiltinReasonIsZeroBeforeAnyError) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  auto errors = ErrorsByStage(collector_.Collect());
  ASSERT_THAT(errors, ::testing::SizeIs(2));  // reader, decode.
  for (const std::string stage : {"reader", "decode"}) {
    ASSERT_EQ(errors[stage].size(), std::size(reason::kBuiltin)) << stage;
    for (absl::string_view r : reason::kBuiltin) {
      const auto it = errors[stage].find(std::string(r));
      ASSERT_NE(it, errors[stage].end()) << stage << " " << r;
      EXPECT_EQ(it->second, 0) << stage << " " << r;
    }
  }
  // Spelled out too, so an emptied list cannot pass this test.
  EXPECT_EQ(Counter("flowloader_stage_errors_total",
                    {{"pipeline", "p"}, {"stage", "reader"}, {"reason", "not_found"}}),
            0);
  EXPECT_EQ(Counter("flowloader_stage_errors_total",
                    {{"pipeline", "p"}, {"stage", "decode"}, {"reason", "truncated"}}),
            0);
}

TEST_F(PipelineCollectorTest, RunTimeReasonJoinsWhenFirstCounted) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_EQ(ErrorsByStage(collector_.Collect())["decode"].count("bad_label"), 0u);
  decode_->CountError("bad_label");  // A user stage's own reason.
  auto errors = ErrorsByStage(collector_.Collect());
  EXPECT_EQ(errors["decode"]["bad_label"], 1);
  EXPECT_EQ(errors["decode"].size(), std::size(reason::kBuiltin) + 1);
  EXPECT_EQ(errors["reader"].count("bad_label"), 0u);
}

// Every family of the catalogue has its series from the first scrape of a pipeline that
// has processed nothing: none of them waits for a first event.
TEST_F(PipelineCollectorTest, EveryFamilyHasSeriesBeforeAnyItem) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_EQ(collector_.Collect().size(), 30u);
}

// A stage with op rows (a transforms stage) adds one series per op to two families,
// labelled by pipeline, stage and op; stages without ops add none.
TEST_F(PipelineCollectorTest, OpCostsAreLabelledByOp) {
  auto busy = std::make_shared<std::atomic<int64_t>>(750'000'000);
  auto applied = std::make_shared<std::atomic<int64_t>>(12);
  decode_->set_op_costs({{"gaussian_blur", busy, applied},
                         {"gaussian_blur#2", std::make_shared<std::atomic<int64_t>>(0),
                          std::make_shared<std::atomic<int64_t>>(0)}});
  ASSERT_TRUE(collector_.Register(stats_).ok());
  const Labels blur = {{"pipeline", "p"}, {"stage", "decode"}, {"op", "gaussian_blur"}};
  EXPECT_DOUBLE_EQ(Counter("flowloader_op_busy_seconds_total", blur), 0.75);
  EXPECT_EQ(Counter("flowloader_op_applied_total", blur), 12);
  busy->fetch_add(250'000'000);  // The stage keeps counting after registration.
  EXPECT_DOUBLE_EQ(Counter("flowloader_op_busy_seconds_total", blur), 1.0);
  const std::vector<MetricFamily> families = collector_.Collect();
  const MetricFamily* f = FindFamily(families, "flowloader_op_applied_total");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, MetricType::Counter);
  ASSERT_EQ(f->metric.size(), 2u);  // Only decode's two ops; reader has none.
  EXPECT_EQ(LabelsOf(f->metric[1]).at("op"), "gaussian_blur#2");
  EXPECT_EQ(families.size(), 32u);  // EveryFamilyHasSeriesBeforeAnyItem's 30, and these.
}

TEST_F(PipelineCollectorTest, PipelineCountersAndGauges) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  stats_->batches = 7;
  stats_->samples = 448;
  stats_->skipped = 3;
  stats_->epoch = 2;
  stats_->consumer_wait_nanos = 4'000'000'000;
  stats_->last_batch_unix_nanos = absl::ToUnixNanos(now_ - absl::Seconds(1));
  stats_->host_bytes_in_flight = 100;
  stats_->host_bytes_budget = 1000;
  stats_->pinned_bytes_in_flight = 50;
  stats_->pinned_bytes_budget = 500;
  EXPECT_EQ(Counter("flowloader_batches_total", kPipeline), 7);
  EXPECT_EQ(Counter("flowloader_samples_total", kPipeline), 448);
  EXPECT_EQ(Counter("flowloader_samples_skipped_total", kPipeline), 3);
  EXPECT_EQ(Gauge("flowloader_epoch", kPipeline), 2);
  EXPECT_DOUBLE_EQ(Counter("flowloader_consumer_wait_seconds_total", kPipeline), 4);
  EXPECT_DOUBLE_EQ(Gauge("flowloader_uptime_seconds", kPipeline), 10);
  EXPECT_DOUBLE_EQ(Gauge("flowloader_start_time_seconds", kPipeline),
                   absl::ToDoubleSeconds(now_ - absl::Seconds(10) - absl::UnixEpoch()));
  EXPECT_DOUBLE_EQ(Gauge("flowloader_last_batch_timestamp_seconds", kPipeline),
                   absl::ToDoubleSeconds(now_ - absl::Seconds(1) - absl::UnixEpoch()));
  EXPECT_EQ(Gauge("flowloader_host_bytes_in_flight", kPipeline), 100);
  EXPECT_EQ(Gauge("flowloader_host_bytes_budget", kPipeline), 1000);
  EXPECT_EQ(Gauge("flowloader_pinned_bytes_in_flight", kPipeline), 50);
  EXPECT_EQ(Gauge("flowloader_pinned_bytes_budget", kPipeline), 500);
}

// Weighted sources: one series per source, from the first scrape (0 before a sample).
TEST_F(PipelineCollectorTest, SamplesPerSourceAreLabelledBySource) {
  stats_->SetSources({"photos", "sketches"});
  ASSERT_TRUE(collector_.Register(stats_).ok());
  const Labels photos = {{"pipeline", "p"}, {"source", "photos"}};
  const Labels sketches = {{"pipeline", "p"}, {"source", "sketches"}};
  EXPECT_EQ(Counter("flowloader_source_samples_total", sketches), 0);
  stats_->CountSources({0, 1, 1, 1});
  EXPECT_EQ(Counter("flowloader_source_samples_total", photos), 1);
  EXPECT_EQ(Counter("flowloader_source_samples_total", sketches), 3);
}

TEST_F(PipelineCollectorTest, QueuesAreLabelledFromAndTo) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  edge_->depth = 3;
  const Labels edge = {{"pipeline", "p"}, {"from", "reader"}, {"to", "decode"}};
  EXPECT_EQ(Gauge("flowloader_queue_depth", edge), 3);
  EXPECT_EQ(Gauge("flowloader_queue_capacity", edge), 8);
}

TEST_F(PipelineCollectorTest, BuildInfoCarriesVersionAndSanitisedKeys) {
  stats_->build_info = {
      {"version", "1.2.3"}, {"cuda-version", "12.2"}, {"pipeline", "spoofed"}, {"__x", "y"}};
  ASSERT_TRUE(collector_.Register(stats_).ok());
  const auto families = collector_.Collect();
  const MetricFamily* f = FindFamily(families, "flowloader_build_info");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->metric.size(), 1u);
  EXPECT_EQ(f->metric[0].gauge.value, 1);
  EXPECT_THAT(LabelsOf(f->metric[0]),
              UnorderedElementsAre(Pair("pipeline", "p"), Pair("version", "1.2.3"),
                                   Pair("cuda_version", "12.2")));
}

TEST_F(PipelineCollectorTest, BuildInfoVersionDefaultsToUnknown) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_EQ(Gauge("flowloader_build_info", {{"pipeline", "p"}, {"version", "unknown"}}), 1);
}

TEST_F(PipelineCollectorTest, DestroyedPipelineDropsOutWithoutUnregister) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_EQ(collector_.size(), 1);
  stats_.reset();
  EXPECT_TRUE(collector_.Collect().empty());
  EXPECT_EQ(collector_.size(), 0);
}

TEST_F(PipelineCollectorTest, UnregisterRemovesOnce) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  EXPECT_TRUE(collector_.Unregister(stats_.get()));
  EXPECT_FALSE(collector_.Unregister(stats_.get()));
  EXPECT_TRUE(collector_.Collect().empty());
}

TEST_F(PipelineCollectorTest, DuplicateLiveNameIsAlreadyExists) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  auto twin = std::make_shared<PipelineStats>("p");
  EXPECT_EQ(collector_.Register(twin).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(collector_.Register(stats_).code(), absl::StatusCode::kAlreadyExists);
  stats_.reset();  // The name is free again once its pipeline is gone.
  EXPECT_TRUE(collector_.Register(twin).ok());
}

TEST_F(PipelineCollectorTest, RejectsShapesThatWouldDuplicateSeries) {
  EXPECT_EQ(collector_.Register(nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(collector_.Register(std::make_shared<PipelineStats>("")).code(),
            absl::StatusCode::kInvalidArgument);
  auto stages = std::make_shared<PipelineStats>("s");
  stages->AddStage("decode", 1);
  stages->AddStage("decode", 2);
  EXPECT_EQ(collector_.Register(stages).code(), absl::StatusCode::kInvalidArgument);
  auto edges = std::make_shared<PipelineStats>("e");
  edges->AddEdge("a", "b", 1);
  edges->AddEdge("a", "b", 2);
  EXPECT_EQ(collector_.Register(edges).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(collector_.size(), 0);
}

TEST_F(PipelineCollectorTest, TwoPipelinesShareOneFamilyPerName) {
  auto other = std::make_shared<PipelineStats>("q");
  other->AddStage("reader", 1)->items_out = 5;
  ASSERT_TRUE(collector_.Register(stats_).ok());
  ASSERT_TRUE(collector_.Register(other).ok());
  reader_->items_out = 3;
  const auto families = collector_.Collect();
  std::set<std::string> names;
  for (const auto& f : families) EXPECT_TRUE(names.insert(f.name).second) << f.name;
  const Labels p_reader = {{"pipeline", "p"}, {"stage", "reader"}};
  const Labels q_reader = {{"pipeline", "q"}, {"stage", "reader"}};
  EXPECT_EQ(FindMetric(families, "flowloader_stage_items_out_total", p_reader)->counter.value, 3);
  EXPECT_EQ(FindMetric(families, "flowloader_stage_items_out_total", q_reader)->counter.value, 5);
}

TEST_F(PipelineCollectorTest, NamesTypesHelpAndLabelsFollowConventions) {
  decode_->CountError("truncated");
  stats_->build_info = {{"version", "1"}};
  ASSERT_TRUE(collector_.Register(stats_).ok());
  const auto families = collector_.Collect();
  EXPECT_EQ(families.size(), 30u);  // Every family of the catalogue has a series here.
  for (const auto& f : families) {
    EXPECT_TRUE(absl::StartsWith(f.name, "flowloader_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_EQ(f.type == MetricType::Counter, absl::EndsWith(f.name, "_total")) << f.name;
    if (f.name == "flowloader_build_info") continue;
    for (const auto& m : f.metric) {
      for (const auto& l : m.label) {
        EXPECT_THAT(l.name, ::testing::AnyOf("pipeline", "stage", "reason", "from", "to",
                                             "scheme", "code"))
            << f.name;
      }
    }
  }
}

TEST_F(PipelineCollectorTest, ScrapesRaceRegistrationAndUpdatesSafely) {
  ASSERT_TRUE(collector_.Register(stats_).ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop.load()) {
      decode_->items_in.fetch_add(1);
      decode_->busy_nanos.fetch_add(1000);
      decode_->latency.Observe(1000);
    }
  });
  std::thread churn([&] {
    for (int i = 0; i < 200; ++i) {
      auto temp = std::make_shared<PipelineStats>("temp");
      temp->AddStage("reader", 1);
      ASSERT_TRUE(collector_.Register(temp).ok());
      if (i % 2 == 0) collector_.Unregister(temp.get());  // Else: expires on scope exit.
    }
  });
  for (int i = 0; i < 200; ++i) ASSERT_FALSE(collector_.Collect().empty());
  churn.join();
  stop = true;
  writer.join();
  EXPECT_EQ(collector_.size(), 1);
}

}  // namespace
}  // namespace flowloader

namespace flowloader {
namespace {

// Remote storage's counts come out by scheme and code, the histogram's count equal to
// the requests; a pipeline without remote requests exports them at 0 as scheme "none"
// (so the dashboard's storage panels read 0, not No data).
TEST(PipelineCollectorStorageTest, ExportsStorageBySchemeAndCode) {
  auto storage = std::make_shared<StorageStats>();
  storage->Record("s3", 2'000'000, 1000, "", false);
  storage->Record("s3", 40'000'000, 0, "SlowDown", false);
  storage->Record("s3", 3'000'000, 500, "", true);
  storage->Record("http", 1'000'000, 0, "http_503", false);
  auto stats = std::make_shared<PipelineStats>("p");
  stats->storage = storage;
  PipelineCollector collector;
  ASSERT_TRUE(collector.Register(stats).ok());
  const std::vector<MetricFamily> families = collector.Collect();
  const ClientMetric* requests = FindMetric(families, "flowloader_storage_requests_total",
                                            {{"pipeline", "p"}, {"scheme", "s3"}});
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->counter.value, 3);
  EXPECT_EQ(FindMetric(families, "flowloader_storage_bytes_total",
                       {{"pipeline", "p"}, {"scheme", "s3"}})
                ->counter.value,
            1500);
  EXPECT_EQ(FindMetric(families, "flowloader_storage_retries_total",
                       {{"pipeline", "p"}, {"scheme", "s3"}})
                ->counter.value,
            1);
  EXPECT_EQ(FindMetric(families, "flowloader_storage_errors_total",
                       {{"pipeline", "p"}, {"scheme", "s3"}, {"code", "SlowDown"}})
                ->counter.value,
            1);
  // Known codes read 0 before they happen; S3's only for s3.
  EXPECT_EQ(FindMetric(families, "flowloader_storage_errors_total",
                       {{"pipeline", "p"}, {"scheme", "s3"}, {"code", "NoSuchKey"}})
                ->counter.value,
            0);
  EXPECT_EQ(FindMetric(families, "flowloader_storage_errors_total",
                       {{"pipeline", "p"}, {"scheme", "http"}, {"code", "NoSuchKey"}}),
            nullptr);
  EXPECT_EQ(FindMetric(families, "flowloader_storage_errors_total",
                       {{"pipeline", "p"}, {"scheme", "http"}, {"code", "http_503"}})
                ->counter.value,
            1);
  const ClientMetric* latency =
      FindMetric(families, "flowloader_storage_request_duration_seconds",
                 {{"pipeline", "p"}, {"scheme", "s3"}});
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->histogram.sample_count, 3u);
  EXPECT_EQ(latency->histogram.bucket.back().cumulative_count, 3u);
  EXPECT_TRUE(std::isinf(latency->histogram.bucket.back().upper_bound));
  EXPECT_NEAR(latency->histogram.sample_sum, 0.045, 1e-9);

  auto local = std::make_shared<PipelineStats>("local");
  PipelineCollector plain;
  ASSERT_TRUE(plain.Register(local).ok());
  const std::vector<MetricFamily> local_families = plain.Collect();
  const ClientMetric* none = FindMetric(local_families, "flowloader_storage_requests_total",
                                        {{"pipeline", "local"}, {"scheme", "none"}});
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->counter.value, 0);
  const ClientMetric* none_latency =
      FindMetric(local_families, "flowloader_storage_request_duration_seconds",
                 {{"pipeline", "local"}, {"scheme", "none"}});
  ASSERT_NE(none_latency, nullptr);
  EXPECT_EQ(none_latency->histogram.sample_count, 0u);
  EXPECT_EQ(FindMetric(local_families, "flowloader_storage_requests_total",
                       {{"pipeline", "p"}, {"scheme", "none"}}),
            nullptr);
}

// A pipeline whose knobs are fixed exports them too, with 0 changes, so the dashboard's
// autotune panel reads the values rather than No data (train.yaml, num_workers: 2).
TEST(PipelineCollectorAutotuneTest, FixedKnobsExportTheirValuesAndNoChanges) {
  auto stats = std::make_shared<PipelineStats>("fixed");
  stats->autotune.num_workers = 2;
  stats->autotune.prefetch_batches = 3;
  PipelineCollector collector;
  ASSERT_TRUE(collector.Register(stats).ok());
  const std::vector<MetricFamily> families = collector.Collect();
  const ClientMetric* workers = FindMetric(families, "flowloader_autotune_value",
                                           {{"pipeline", "fixed"}, {"knob", "num_workers"}});
  ASSERT_NE(workers, nullptr);
  EXPECT_EQ(workers->gauge.value, 2);
  const ClientMetric* buffers = FindMetric(families, "flowloader_autotune_value",
                                           {{"pipeline", "fixed"}, {"knob", "prefetch_batches"}});
  ASSERT_NE(buffers, nullptr);
  EXPECT_EQ(buffers->gauge.value, 3);
  const ClientMetric* ups =
      FindMetric(families, "flowloader_autotune_decisions_total",
                 {{"pipeline", "fixed"}, {"knob", "num_workers"}, {"direction", "up"}});
  ASSERT_NE(ups, nullptr);
  EXPECT_EQ(ups->counter.value, 0);
  // Stats no pipeline has set up (no knob value yet) export none.
  auto bare = std::make_shared<PipelineStats>("bare");
  PipelineCollector plain;
  ASSERT_TRUE(plain.Register(bare).ok());
  EXPECT_EQ(FindFamily(plain.Collect(), "flowloader_autotune_value"), nullptr);
}

}  // namespace
}  // namespace flowloader
