// s3_metrics_test.cc: remote storage's metrics from a real run against the RADOS Gateway
// (tests/testing/radosgw.sh) through the fault proxy, which answers every 3rd request
// with a 503 SlowDown, a 500 InternalError or a reset connection: a real scrape of the
// pipeline's /metrics shows those codes counted by scheme, the request latency
// histogram's count equals the requests, retries and bytes are there, and the summary
// JSON has the same counts. No key or secret appears in a label. With every read 40 ms
// away, the diagnosis names storage with the measured latency, `auto` read-ahead raises
// the reads in flight past its start, and autotune answers workers waiting on reads with
// more reads in flight, not more workers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "exporters/metrics_exporter.h"
#include "exporters/report.h"
#include "exporters/testing/http_get.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/pipeline.h"
#include "runtime/run_summary.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::FaultProxy;
using testing::RadosGateway;

// Canonical is a series "name{b=\"1\",a=\"2\"}" with its labels sorted: a="2",b="1".
std::string Canonical(absl::string_view series) {
  const size_t open = series.find('{');
  if (open == absl::string_view::npos || series.back() != '}') return std::string(series);
  std::vector<std::string> labels = absl::StrSplit(
      series.substr(open + 1, series.size() - open - 2), absl::ByString("\","));
  for (size_t i = 0; i + 1 < labels.size(); ++i) labels[i] += '"';
  std::sort(labels.begin(), labels.end());
  return absl::StrCat(series.substr(0, open), "{", absl::StrJoin(labels, ","), "}");
}

// Series maps each series line of an exposition ("name{labels}", labels sorted) to its
// value.
std::map<std::string, double> Series(const std::string& exposition) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    if (space == absl::string_view::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) {
      continue;
    }
    out[Canonical(line.substr(0, space))] = value;
  }
  return out;
}

// One gateway for the suite (it takes seconds to start), filled with 16 images.
class S3MetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gateway_ = RadosGateway::Start(testing::TempDir("rgw")).release();
    if (gateway_ == nullptr) return;
    const std::string folder = testing::MakeImageFolder(testing::TempDir("folder"), 2, 8);
    ASSERT_TRUE(gateway_->CreateBucket("metrics"));
    ASSERT_GE(gateway_->Upload(folder, "metrics", "train/"), 16);
  }
  static void TearDownTestSuite() {
    delete gateway_;
    gateway_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(gateway_, nullptr) << "the RADOS Gateway did not start";
    ::setenv("HOME", testing::TempDirForTest("home_").c_str(), 1);
    ::setenv("AWS_ACCESS_KEY_ID", gateway_->access_key().c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", gateway_->secret_key().c_str(), 1);
  }
  static RadosGateway* gateway_;
};
RadosGateway* S3MetricsTest::gateway_ = nullptr;

TEST_F(S3MetricsTest, FaultCodesLatencyAndRequestsAreScrapedAndSummarized) {
  const RadosGateway* gateway = gateway_;
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  std::unique_ptr<FaultProxy> proxy =
      FaultProxy::Start(gateway->port(), 3, "slowdown,internal,reset", log);
  ASSERT_NE(proxy, nullptr);

  PipelineOptions o = testing::SmallCpuOptions("s3://metrics/train/", /*batch_size=*/4, nullptr);
  o.epochs = 2;
  o.name = "s3metrics";
  o.s3.endpoint = proxy->endpoint();
  o.http.initial_backoff = absl::Milliseconds(5);
  o.http.max_retries = 6;
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<std::shared_ptr<MetricsServer>> server = MetricsServer::Shared("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<MetricsRegistration> registration =
      MetricsRegistration::Create(*server, (*p)->stats());
  ASSERT_TRUE(registration.ok()) << registration.status();
  int samples = 0;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    ASSERT_TRUE((*p)->Next(&batch, &end_of_epoch).ok());
    if (end_of_epoch && (*p)->done()) break;
    if (batch != nullptr) samples += static_cast<int>(batch->labels.size());
  }
  EXPECT_EQ(samples, 2 * 16);  // Every fault retried: nothing skipped.

  absl::StatusOr<exporters_testing::HttpResponse> scrape =
      exporters_testing::HttpGet("127.0.0.1", (*server)->port(), "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  ASSERT_EQ(scrape->status, 200);
  const std::map<std::string, double> series = Series(scrape->body);
  const std::string labels = "{pipeline=\"s3metrics\",scheme=\"s3\"}";
  auto value = [&series](const std::string& key) {
    auto it = series.find(key);
    EXPECT_NE(it, series.end()) << key;
    return it == series.end() ? -1.0 : it->second;
  };
  auto code = [&value](const std::string& c) {
    return value("flowloader_storage_errors_total{code=\"" + c +
                 "\",pipeline=\"s3metrics\",scheme=\"s3\"}");
  };
  const double requests = value("flowloader_storage_requests_total" + labels);
  const double slowdown = code("SlowDown");
  const double internal = code("InternalError");
  // A reset on a reused connection is resent by libcurl itself (no attempt of ours
  // fails), so resets count only where the connection was new: not asserted > 0.
  double errors = 0;
  for (const auto& [key, n] : series) {
    if (absl::StartsWith(key, "flowloader_storage_errors_total{")) errors += n;
  }
  const double retries = value("flowloader_storage_retries_total" + labels);
  EXPECT_GT(requests, 2 * 16);  // Listing, GETs and their retries.
  EXPECT_GT(slowdown, 0);
  EXPECT_GT(internal, 0);
  EXPECT_GE(code("connection_closed") + code("connection_reset"), 0);  // Exported.
  // Every fault failed one attempt, and each was retried (none ran out of retries).
  EXPECT_EQ(errors, retries);
  EXPECT_EQ(value("flowloader_storage_request_duration_seconds_count" + labels), requests);
  EXPECT_EQ(value("flowloader_storage_request_duration_seconds_bucket{le=\"+Inf\","
                  "pipeline=\"s3metrics\",scheme=\"s3\"}"),
            requests);
  EXPECT_GT(value("flowloader_storage_request_duration_seconds_sum" + labels), 0);
  EXPECT_GT(value("flowloader_storage_bytes_total" + labels), 16 * 100);
  EXPECT_EQ(code("NoSuchKey"), 0);  // Known codes are exported before they happen.
  EXPECT_FALSE(absl::StrContains(scrape->body, "train/")) << "a key in a label";
  EXPECT_FALSE(absl::StrContains(scrape->body, gateway->secret_key()));
  EXPECT_FALSE(absl::StrContains(scrape->body, gateway->access_key()));

  // The summary JSON: the same counts (the run has ended, nothing moves).
  const nlohmann::json summary =
      nlohmann::json::parse(PipelineSummaryJson(**p, 1.0, 2, 0.1, 0.1, {0.5, 1.0}));
  const nlohmann::json& s3 = summary["storage"]["schemes"]["s3"];
  EXPECT_EQ(s3["requests"].get<double>(), requests);
  EXPECT_EQ(s3["retries"].get<double>(), retries);
  EXPECT_EQ(s3["errors"]["SlowDown"].get<double>(), slowdown);
  EXPECT_EQ(s3["errors"]["InternalError"].get<double>(), internal);
  EXPECT_EQ(s3["latency_seconds"]["count"].get<double>(), requests);
  EXPECT_GT(s3["latency_seconds"]["p50"].get<double>(), 0);
  EXPECT_EQ(s3["bytes"].get<double>(),
            value("flowloader_storage_bytes_total" + labels));
}

// Every object GET 40 ms away (the proxy's slow_reads) and 2 reads in flight: the
// diagnosis of the real run names the read stage and storage, with the measured latency.
TEST_F(S3MetricsTest, DiagnosisNamesSlowStorageWithItsMeasuredLatency) {
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  std::unique_ptr<FaultProxy> proxy = FaultProxy::Start(gateway_->port(), 1, "slow_reads", log);
  ASSERT_NE(proxy, nullptr);
  PipelineOptions o = testing::SmallCpuOptions("s3://metrics/train/", /*batch_size=*/4, nullptr);
  o.epochs = 2;
  o.name = "slow_storage";
  o.s3.endpoint = proxy->endpoint();
  o.http.read_ahead = 2;
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const absl::Time start = absl::Now();
  double first_batch = -1;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    ASSERT_TRUE((*p)->Next(&batch, &end_of_epoch).ok());
    if (first_batch < 0 && batch != nullptr) {
      first_batch = absl::ToDoubleSeconds(absl::Now() - start);
    }
    if (end_of_epoch && (*p)->done()) break;
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const RunSnapshot run =
      Snapshot(*(*p)->stats(), RunFactsFor((*p)->options(), wall, 2, first_batch));
  DiagnoseOptions relaxed;  // A 32-sample run: judge it anyway.
  relaxed.min_steady_seconds = 0;
  relaxed.max_startup_share = 1;
  const Diagnosis d = Diagnose(run, relaxed);
  EXPECT_EQ(d.bottleneck, "read") << d.advice;
  EXPECT_TRUE(absl::StartsWith(d.advice, "read starves the pipeline: s3 requests take "))
      << d.advice;
  EXPECT_TRUE(absl::StrContains(d.advice, "raise read_ahead")) << d.advice;
  // The median the advice quotes is the proxy's 40 ms or more, read from the text.
  double median_ms = 0;
  const std::string after = d.advice.substr(d.advice.find("take ") + 5);
  ASSERT_TRUE(absl::SimpleAtod(after.substr(0, after.find(' ')), &median_ms)) << d.advice;
  EXPECT_GE(median_ms, 35) << d.advice;
  EXPECT_LE(median_ms, 500) << d.advice;

  // The summary JSON names the read-ahead's limit and the latency it saw, and its reads
  // filled the workers' recycled buffers.
  const nlohmann::json summary =
      nlohmann::json::parse(PipelineSummaryJson(**p, 1.0, 2, 0.1, 0.1, {0.5, 1.0}));
  const nlohmann::json& ra = summary["storage"]["read_ahead"];
  EXPECT_EQ(ra["mode"], "fixed") << ra;
  EXPECT_EQ(ra["limit"].get<int>(), 2) << ra;
  EXPECT_LE(ra["peak_in_flight"].get<int>(), 2) << ra;
  EXPECT_GE(ra["mean_latency_seconds"].get<double>(), 0.035) << ra;
  EXPECT_GT(ra["started"].get<int>(), 0) << ra;
  EXPECT_GE(ra["started"].get<int>(), ra["ready"].get<int>() + ra["waited"].get<int>()) << ra;
  EXPECT_GT(ra["reused_buffers"].get<int>(), 0) << ra;
}

// Every object GET 40 ms away and `auto` read-ahead (the default): the reads in flight
// grow past the floor of 16 the limit starts at for objects (Little's law, and probes
// while takes wait for reads queued behind the limit), and the summary says so.
TEST_F(S3MetricsTest, AutoReadAheadGrowsPastItsStartBehindA40msStore) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("many"), 4, 96);
  ASSERT_TRUE(gateway_->CreateBucket("latency"));
  ASSERT_GE(gateway_->Upload(folder, "latency", "train/"), 384);
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  std::unique_ptr<FaultProxy> proxy = FaultProxy::Start(gateway_->port(), 1, "slow_reads", log);
  ASSERT_NE(proxy, nullptr);
  PipelineOptions o = testing::SmallCpuOptions("s3://latency/train/", /*batch_size=*/16, nullptr);
  o.epochs = 1;
  o.s3.endpoint = proxy->endpoint();
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  int64_t samples = 0;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    ASSERT_TRUE((*p)->Next(&batch, &end_of_epoch).ok());
    if (batch != nullptr) samples += batch->size();
    if (end_of_epoch && (*p)->done()) break;
  }
  EXPECT_EQ(samples, 384);
  const nlohmann::json summary =
      nlohmann::json::parse(PipelineSummaryJson(**p, 1.0, 1, 0.1, 0.1, {0.5, 1.0}));
  const nlohmann::json& ra = summary["storage"]["read_ahead"];
  EXPECT_EQ(ra["mode"], "auto") << ra;
  EXPECT_GT(ra["peak_limit"].get<int>(), 16) << ra;
  EXPECT_GT(ra["peak_in_flight"].get<int>(), 16) << ra;
  EXPECT_GT(ra["mean_in_flight"].get<double>(), 8) << ra;
  EXPECT_GE(ra["mean_latency_seconds"].get<double>(), 0.035) << ra;
}

// StoragePercent reads "waiting on storage 12.3%" out of a worker decision's reason; -1
// when it is not there.
double StoragePercent(const std::string& reason) {
  const std::string tag = "waiting on storage ";
  const size_t at = reason.find(tag);
  double percent = -1;
  if (at == std::string::npos) return -1;
  const std::string rest = reason.substr(at + tag.size());
  if (!absl::SimpleAtod(rest.substr(0, rest.find('%')), &percent)) return -1;
  return percent;
}

// Autotune behind a store 40 ms away. First a slow consumer (100 ms a batch) makes the
// run calm, and autotune gives a worker back; then the consumer takes as fast as it can,
// the one worker waits on reads, and autotune raises read-ahead's floor instead of adding
// the worker back (which would only wait too): the run ends with more reads in flight
// than that phase began with, and every worker it adds came in a window where the
// workers were not waiting on storage (before autotune knew of storage, the one worker
// busy waiting on reads with a CPU free got its second worker back).
TEST_F(S3MetricsTest, AutotuneRaisesReadAheadNotWorkersWhenWorkersWaitOnStorage) {
  const std::string folder = testing::MakeImageFolder(testing::TempDir("auto"), 4, 96);
  ASSERT_TRUE(gateway_->CreateBucket("autotune"));
  ASSERT_GE(gateway_->Upload(folder, "autotune", "train/"), 384);
  const std::string log = testing::TempDirForTest("proxy_") + "/faults.log";
  std::unique_ptr<FaultProxy> proxy = FaultProxy::Start(gateway_->port(), 1, "slow_reads", log);
  ASSERT_NE(proxy, nullptr);
  PipelineOptions o = testing::SmallCpuOptions("s3://autotune/train/", /*batch_size=*/16, nullptr);
  o.num_workers = PipelineOptions::kAuto;
  o.prefetch_batches = PipelineOptions::kAuto;
  o.cpu_budget = 2;
  o.epochs = 8;
  o.s3.endpoint = proxy->endpoint();
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const PipelineStats& stats = *(*p)->stats();
  ASSERT_GT(stats.autotune.read_ahead.load(), 0) << "read_ahead is not tuned";
  const int start_floor = stats.autotune.read_ahead.load();
  auto decisions_of = [&stats](const std::string& knob, bool up) {
    std::vector<AutotuneRecord> out;
    for (const AutotuneRecord& d : stats.autotune.Decisions()) {
      if (d.knob == knob && (d.to > d.from) == up) out.push_back(d);
    }
    return out;
  };
  int64_t samples = 0;
  bool done = false;
  auto next = [&]() {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    EXPECT_TRUE((*p)->Next(&batch, &end_of_epoch).ok());
    if (batch != nullptr) samples += batch->size();
    done = end_of_epoch && (*p)->done();
  };
  // Calm: a slow consumer until autotune gives a worker back (10 calm windows, ~2 s).
  const absl::Time calm_until = absl::Now() + absl::Seconds(20);
  while (!done && decisions_of(kKnobNumWorkers, false).empty() && absl::Now() < calm_until) {
    next();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(decisions_of(kKnobNumWorkers, false).empty()) << "the calm run kept 2 workers";
  ASSERT_FALSE(done) << "the run ended before the fast phase; more epochs";
  const size_t calm_decisions = stats.autotune.Decisions().size();
  const int limit_before = stats.storage->read_ahead().limit;
  // Hungry: as fast as it can; the one worker waits on 40 ms reads.
  while (!done) next();
  EXPECT_EQ(samples, 8 * 384);

  const std::vector<AutotuneRecord> all = stats.autotune.Decisions();
  for (const AutotuneRecord& d : all) {  // In the test log, for a failure's reader.
    std::printf("autotune: at %.1f s %s %d -> %d: %s\n", d.seconds, d.knob.c_str(), d.from,
                d.to, d.reason.c_str());
  }
  int read_ahead_ups = 0;
  for (size_t i = calm_decisions; i < all.size(); ++i) {
    const AutotuneRecord& d = all[i];
    if (d.knob == kKnobReadAhead && d.to > d.from) {
      ++read_ahead_ups;
      EXPECT_NE(d.reason.find("workers waited on storage"), std::string::npos) << d.reason;
    }
    if (d.knob == kKnobNumWorkers && d.to > d.from) {
      // A worker only where the workers were the limit, not the reads.
      const double storage = StoragePercent(d.reason);
      EXPECT_GE(storage, 0) << d.reason;
      EXPECT_LT(storage, 25) << d.reason;
      EXPECT_GT(read_ahead_ups, 0) << "a worker before any read-ahead raise: " << d.reason;
    }
  }
  const ReadAheadFigures ra = stats.storage->read_ahead();
  // Autotune raised the floor, unless the read-ahead's own probes reached its ceiling
  // first (then no window had room to raise it: they race, both within ~0.5 s).
  EXPECT_TRUE(read_ahead_ups > 0 || ra.peak_limit >= ra.max_in_flight)
      << "autotune never raised read-ahead behind a 40 ms store, peak " << ra.peak_limit;
  std::printf("read-ahead: limit %d before the hungry phase, %d at the end (floor %d, peak %d, "
              "%.1f in flight on average, %.1f ms a read)\n",
              limit_before, ra.limit, ra.floor, ra.peak_limit, ra.mean_in_flight,
              1e3 * ra.mean_latency_seconds);
  EXPECT_GT(ra.limit, limit_before) << "reads in flight at the end vs the hungry start";
  EXPECT_GT(ra.limit, start_floor);
  // The summary reports the knob with the others.
  const nlohmann::json summary =
      nlohmann::json::parse(PipelineSummaryJson(**p, 1.0, 8, 0.1, 0.1, {0.5, 1.0}));
  EXPECT_GE(summary["autotune"]["read_ahead"].get<int>(), start_floor) << summary["autotune"];
  EXPECT_EQ(summary["storage"]["read_ahead"]["floor"].get<int>(),
            summary["autotune"]["read_ahead"].get<int>());
}

}  // namespace
}  // namespace flowloader
