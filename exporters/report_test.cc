// report_test.cc: SummaryJson (parsed back by Python's json module and checked against
// the schema), Snapshot, and StageTable.
#include "exporters/report.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "graph/stage_stats.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

using ::testing::HasSubstr;

// kSchemaCheck loads the JSON and checks the schema's exact types (bool is not int).
constexpr char kSchemaCheck[] = R"py(
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
def is_int(v): return type(v) is int
def is_float(v): return type(v) is float
for k in ("samples", "batches", "epochs", "skipped", "num_workers", "batch_size"):
    assert is_int(d[k]), k
for k in ("seconds", "images_per_second", "consumer_wait_seconds"):
    assert is_float(d[k]), k
assert all(is_int(v) for v in d["errors"].values()), d["errors"]
for name, s in d["stages"].items():
    assert is_int(s["items"]) and is_float(s["busy_seconds"]), name
assert isinstance(d["diagnosis"]["advice"], str)
json.dump({"errors": d["errors"], "stages": sorted(d["stages"]), "samples": d["samples"],
           "ips": d["images_per_second"], "bottleneck": d["bottleneck"]},
          open(sys.argv[2], "w", encoding="utf-8"), sort_keys=True)
)py";

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ParseWithPython runs the schema check on `json`; returns its summary, or "" on failure.
std::string ParseWithPython(const std::string& json) {
  const std::string in = TempPath("summary.json");
  const std::string script = TempPath("check.py");
  const std::string out = TempPath("parsed.json");
  WriteFile(in, json);
  WriteFile(script, kSchemaCheck);
  std::remove(out.c_str());
  const std::string cmd = absl::StrCat("python3 ", script, " ", in, " ", out);
  if (std::system(cmd.c_str()) != 0) return "";
  return ReadFile(out);
}

std::shared_ptr<PipelineStats> TenSecondRun() {
  auto stats = std::make_shared<PipelineStats>("train");
  StageStats* reader = stats->AddStage("reader", 1);
  reader->set_kind(StageKind::kStorage);
  StageStats* decode = stats->AddStage("decode", 2);
  reader->items_out = 1000;
  reader->busy_nanos = 3'000'000'000;
  decode->items_out = 970;
  decode->busy_nanos = 19'000'000'000;
  reader->CountError("not_found");
  for (int i = 0; i < 30; ++i) decode->CountError("truncated");
  decode->CountError("not_found");
  stats->samples = 960;
  stats->batches = 15;
  stats->skipped = 31;
  stats->consumer_wait_nanos = 4'000'000'000;
  return stats;
}

const RunFacts kFacts = {/*wall_seconds=*/10, /*epochs=*/1, /*num_workers=*/2,
                         /*batch_size=*/64, /*cores_available=*/2};

OpCostRow OpRow(const std::string& name, int64_t busy_nanos, int64_t applied) {
  return {name, std::make_shared<std::atomic<int64_t>>(busy_nanos),
          std::make_shared<std::atomic<int64_t>>(applied)};
}

// WithTransforms adds a transforms stage, busy 10 s on 2 workers, with three ops; its
// gaussian_blur (p=0.5) takes 61% of it.
std::shared_ptr<PipelineStats> WithTransforms() {
  auto stats = TenSecondRun();
  StageStats* t = stats->AddStage("transforms", 2);
  t->items_out = 960;
  t->busy_nanos = 10'000'000'000;
  t->set_op_costs({OpRow("random_resized_crop", 2'000'000'000, 960),
                   OpRow("gaussian_blur", 6'100'000'000, 480),
                   OpRow("normalize", 1'000'000'000, 960)});
  return stats;
}

TEST(SummaryJsonTest, ParsesBackWithTheDocumentedSchema) {
  const std::string json = SummaryJson(*TenSecondRun(), kFacts);
  EXPECT_EQ(ParseWithPython(json),
            "{\"bottleneck\": \"decode\", \"errors\": {\"not_found\": 2, \"truncated\": 30}, "
            "\"ips\": 96.0, \"samples\": 960, \"stages\": [\"decode\", \"reader\"]}")
      << json;
}

TEST(SummaryJsonTest, StartsWithTheSchemaKeysInOrder) {
  const std::string json = SummaryJson(*TenSecondRun(), kFacts);
  EXPECT_THAT(json, ::testing::StartsWith(
                        "{\"samples\": 960, \"batches\": 15, \"epochs\": 1, \"seconds\": 10.0, "
                        "\"images_per_second\": 96.0, \"skipped\": 31, \"errors\": "
                        "{\"not_found\": 2, \"truncated\": 30}, \"num_workers\": 2, "
                        "\"batch_size\": 64, \"stages\": {\"reader\": {\"items\": 1000, "
                        "\"busy_seconds\": 3.0, \"utilization\": 0.3"));
}

TEST(SummaryJsonTest, AStageWithOpsListsThemWithTheirShares) {
  const std::string json = SummaryJson(*WithTransforms(), kFacts);
  EXPECT_THAT(json, HasSubstr("\"transforms\": {\"items\": 960, \"busy_seconds\": 10.0, "
                              "\"utilization\": 0.5, \"concurrency\": 2, \"errors\": 0, "
                              "\"ops\": [{\"op\": \"random_resized_crop\", "
                              "\"busy_seconds\": 2.0, \"share\": 0.2, \"applied\": 960}, "
                              "{\"op\": \"gaussian_blur\", \"busy_seconds\": 6.1, "
                              "\"share\": 0.61, \"applied\": 480}, {\"op\": \"normalize\""))
      << json;
  EXPECT_THAT(json, HasSubstr("\"decode\": {\"items\": 970, \"busy_seconds\": 19.0, "
                              "\"utilization\": 0.95, \"concurrency\": 2, \"errors\": 31}"))
      << "a stage without ops has no \"ops\" key";
  EXPECT_NE(ParseWithPython(json), "");
}

TEST(SummaryJsonTest, CountsSamplesPerSource) {
  auto stats = std::make_shared<PipelineStats>("p");
  stats->SetSources({"a", "b"});
  stats->CountSources({1, 0, 1});
  EXPECT_THAT(SummaryJson(*stats, kFacts), HasSubstr("\"sources\": {\"a\": 1, \"b\": 2}"));
}

TEST(SummaryJsonTest, EscapesHostileNamesIntoValidJson) {
  auto stats = std::make_shared<PipelineStats>("p");
  StageStats* s = stats->AddStage("we\"ird\\stage\n\x01\xff", 1);
  s->CountError("reason \"quoted\"\t\xc3");
  const std::string parsed = ParseWithPython(SummaryJson(*stats, kFacts));
  EXPECT_THAT(parsed, HasSubstr("\"reason \\\"quoted\\\"\\t\\ufffd\": 1")) << parsed;
  EXPECT_THAT(parsed, HasSubstr("we\\\"ird\\\\stage\\n\\u0001\\ufffd"));
}

TEST(SummaryJsonTest, ZeroWallTimeGivesZeroRatesNotNaN) {
  RunFacts facts = kFacts;
  facts.wall_seconds = 0;
  const std::string json = SummaryJson(*TenSecondRun(), facts);
  EXPECT_THAT(json, HasSubstr("\"images_per_second\": 0.0"));
  EXPECT_NE(ParseWithPython(json), "");
}

TEST(SnapshotTest, CopiesCountersAndKinds) {
  auto stats = TenSecondRun();
  stats->AddStage("upload", 1)->set_kind(StageKind::kTransfer);
  stats->host_bytes_budget = 1000;
  stats->host_bytes_in_flight = 900;
  const RunSnapshot run = Snapshot(*stats, kFacts);
  EXPECT_EQ(run.samples, 960u);
  EXPECT_EQ(run.skipped, 31u);
  EXPECT_DOUBLE_EQ(run.consumer_wait_seconds, 4);
  EXPECT_EQ(run.host_bytes_in_flight, 900);
  ASSERT_EQ(run.stages.size(), 3u);
  EXPECT_EQ(run.stages[0].kind, StageKind::kStorage);
  EXPECT_EQ(run.stages[1].kind, StageKind::kCompute);
  EXPECT_EQ(run.stages[2].kind, StageKind::kTransfer);
  EXPECT_EQ(run.stages[1].items, 970u);
  EXPECT_DOUBLE_EQ(run.stages[1].busy_seconds, 19);
  EXPECT_DOUBLE_EQ(Utilization(run.stages[1], 10), 0.95);
}

// A stage's kind is what it declares, never a guess from the name its user chose: an op
// named copy_paste is compute, not a host-to-device transfer.
TEST(SnapshotTest, KindIsDeclaredNotGuessedFromTheName) {
  auto stats = std::make_shared<PipelineStats>("train");
  stats->AddStage("copy_paste", 2);
  stats->AddStage("download", 2);
  const RunSnapshot run = Snapshot(*stats, kFacts);
  ASSERT_EQ(run.stages.size(), 2u);
  EXPECT_EQ(run.stages[0].kind, StageKind::kCompute);
  EXPECT_EQ(run.stages[1].kind, StageKind::kCompute);
}

TEST(SnapshotTest, CopiesOpCostsInRunOrder) {
  const RunSnapshot run = Snapshot(*WithTransforms(), kFacts);
  ASSERT_EQ(run.stages.size(), 3u);
  EXPECT_TRUE(run.stages[1].ops.empty());
  ASSERT_EQ(run.stages[2].ops.size(), 3u);
  EXPECT_EQ(run.stages[2].ops[1].name, "gaussian_blur");
  EXPECT_DOUBLE_EQ(run.stages[2].ops[1].busy_seconds, 6.1);
  EXPECT_EQ(run.stages[2].ops[1].applied, 480u);
  EXPECT_DOUBLE_EQ(OpShare(run.stages[2], run.stages[2].ops[1]), 0.61);
}

TEST(SnapshotTest, CopiesTheWaitSpreadAndWhatSetsConcurrency) {
  auto stats = TenSecondRun();
  stats->Stage("decode")->set_follows_num_workers(true);
  stats->steady_consumer_waits.Observe(1'000'000);  // 1 ms
  stats->steady_consumer_waits.Observe(3'000'000);  // 3 ms
  const RunSnapshot run = Snapshot(*stats, kFacts);
  EXPECT_EQ(run.stages[0].concurrency_source, ConcurrencySource::kFixed);
  EXPECT_EQ(run.stages[1].concurrency_source, ConcurrencySource::kNumWorkers);
  EXPECT_EQ(run.steady_waits, 2u);
  EXPECT_DOUBLE_EQ(run.steady_wait_seconds, 0.004);
  EXPECT_DOUBLE_EQ(run.steady_wait_squares, 1e-5);
  EXPECT_DOUBLE_EQ(WaitCv(run), 0.5);  // Mean 2 ms, deviation 1 ms.
}

TEST(StageTableTest, AWorkerGroupHasItsOwnRow) {
  auto stats = std::make_shared<PipelineStats>("train");
  StageStats* read = stats->AddStage("read", 2);
  StageStats* decode = stats->AddStage("decode", 2);
  stats->AddStage("collate", 1);
  for (StageStats* s : {read, decode}) {
    s->set_worker_group("read+decode");
    s->items_out = 100;
  }
  read->busy_nanos = 2'000'000'000;
  decode->busy_nanos = 8'000'000'000;
  const std::string table = StageTable(*stats, kFacts);
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u) << table;  // Header, 3 stages, the group, footer.
  EXPECT_EQ(lines[1], "read              2        100      2.00   10%       0");
  EXPECT_EQ(lines[2], "decode            2        100      8.00   40%       0");
  EXPECT_EQ(lines[3], "read+decode       2        100     10.00   50%       0");
  EXPECT_EQ(lines[4], "collate           1          0      0.00    0%       0");
}

TEST(StageTableTest, OneAlignedRowPerStageAndAVerdict) {
  const std::string table = StageTable(*TenSecondRun(), kFacts);
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << table;  // Header, 2 stages, footer.
  EXPECT_EQ(lines[0], "stage  workers      items    busy_s busy%  errors");
  EXPECT_EQ(lines[1], "reader       1       1000      3.00   30%       1");
  EXPECT_EQ(lines[2], "decode       2        970     19.00   95%      31");
  EXPECT_EQ(lines[3], "consumer waited 4.00 s of 10.00 s (40%); bottleneck: decode");
}

TEST(StageTableTest, OpsAreIndentedUnderTheirStageWithTheirShare) {
  const std::string table = StageTable(*WithTransforms(), kFacts);
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 8u) << table;  // Header, 3 stages, 3 ops, footer.
  // The name column widens to the indented op names.
  EXPECT_EQ(lines[0], "stage                 workers      items    busy_s busy%  errors");
  EXPECT_EQ(lines[3], "transforms                  2        960     10.00   50%       0");
  EXPECT_EQ(lines[4], "  random_resized_crop                960      2.00   20% of stage");
  EXPECT_EQ(lines[5], "  gaussian_blur                      480      6.10   61% of stage");
  EXPECT_EQ(lines[6], "  normalize                          960      1.00   10% of stage");
}

TEST(StageTableTest, EmptyPipelineStillRenders) {
  const std::string table = StageTable(PipelineStats("empty"), kFacts);
  EXPECT_THAT(table, HasSubstr("bottleneck: -"));
}

}  // namespace
}  // namespace flowloader
