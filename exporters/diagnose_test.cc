// diagnose_test.cc: the tuning rules on hand-made runs: a slow reader, a slow decode or
// augment, a slow consumer, and the cases around them (serial stage, transfers, memory,
// latency-bound, over-provisioned workers), then the honesty rules, table-driven: a run
// too short to judge, prefetch advice only on evidence and under the cap, num_workers
// advice never past the usable CPUs, fluctuating waits, num_workers=1 is not "serial",
// the busiest share is the table's, and num_workers far over the CPUs.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

#include "exporters/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

// KindOf is the kind the built-in stage types these tests name declare: read (here also
// "reader") is storage, upload a transfer, the rest compute.
StageKind KindOf(const std::string& name) {
  if (name == "read" || name == "reader") return StageKind::kStorage;
  if (name == "upload") return StageKind::kTransfer;
  return StageKind::kCompute;
}

// Stage makes a stage that was busy `utilization` of its worker time over `wall`.
StageLoad Stage(const std::string& name, int concurrency, double utilization,
                double wall = 100) {
  StageLoad s;
  s.name = name;
  s.kind = KindOf(name);
  s.type = name;
  s.concurrency = concurrency;
  s.items = 10000;
  s.busy_seconds = utilization * concurrency * wall;
  return s;
}

// MakeRun makes a 100-second run with `wait_share` of consumer waiting.
RunSnapshot MakeRun(std::vector<StageLoad> stages, double wait_share, int num_workers = 2,
                int cores = 2) {
  RunSnapshot run;
  run.facts.wall_seconds = 100;
  run.facts.num_workers = num_workers;
  run.facts.cores_available = cores;
  run.facts.batch_size = 64;
  run.samples = 10000;
  run.consumer_wait_seconds = wait_share * 100;
  run.stages = std::move(stages);
  return run;
}

// Grouped makes a stage that shares its workers with the others of `group`.
StageLoad Grouped(const std::string& name, int concurrency, double utilization,
                  const std::string& group) {
  StageLoad s = Stage(name, concurrency, utilization);
  s.worker_group = group;
  return s;
}

TEST(DiagnoseTest, StagesSharingWorkersAreJudgedTogetherAndNamedByTheHeaviest) {
  // Alone, no stage is saturated; together they keep both workers 100% busy.
  const std::string g = "read+decode+augment";
  const Diagnosis d = Diagnose(MakeRun({Stage("source", 1, 0.0), Grouped("read", 2, 0.11, g),
                                        Grouped("decode", 2, 0.67, g),
                                        Grouped("augment", 2, 0.22, g),
                                        Stage("collate", 1, 0.01)},
                                       0.97));
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_EQ(d.busiest_stage, g);
  EXPECT_NEAR(d.busiest_utilization, 1.0, 1e-9);
  EXPECT_THAT(d.advice, StartsWith("the 2 workers running read+decode+augment are 100% busy and "
                                   "the consumer waited 97% of the time: the 2 CPUs this "
                                   "process may use are the limit (num_workers=2), so more "
                                   "workers would not help: make decode cheaper"));
  EXPECT_THAT(d.notes, ElementsAre("the 2 workers running read+decode+augment are 100% busy: "
                                   "decode 67% + augment 22% + read 11%"));
}

// WithOps gives `s` op rows taking these shares of its busy time.
StageLoad WithOps(StageLoad s, std::vector<std::pair<std::string, double>> shares) {
  for (const auto& [name, share] : shares) s.ops.push_back({name, share * s.busy_seconds, 100});
  return s;
}

TEST(DiagnoseTest, SaturatedTransformsNamesItsCostliestOp) {
  const std::string g = "read+decode+transforms_a";
  const Diagnosis d = Diagnose(MakeRun(
      {Grouped("read", 2, 0.05, g), Grouped("decode", 2, 0.30, g),
       WithOps(Grouped("transforms_a", 2, 0.60, g),
               {{"random_resized_crop+random_horizontal_flip", 0.20},
                {"gaussian_blur", 0.61},
                {"normalize", 0.12}})},
      0.5));
  EXPECT_EQ(d.bottleneck, "transforms_a");
  EXPECT_THAT(d.notes, Contains("make transforms_a cheaper: its gaussian_blur takes 61% of it"));
}

TEST(DiagnoseTest, OpsAreNotNamedWhenTheirStageIsNotTheLimit) {
  // The consumer is the bottleneck; and, starving but unsaturated, no op is to blame.
  const StageLoad t = WithOps(Stage("transforms", 2, 0.5), {{"gaussian_blur", 0.9}});
  for (const Diagnosis& d : {Diagnose(MakeRun({t}, 0.01)), Diagnose(MakeRun({t}, 0.5))}) {
    for (const std::string& n : d.notes) EXPECT_THAT(n, Not(HasSubstr("gaussian_blur")));
  }
}

TEST(DiagnoseTest, SlowReaderInsideAWorkerGroupIsStillStorage) {
  const std::string g = "read+decode+augment";
  const Diagnosis d = Diagnose(MakeRun({Grouped("read", 2, 0.80, g),
                                        Grouped("decode", 2, 0.15, g),
                                        Grouped("augment", 2, 0.05, g)},
                                       0.6));
  EXPECT_EQ(d.bottleneck, "read");
  EXPECT_THAT(d.advice, StartsWith("read is the bottleneck: storage, not CPU"));
}

TEST(DiagnoseTest, SlowReaderIsStorageNotCpu) {
  const Diagnosis d = Diagnose(MakeRun(
      {Stage("reader", 1, 0.97), Stage("decode", 4, 0.40), Stage("collate", 1, 0.1)}, 0.5, 4,
      16));
  EXPECT_EQ(d.bottleneck, "reader");
  EXPECT_TRUE(d.loader_bound);
  EXPECT_DOUBLE_EQ(d.busiest_utilization, 0.97);
  EXPECT_DOUBLE_EQ(d.consumer_wait_share, 0.5);
  EXPECT_THAT(d.advice, StartsWith("reader is the bottleneck: storage, not CPU (reader is 97% "
                                   "busy on 1 worker, consumer waited 50%)"));
}

// S3Requests is `n` s3 requests of `seconds` each (and `slowdowns` SlowDown errors).
StorageSchemeStats S3Requests(int n, double seconds, int slowdowns = 0) {
  StorageStats stats;
  for (int i = 0; i < n; ++i) {
    stats.Record("s3", static_cast<int64_t>(seconds * 1e9), 1000,
                 i < slowdowns ? "SlowDown" : "", false);
  }
  return stats.Read()[0];
}

TEST(DiagnoseTest, SlowRemoteReaderNamesStorageWithItsMeasuredLatency) {
  const std::string g = "read+decode+augment";
  RunSnapshot run = MakeRun({Grouped("read", 2, 0.80, g), Grouped("decode", 2, 0.15, g),
                             Grouped("augment", 2, 0.05, g)},
                            0.6);
  // 8000 requests of 25 ms over the 100 s run: 2.0 in flight on average.
  run.storage = {S3Requests(8000, 0.025, 80)};
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.bottleneck, "read");
  EXPECT_THAT(d.advice, StartsWith("read starves the pipeline: s3 requests take 28 ms median "
                                   "(p99 35 ms), 2.0 in flight on average over 8000 requests, "
                                   "1% failed and were retried or skipped (SlowDown 80)"));
  EXPECT_THAT(d.advice, HasSubstr("raise read_ahead"));
  EXPECT_THAT(d.advice, HasSubstr("cache_dir"));
  EXPECT_THAT(d.advice, Not(HasSubstr("read-ahead auto"))) << "none ran";

  // With a read-ahead, the limit it chose from that latency and what it had in flight.
  run.read_ahead.present = true;
  run.read_ahead.adaptive = true;
  run.read_ahead.limit = 24;
  run.read_ahead.peak_limit = 36;
  run.read_ahead.mean_in_flight = 19.5;
  EXPECT_THAT(Diagnose(run).advice,
              HasSubstr("(SlowDown 80); read-ahead auto: limit 24 (peak 36), 19.5 in flight on "
                        "average while reading"));
}

// Workers waiting on remote reads a third of their time, decode busier: the waits are
// what a faster store (or more reads in flight) removes, so storage is named, with its
// latency and what autotune kept in flight; a few reads' waits leave decode named.
TEST(DiagnoseTest, WorkersWaitingOnRemoteReadsNameStorageOverABusierDecode) {
  const std::string g = "read+decode+augment";
  RunSnapshot run = MakeRun({Grouped("read", 2, 0.35, g), Grouped("decode", 2, 0.55, g),
                             Grouped("augment", 2, 0.08, g)},
                            0.4);
  run.storage = {S3Requests(4000, 0.025)};
  run.read_ahead.present = true;
  run.read_ahead.adaptive = true;
  run.read_ahead.limit = 80;
  run.read_ahead.peak_limit = 80;
  run.read_ahead.floor = 72;
  run.read_ahead.min_in_flight = 16;
  run.read_ahead.max_in_flight = 128;
  Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.bottleneck, "read") << d.advice;
  EXPECT_THAT(d.advice, StartsWith("read starves the pipeline: s3 requests take 28 ms median"));
  EXPECT_THAT(d.advice, HasSubstr("at least 72 kept in flight by autotune (of 128 at most)"));
  EXPECT_THAT(d.advice, HasSubstr("(read is 35% busy on 2 workers, consumer waited 40%)"));
  EXPECT_THAT(d.notes, Not(Contains(StartsWith("storage: ")))) << "named once, in the advice";

  run.stages[0] = Grouped("read", 2, 0.10, g);
  run.stages[1] = Grouped("decode", 2, 0.80, g);
  d = Diagnose(run);
  EXPECT_EQ(d.bottleneck, "decode") << d.advice;
  EXPECT_THAT(d.notes, Contains(StartsWith("storage: s3 requests take 28 ms median")));
}

TEST(DiagnoseTest, StorageLatencyIsANoteWhenComputeIsTheLimit) {
  RunSnapshot run = MakeRun({Stage("read", 2, 0.10), Stage("decode", 2, 0.95)}, 0.5, 2, 16);
  run.storage = {S3Requests(1000, 0.002)};
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_THAT(d.notes, Contains(StartsWith("storage: s3 requests take 2 ms median")));
}

TEST(DiagnoseTest, SlowDecodeOnAFullMachineSaysTheMachineIsTheLimit) {
  const Diagnosis d = Diagnose(
      MakeRun({Stage("reader", 1, 0.2), Stage("decode", 2, 0.98), Stage("collate", 1, 0.1)}, 0.41));
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_EQ(d.advice,
            "decode is 98% busy on 2 workers and the consumer waited 41% of the time: the 2 "
            "CPUs this process may use are the limit (num_workers=2), so more workers would "
            "not help: make decode cheaper, e.g. decode at reduced size or pre-resize the "
            "dataset, or give the process more CPUs");
}

TEST(DiagnoseTest, SlowDecodeWithFreeCoresSaysHowManyWorkers) {
  const Diagnosis d = Diagnose(
      MakeRun({Stage("reader", 1, 0.2), Stage("decode", 2, 0.98)}, 0.41, /*num_workers=*/2,
          /*cores=*/16));
  // Throughput must grow 1 / (1 - 0.41) = 1.7x: 4 workers, within the 16 CPUs.
  EXPECT_EQ(d.advice,
            "decode is 98% busy on 2 workers and the consumer waited 41% of the time: raise "
            "num_workers to 4 (16 CPUs usable)");
}

TEST(DiagnoseTest, SlowAugmentIsTreatedLikeDecode) {
  const Diagnosis d = Diagnose(MakeRun(
      {Stage("reader", 1, 0.1), Stage("decode", 4, 0.5), Stage("augment", 4, 0.9)}, 0.3, 4,
      16));
  EXPECT_EQ(d.bottleneck, "augment");
  EXPECT_EQ(d.advice,
            "augment is 90% busy on 4 workers and the consumer waited 30% of the time: raise "
            "num_workers to 6 (16 CPUs usable)");
}

TEST(DiagnoseTest, UnknownCpusPointToTune) {
  const Diagnosis d = Diagnose(MakeRun({Stage("augment", 4, 0.9)}, 0.3, 4, /*cores=*/0));
  EXPECT_EQ(d.advice,
            "augment is 90% busy on 4 workers and the consumer waited 30% of the time: the "
            "CPUs this process may use are unknown, and so is whether more workers would "
            "help; run `flowloader tune` to measure it");
}

TEST(DiagnoseTest, SlowConsumerMeansNothingToTune) {
  const Diagnosis d = Diagnose(
      MakeRun({Stage("reader", 1, 0.3), Stage("decode", 2, 0.7), Stage("collate", 1, 0.1)}, 0.01));
  EXPECT_EQ(d.bottleneck, "consumer");
  EXPECT_EQ(d.busiest_stage, "decode");
  EXPECT_FALSE(d.loader_bound);
  EXPECT_EQ(d.advice,
            "the consumer is the bottleneck (waited 1% of the time): the loader keeps up; "
            "nothing to tune");
  EXPECT_THAT(d.notes, IsEmpty());
}

TEST(DiagnoseTest, SlowConsumerWithIdleWorkersSuggestsFewer) {
  const Diagnosis d = Diagnose(MakeRun({Stage("decode", 8, 0.2)}, 0.0, 8, 16));
  EXPECT_EQ(d.bottleneck, "consumer");
  EXPECT_THAT(d.notes, ElementsAre("decode is only 20% busy on 8 workers: 2 workers would do, "
                                   "leaving cores to training"));
}

TEST(DiagnoseTest, SaturatedSerialStageCapsThePipeline) {
  const Diagnosis d =
      Diagnose(MakeRun({Stage("decode", 4, 0.6), Stage("collate", 1, 0.96)}, 0.25, 4, 16));
  EXPECT_EQ(d.bottleneck, "collate");
  EXPECT_THAT(d.advice, HasSubstr("collate is serial and caps the pipeline"));
}

TEST(DiagnoseTest, SaturatedUploadIsAboutCopies) {
  const Diagnosis d = Diagnose(MakeRun({Stage("decode", 4, 0.6), Stage("upload", 1, 0.9)}, 0.2));
  EXPECT_THAT(d.advice, StartsWith("upload is the bottleneck: host-to-device copies"));
}

TEST(DiagnoseTest, NothingSaturatedButStarvingOnBuffersMeansMorePrefetch) {
  RunSnapshot run = MakeRun({Stage("source", 1, 0.01), Stage("decode", 2, 0.6)}, 0.3);
  run.facts.prefetch_batches = 2;
  run.stages[0].blocked_seconds = 40;  // 40% of the run without a free batch buffer.
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_EQ(d.advice,
            "no stage is saturated (busiest: decode at 60% on 2 workers) yet the consumer waited "
            "30% of the time: the source waited for a free batch buffer 40% of the time while "
            "workers were idle: raise prefetch_batches to 4 (now 2) so more batches are made "
            "at once");
}

TEST(DiagnoseTest, MemoryNearBudgetPrefersSmallerBatchOverPrefetch) {
  RunSnapshot run = MakeRun({Stage("reader", 1, 0.5), Stage("decode", 2, 0.6)}, 0.3);
  run.host_bytes_budget = int64_t{2} << 30;
  run.host_bytes_in_flight = (int64_t{2} << 30) / 100 * 95;
  const Diagnosis d = Diagnose(run);
  EXPECT_THAT(d.advice, HasSubstr("memory is near its budget, so use a smaller batch"));
  EXPECT_THAT(d.notes, ElementsAre("host memory in flight is 95% of its budget (1.90 GiB of "
                                   "2.00 GiB): use a smaller batch or fewer prefetched "
                                   "batches"));
}

TEST(DiagnoseTest, PinnedMemoryIsCheckedToo) {
  RunSnapshot run = MakeRun({Stage("decode", 2, 0.5)}, 0.0);
  run.pinned_bytes_budget = 1000;
  run.pinned_bytes_in_flight = 1000;
  EXPECT_THAT(Diagnose(run).notes,
              ElementsAre(StartsWith("pinned memory in flight is 100% of its budget")));
}

TEST(DiagnoseTest, SkippedSamplesAreNoted) {
  RunSnapshot run = MakeRun({Stage("decode", 1, 0.5)}, 0.0);
  run.samples = 990;
  run.skipped = 10;
  EXPECT_THAT(Diagnose(run).notes,
              ElementsAre("10 samples were skipped (1% of those read); see \"errors\" for the "
                          "reasons"));
}

TEST(DiagnoseTest, TieGoesToTheUpstreamStage) {
  const Diagnosis d = Diagnose(MakeRun({Stage("decode", 2, 0.9), Stage("augment", 2, 0.9)}, 0.3));
  EXPECT_EQ(d.bottleneck, "decode");
}

TEST(DiagnoseTest, NoDataIsNoVerdict) {
  EXPECT_EQ(Diagnose(RunSnapshot{}).bottleneck, "");
  RunSnapshot no_wall = MakeRun({Stage("decode", 2, 0.9)}, 0.3);
  no_wall.facts.wall_seconds = 0;
  EXPECT_EQ(Diagnose(no_wall).bottleneck, "");
}

TEST(DiagnoseTest, ThresholdsAreOptions) {
  DiagnoseOptions strict;
  strict.starving_share = 0.005;
  EXPECT_TRUE(Diagnose(MakeRun({Stage("decode", 2, 0.9)}, 0.01), strict).loader_bound);
  EXPECT_FALSE(Diagnose(MakeRun({Stage("decode", 2, 0.9)}, 0.01)).loader_bound);
}

// ---- The honesty rules: each says "raise X" only on evidence, or says it cannot tell.

// NoRaise: the advice recommends no knob.
const auto NoRaise = Not(HasSubstr("raise"));

struct ShortCase {
  const char* what;
  double wall;
  double startup;  // < 0 = unknown.
  double steady;   // < 0 = unknown.
  bool too_short;
};

class ShortRunTest : public ::testing::TestWithParam<ShortCase> {};

TEST_P(ShortRunTest, TooShortToJudgeRecommendsNothing) {
  const ShortCase& c = GetParam();
  // Starving on saturated workers with free CPUs: a judged run says "raise num_workers".
  RunSnapshot run = MakeRun({Stage("decode", 2, 0.95, c.wall)}, 0.5, 2, 16);
  run.facts.wall_seconds = c.wall;
  run.consumer_wait_seconds = 0.5 * c.wall;
  run.facts.startup_seconds = c.startup;
  run.facts.steady_seconds = c.steady;
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.too_short, c.too_short) << d.advice;
  if (c.too_short) {
    EXPECT_THAT(d.advice, AllOf(StartsWith("the run is too short to judge: "), NoRaise));
    EXPECT_EQ(d.bottleneck, "");
  } else {
    EXPECT_THAT(d.advice, HasSubstr("raise num_workers to 4"));
    EXPECT_EQ(d.bottleneck, "decode");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, ShortRunTest,
    ::testing::Values(
        // The demo: 0.2 s to the first batch of a 1.16 s run.
        ShortCase{"demo", 1.16, 0.205, 0.955, true},
        ShortCase{"startup_over_20_percent", 100, 25, 75, true},
        ShortCase{"steady_under_3_s", 3.2, 0.3, 2.9, true},
        ShortCase{"no_batch_yet", 5, 5, 0, true},
        ShortCase{"long_enough", 100, 10, 90, false},
        ShortCase{"startup_exactly_20_percent", 20, 4, 16, false},
        ShortCase{"unknown", 100, -1, -1, false}),
    [](const ::testing::TestParamInfo<ShortCase>& info) { return info.param.what; });

TEST(ShortRunMessageTest, SaysWhyWithTheNumbers) {
  RunSnapshot run = MakeRun({Stage("decode", 2, 0.9)}, 0.9);
  run.facts.wall_seconds = 1.16;
  run.facts.startup_seconds = 0.35;
  run.facts.steady_seconds = 0.81;
  EXPECT_EQ(Diagnose(run).advice,
            "the run is too short to judge: start-up (to the first batch) took 0.35 s, 30.2% of "
            "the 1.16 s run (over 20%) and the steady state lasted 0.81 s (under 3 s); nothing "
            "is recommended from it: run more epochs, or `flowloader tune` to measure the knobs");
}

struct PrefetchCase {
  const char* what;
  int prefetch;           // 0 = unknown.
  double buffers_out;     // Share of the run the source waited for a free batch buffer.
  const char* expected;   // In the advice.
};

class PrefetchAdviceTest : public ::testing::TestWithParam<PrefetchCase> {};

TEST_P(PrefetchAdviceTest, OnlyOnBufferEvidenceAndUnderTheCap) {
  const PrefetchCase& c = GetParam();
  // Nothing saturated, the consumer starving: the old verdict was always "raise prefetch".
  RunSnapshot run = MakeRun({Stage("source", 1, 0.01), Stage("decode", 2, 0.6)}, 0.3);
  run.facts.prefetch_batches = c.prefetch;
  run.stages[0].blocked_seconds = c.buffers_out * run.facts.wall_seconds;
  const Diagnosis d = Diagnose(run);
  EXPECT_THAT(d.advice, HasSubstr(c.expected));
  const bool raises = absl::StrContains(c.expected, "raise");
  if (!raises) {
    EXPECT_THAT(d.advice, AllOf(NoRaise, HasSubstr("`flowloader tune`")));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PrefetchAdviceTest,
    ::testing::Values(
        PrefetchCase{"blocked_under_cap", 3, 0.30, "raise prefetch_batches to 4 (now 3)"},
        PrefetchCase{"blocked_at_1", 1, 0.50, "raise prefetch_batches to 2 (now 1)"},
        PrefetchCase{"at_cap", 4, 0.30, "prefetch_batches is already 4"},
        PrefetchCase{"demo_6", 6, 0.50, "prefetch_batches is already 6"},
        PrefetchCase{"demo_12", 12, 0.50, "prefetch_batches is already 12"},
        PrefetchCase{"source_not_blocked", 3, 0.02,
                     "the source waited for a free batch buffer only 2% of the time"},
        PrefetchCase{"unknown", 0, 0.50, "prefetch_batches is unknown"}),
    [](const ::testing::TestParamInfo<PrefetchCase>& info) { return info.param.what; });

TEST(TransferAdviceTest, SaturatedTransferDoesNotAskForPrefetchAtTheCap) {
  RunSnapshot run = MakeRun({Stage("decode", 4, 0.6), Stage("upload", 1, 0.9)}, 0.2);
  run.facts.prefetch_batches = 3;
  EXPECT_THAT(Diagnose(run).advice, HasSubstr("keep more batches in flight"));
  run.facts.prefetch_batches = 6;
  EXPECT_THAT(Diagnose(run).advice, Not(HasSubstr("batches in flight")));
}

struct WorkersCase {
  const char* what;
  int num_workers;
  int cpus;          // 0 = unknown.
  double wait;
  const char* expected;  // In the advice.
};

class NumWorkersAdviceTest : public ::testing::TestWithParam<WorkersCase> {};

TEST_P(NumWorkersAdviceTest, NeverPastTheUsableCpus) {
  const WorkersCase& c = GetParam();
  StageLoad decode = Stage("decode", c.num_workers, 0.97);
  decode.concurrency_source = ConcurrencySource::kNumWorkers;
  const Diagnosis d = Diagnose(MakeRun({decode}, c.wait, c.num_workers, c.cpus));
  EXPECT_THAT(d.advice, HasSubstr(c.expected));
  EXPECT_THAT(d.advice, Not(HasSubstr("serial")));
  // Whatever the case, a target it names is within the CPUs.
  const size_t at = d.advice.find("raise num_workers to ");
  if (at != std::string::npos) {
    EXPECT_LE(std::stoi(d.advice.substr(at + 21)), c.cpus) << d.advice;
  } else {
    EXPECT_THAT(d.advice, NoRaise);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NumWorkersAdviceTest,
    ::testing::Values(
        WorkersCase{"free_cpus", 2, 16, 0.41, "raise num_workers to 4 (16 CPUs usable)"},
        WorkersCase{"one_worker_two_cpus", 1, 2, 0.41, "raise num_workers to 2 (2 CPUs usable)"},
        WorkersCase{"capped_at_the_cpus", 3, 4, 0.9, "raise num_workers to 4 (4 CPUs usable)"},
        WorkersCase{"at_the_cpus", 2, 2, 0.41,
                    "the 2 CPUs this process may use are the limit (num_workers=2)"},
        WorkersCase{"past_the_cpus", 8, 4, 0.41,
                    "the 4 CPUs this process may use are the limit (num_workers=8)"},
        WorkersCase{"cpus_unknown", 2, 0, 0.41, "run `flowloader tune` to measure it"}),
    [](const ::testing::TestParamInfo<WorkersCase>& info) { return info.param.what; });

struct SerialCase {
  const char* what;
  const char* stage;
  ConcurrencySource source;
  int num_workers;
  bool serial;
};

class SerialTest : public ::testing::TestWithParam<SerialCase> {};

TEST_P(SerialTest, OnlyAStageFixedAtOneWorkerIsSerial) {
  const SerialCase& c = GetParam();
  StageLoad s = Stage(c.stage, 1, 0.96);
  s.concurrency_source = c.source;
  const Diagnosis d = Diagnose(MakeRun({s}, 0.5, c.num_workers, 4));
  if (c.serial) {
    EXPECT_THAT(d.advice, HasSubstr(absl::StrCat(c.stage, " is serial and caps the pipeline")));
  } else {
    EXPECT_THAT(d.advice, AllOf(Not(HasSubstr("serial")),
                                HasSubstr("raise num_workers to 2 (4 CPUs usable)")));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SerialTest,
    ::testing::Values(
        // --num_workers=1: decode runs on 1 worker because of the flag.
        SerialCase{"decode_num_workers_1", "decode", ConcurrencySource::kNumWorkers, 1, false},
        SerialCase{"unknown_source_num_workers_1", "decode", ConcurrencySource::kUnknown, 1,
                   false},
        SerialCase{"collate_num_workers_1", "collate", ConcurrencySource::kFixed, 1, true},
        SerialCase{"collate_num_workers_4", "collate", ConcurrencySource::kUnknown, 4, true}),
    [](const ::testing::TestParamInfo<SerialCase>& info) { return info.param.what; });

// Waits sets the run's per-batch consumer waits (seconds) as the pipeline records them.
void SetWaits(RunSnapshot* run, const std::vector<double>& waits) {
  run->steady_waits = waits.size();
  run->steady_wait_seconds = 0;
  run->steady_wait_squares = 0;
  for (double w : waits) {
    run->steady_wait_seconds += w;
    run->steady_wait_squares += w * w;
  }
}

TEST(WaitCvTest, IsStandardDeviationOverMean) {
  RunSnapshot run;
  SetWaits(&run, {0.01, 0.01, 0.01, 0.01});
  EXPECT_NEAR(WaitCv(run), 0, 1e-6);
  SetWaits(&run, {0, 0.02, 0, 0.02});  // Mean 10 ms, deviation 10 ms.
  EXPECT_NEAR(WaitCv(run), 1, 1e-9);
  SetWaits(&run, {0.01});
  EXPECT_EQ(WaitCv(run), 0);
  SetWaits(&run, {});
  EXPECT_EQ(WaitCv(run), 0);
}

struct FluctuationCase {
  const char* what;
  std::vector<double> waits;  // One per batch, seconds.
  double wait_share;
  bool noted;
};

class FluctuationTest : public ::testing::TestWithParam<FluctuationCase> {};

TEST_P(FluctuationTest, CvOverHalfIsNamedWithItsCauses) {
  const FluctuationCase& c = GetParam();
  RunSnapshot run = MakeRun({Stage("decode", 2, 0.6)}, c.wait_share);
  run.facts.batch_size = 8;
  SetWaits(&run, c.waits);
  const Diagnosis d = Diagnose(run);
  const auto note = AllOf(StartsWith("the time between batches fluctuates"),
                          HasSubstr("the batch is too small for the per-batch overhead "
                                    "(batch_size=8)"),
                          HasSubstr("storage has a slow tail"));
  if (c.noted) {
    EXPECT_THAT(d.notes, Contains(note));
  } else {
    EXPECT_THAT(d.notes, Not(Contains(StartsWith("the time between batches"))));
  }
}

std::vector<double> Repeat(std::vector<double> pattern, int times) {
  std::vector<double> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), pattern.begin(), pattern.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FluctuationTest,
    ::testing::Values(
        // A slow tail: most batches wait 5 ms, one in ten 200 ms (CV ≈ 2).
        FluctuationCase{"slow_tail", Repeat({0.005, 0.005, 0.005, 0.005, 0.005, 0.005, 0.005,
                                             0.005, 0.005, 0.2},
                                            10),
                        0.3, true},
        // Even waits: CV ≈ 0.1.
        FluctuationCase{"even", Repeat({0.009, 0.011}, 50), 0.3, false},
        // CV exactly 0.5 is not over it.
        FluctuationCase{"cv_half", Repeat({0.005, 0.015}, 50), 0.3, false},
        // The consumer barely waits: tiny waits' spread says nothing.
        FluctuationCase{"consumer_bound", Repeat({0, 0, 0, 0.001}, 25), 0.01, false},
        // Too few batches to judge a spread.
        FluctuationCase{"few_batches", {0.001, 0.2, 0.001, 0.2}, 0.3, false}),
    [](const ::testing::TestParamInfo<FluctuationCase>& info) { return info.param.what; });

TEST(BusiestTest, BusiestShareIsTheStageTablesRow) {
  // The demo: read, decode and augment share 2 workers; decode alone is 36%.
  const std::string g = "read+decode+augment";
  RunSnapshot run = MakeRun({Stage("source", 1, 0.0), Grouped("read", 2, 0.12, g),
                             Grouped("decode", 2, 0.36, g), Grouped("augment", 2, 0.25, g),
                             Stage("collate", 1, 0.01)},
                            0.5);
  const Diagnosis d = Diagnose(run);
  EXPECT_EQ(d.busiest_stage, g);
  EXPECT_NEAR(d.busiest_utilization, 0.73, 1e-9);
  EXPECT_THAT(d.advice, HasSubstr("(busiest: the 2 workers running read+decode+augment at 73%)"));
  // The table's row named busiest_stage shows the same share.
  bool found = false;
  for (absl::string_view line : absl::StrSplit(StageTable(run), '\n')) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cols.size() != 6 || cols[0] != d.busiest_stage) continue;
    found = true;
    EXPECT_EQ(cols[4], absl::StrFormat("%.0f%%", 100 * d.busiest_utilization)) << line;
  }
  EXPECT_TRUE(found) << StageTable(run);
}

TEST(BusiestTest, AStageAloneIsItsOwnRow) {
  const Diagnosis d = Diagnose(MakeRun({Stage("reader", 1, 0.3), Stage("decode", 2, 0.6)}, 0.0));
  EXPECT_EQ(d.busiest_stage, "decode");
  EXPECT_DOUBLE_EQ(d.busiest_utilization, 0.6);
}

TEST(OversubscribedTest, WarnsOverFourWorkersPerCpuAndWithholdsTheVerdict) {
  RunFacts facts;
  facts.cores_available = 2;
  facts.num_workers = 8;
  EXPECT_EQ(OversubscribedWorkers(facts), "");
  facts.num_workers = 9;
  EXPECT_THAT(OversubscribedWorkers(facts), StartsWith("num_workers=9 is over 4 \u00d7 the 2 "
                                                       "CPUs this process may use"));
  facts.cores_available = 0;  // Unknown: no claim.
  EXPECT_EQ(OversubscribedWorkers(facts), "");

  // The report: 1000 workers on 2 CPUs, 7% busy each, the consumer starving.
  const Diagnosis d =
      Diagnose(MakeRun({Stage("source", 1, 0.02), Stage("decode", 1000, 0.07)}, 0.95, 1000, 2));
  EXPECT_THAT(d.advice, AllOf(StartsWith("num_workers=1000 is over 4 \u00d7 the 2 CPUs"),
                              HasSubstr("no verdict"), NoRaise));
  EXPECT_EQ(d.bottleneck, "");
}

}  // namespace
}  // namespace flowloader
