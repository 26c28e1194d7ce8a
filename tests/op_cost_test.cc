// op_cost_test: on a real pipeline, each op of a transforms stage's list has its own cost:
// the stage's op rows (named by op, repeats numbered, the planned head as one row), the
// stage table's indented rows, the summary JSON's "ops", the metrics' `op` label, and
// trace spans nested inside their stage's span. A stage bound to two views sums each op
// over both.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exporters/metrics_exporter.h"
#include "exporters/report.h"
#include "exporters/trace.h"
#include "gmock/gmock.h"
#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kSamples = 24;  // 2 classes x 12, one epoch.

// kListA has a planned head (crop + flip, one row), then three geometry ops, center_crop
// twice, and normalize: five rows.
constexpr char kListA[] =
    "random_resized_crop(size=32); random_horizontal_flip(); center_crop(size=24); "
    "resize(size=[20, 20]); center_crop(size=16); normalize()";
// kListB is the fused pass (crop + normalize in one): one row, on two views.
constexpr char kListB[] = "random_resized_crop(size=16); normalize()";

std::vector<std::string> RowNames(const StageStats& stage) {
  std::vector<std::string> names;
  for (const OpCostRow& row : stage.op_costs()) names.push_back(row.name);
  return names;
}

class OpCostTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    const std::string data =
        testing::MakeImageFolder(testing::TempDir("op_cost"), 2, kSamples / 2);
    GraphBuilder graph;
    graph.Add("read");
    graph.Add("decode");
    graph.Add("transforms").Name("transforms_a").Outputs({"a"}).Option("ops", kListA);
    graph.Add("transforms").Name("transforms_b").Outputs({"b0", "b1"}).Option("ops", kListB);
    absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
    ASSERT_TRUE(stages.ok()) << stages.status();
    PipelineOptions o;
    o.name = "opcost";
    o.data = data;
    o.batch_size = 8;
    o.num_workers = 2;
    o.epochs = 1;
    o.device = DeviceChoice::kCpu;
    o.trace_spans = 10'000;
    o.stages = *stages;
    absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    while (true) {
      std::shared_ptr<const Batch> batch;
      bool end = false;
      ASSERT_TRUE((*p)->Next(&batch, &end).ok());
      if (end && (*p)->done()) break;
    }
    (*p)->Stop();
    stats_ = new std::shared_ptr<PipelineStats>((*p)->stats());
  }
  static void TearDownTestSuite() { delete stats_; }

  const PipelineStats& stats() { return **stats_; }
  RunSnapshot Run() {
    RunFacts facts;
    facts.wall_seconds = 1;
    facts.num_workers = 2;
    facts.batch_size = 8;
    return Snapshot(stats(), facts);
  }

  static std::shared_ptr<PipelineStats>* stats_;
};
std::shared_ptr<PipelineStats>* OpCostTest::stats_ = nullptr;

TEST_F(OpCostTest, EachOpHasARowNamedByTheOpWithItsOwnCounts) {
  ASSERT_NE(stats().Stage("transforms_a"), nullptr);
  const StageStats& a = *stats().Stage("transforms_a");
  EXPECT_THAT(RowNames(a), ElementsAre("random_resized_crop+random_horizontal_flip",
                                       "center_crop", "resize", "center_crop#2", "normalize"));
  int64_t ops_busy = 0;
  for (const OpCostRow& row : a.op_costs()) {
    EXPECT_EQ(row.applied->load(), kSamples) << row.name;  // Every op has p = 1.
    EXPECT_GT(row.busy_nanos->load(), 0) << row.name;
    ops_busy += row.busy_nanos->load();
  }
  EXPECT_LE(ops_busy, a.busy_nanos.load()) << "the ops run inside the stage's body";
  EXPECT_TRUE(RowNames(*stats().Stage("read")).empty());
  EXPECT_TRUE(RowNames(*stats().Stage("decode")).empty());
}

TEST_F(OpCostTest, AStageOnTwoViewsSumsEachOpOverThem) {
  const StageStats& b = *stats().Stage("transforms_b");
  EXPECT_THAT(RowNames(b), ElementsAre("random_resized_crop+normalize"));
  EXPECT_EQ(b.op_costs()[0].applied->load(), 2 * kSamples);
}

TEST_F(OpCostTest, TheStageTableShowsOpsIndentedUnderTheirStage) {
  const std::string table = StageTable(Run());
  EXPECT_THAT(table, HasSubstr("\ntransforms_a "));
  const size_t stage = table.find("\ntransforms_a ");
  const size_t op = table.find("\n  center_crop#2 ");
  const size_t next = table.find("\ntransforms_b ");
  EXPECT_LT(stage, op) << table;
  EXPECT_LT(op, next) << table;
  EXPECT_THAT(table.substr(op + 1, table.find('\n', op + 1) - op - 1),
              ::testing::MatchesRegex(".*  24 +[0-9.]+ +[0-9]+% of stage"))
      << table;
}

TEST_F(OpCostTest, TheSummaryJsonListsEachStagesOps) {
  const std::string json = SummaryJson(Run());
  EXPECT_THAT(json, HasSubstr("\"ops\": [{\"op\": \"random_resized_crop+random_horizontal_flip\""));
  EXPECT_THAT(json, HasSubstr("{\"op\": \"center_crop#2\", \"busy_seconds\": "));
  EXPECT_THAT(json, HasSubstr(absl::StrCat("\"op\": \"random_resized_crop+normalize\", "
                                           "\"busy_seconds\": ")));
}

TEST_F(OpCostTest, MetricsCarryAnOpLabel) {
  PipelineCollector collector;
  ASSERT_TRUE(collector.Register(*stats_).ok());
  std::map<std::string, double> applied;  // "stage/op" -> value.
  for (const prometheus::MetricFamily& f : collector.Collect()) {
    if (f.name != "flowloader_op_applied_total") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      EXPECT_EQ(labels.at("pipeline"), "opcost");
      applied[labels.at("stage") + "/" + labels.at("op")] = m.counter.value;
    }
  }
  EXPECT_EQ(applied.size(), 6u);
  EXPECT_EQ(applied["transforms_a/center_crop#2"], kSamples);
  EXPECT_EQ(applied["transforms_b/random_resized_crop+normalize"], 2 * kSamples);
}

TEST_F(OpCostTest, TraceSpansOfOpsNestInTheirStagesSpan) {
  ASSERT_NE(stats().trace, nullptr);
  const std::vector<TraceBuffer::Span> spans = stats().trace->Spans();
  ASSERT_LT(spans.size(), stats().trace->capacity()) << "the window cut the run short";
  const int32_t a = stats().StageIndex(stats().Stage("transforms_a"));
  std::map<std::pair<int32_t, int32_t>, int> ops;  // (stage, row) -> spans.
  for (const TraceBuffer::Span& op : spans) {
    if (op.op < 0) continue;
    ++ops[{op.stage, op.op}];
    bool nested = false;
    for (const TraceBuffer::Span& s : spans) {
      nested |= s.op < 0 && s.stage == op.stage && s.thread == op.thread && s.item == op.item &&
                s.start_nanos <= op.start_nanos &&
                op.start_nanos + op.duration_nanos <= s.start_nanos + s.duration_nanos;
    }
    EXPECT_TRUE(nested) << "op span " << op.op << " of stage " << op.stage << ", item "
                        << op.item;
  }
  for (int32_t row = 0; row < 5; ++row) EXPECT_EQ((ops[{a, row}]), kSamples) << row;
  const int32_t b = stats().StageIndex(stats().Stage("transforms_b"));
  EXPECT_EQ((ops[{b, 0}]), 2 * kSamples);
  EXPECT_THAT(ChromeTraceJson(stats()),
              HasSubstr("{\"name\": \"center_crop#2\", \"cat\": \"op\", \"ph\": \"X\""));
}

// The default graph's fused augment pass reports its ops in the same `op` series as a
// transforms stage (so the dashboard's per-op panel answers for `transform: train|eval`).
TEST(DefaultGraphOpCostTest, TheFusedAugmentPassIsAnOpRowNamedByItsOps) {
  SetMinLogLevel(LogLevel::kWarning);
  const std::string data =
      testing::MakeImageFolder(testing::TempDir("op_cost_default"), 2, kSamples / 2);
  for (const auto& [transform, layout, row] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"train", "float_chw", "random_resized_crop+random_horizontal_flip+normalize"},
           {"eval", "float_chw", "resize+center_crop+normalize"},
           {"eval", "uint8_hwc", "resize+center_crop"}}) {
    PipelineOptions o;
    o.name = "opcost_default";
    o.data = data;
    o.batch_size = 8;
    o.num_workers = 2;
    o.image_size = 32;
    o.epochs = 1;
    o.device = DeviceChoice::kCpu;
    o.transform = transform;
    o.layout = layout;
    absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
    ASSERT_TRUE(p.ok()) << p.status();
    for (bool end = false; !end || !(*p)->done();) {
      std::shared_ptr<const Batch> batch;
      ASSERT_TRUE((*p)->Next(&batch, &end).ok());
    }
    (*p)->Stop();
    const StageStats* augment = (*p)->stats()->Stage("augment");
    ASSERT_NE(augment, nullptr);
    EXPECT_THAT(RowNames(*augment), ElementsAre(row)) << transform;
    EXPECT_EQ(augment->op_costs()[0].applied->load(), kSamples);
    EXPECT_GT(augment->op_costs()[0].busy_nanos->load(), 0);
    PipelineCollector collector;
    ASSERT_TRUE(collector.Register((*p)->stats()).ok());
    bool found = false;
    for (const prometheus::MetricFamily& f : collector.Collect()) {
      if (f.name != "flowloader_op_busy_seconds_total") continue;
      for (const prometheus::ClientMetric& m : f.metric) {
        for (const auto& l : m.label) found |= l.name == "op" && l.value == row;
      }
    }
    EXPECT_TRUE(found) << row;
  }
}

}  // namespace
}  // namespace flowloader
