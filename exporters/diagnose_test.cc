// diagnose_test.cc: the tuning rules on hand-made runs: a slow reader, a slow decode or
// augment, a slow consumer, and the cases around them (serial stage, transfers, memory,
// latency-bound, over-provisioned workers).
#include <string>
#include <vector>

#include "exporters/report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// Stage makes a stage that was busy `utilization` of its worker time over `wall`.
StageLoad Stage(const std::string& name, int concurrency, double utilization,
                double wall = 100) {
  StageLoad s;
  s.name = name;
  s.kind = StageKindFromName(name);
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
  EXPECT_NEAR(d.busiest_utilization, 1.0, 1e-9);
  EXPECT_THAT(d.advice, StartsWith("decode is 100% busy on 2 workers and the consumer waited "
                                   "97% of the time: raise num_workers (cores free: 0"));
  EXPECT_THAT(d.notes, ElementsAre("the 2 workers running read+decode+augment are 100% busy: "
                                   "decode 67% + augment 22% + read 11%"));
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
  EXPECT_THAT(d.advice, StartsWith("reader is the bottleneck: storage, not CPU (reader 97% "
                                   "busy, consumer waited 50%)"));
}

TEST(DiagnoseTest, SlowDecodeOnAFullMachineSaysTheMachineIsTheLimit) {
  const Diagnosis d = Diagnose(
      MakeRun({Stage("reader", 1, 0.2), Stage("decode", 2, 0.98), Stage("collate", 1, 0.1)}, 0.41));
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_THAT(d.advice,
              StartsWith("decode is 98% busy on 2 workers and the consumer waited 41% of the "
                         "time: raise num_workers (cores free: 0 \u2014 the machine is the "
                         "limit"));
}

TEST(DiagnoseTest, SlowDecodeWithFreeCoresSaysHowManyWorkers) {
  const Diagnosis d = Diagnose(
      MakeRun({Stage("reader", 1, 0.2), Stage("decode", 2, 0.98)}, 0.41, /*num_workers=*/2,
          /*cores=*/16));
  // Throughput must grow 1 / (1 - 0.41) = 1.7x: 4 workers; 16 - 2 - 1 cores are free.
  EXPECT_EQ(d.advice,
            "decode is 98% busy on 2 workers and the consumer waited 41% of the time: raise "
            "num_workers to 4 (cores free: 13)");
}

TEST(DiagnoseTest, SlowAugmentIsTreatedLikeDecode) {
  const Diagnosis d = Diagnose(MakeRun(
      {Stage("reader", 1, 0.1), Stage("decode", 4, 0.5), Stage("augment", 4, 0.9)}, 0.3, 4,
      0));
  EXPECT_EQ(d.bottleneck, "augment");
  EXPECT_EQ(d.advice,
            "augment is 90% busy on 4 workers and the consumer waited 30% of the time: raise "
            "num_workers (cores free: unknown)");
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

TEST(DiagnoseTest, NothingSaturatedButStarvingMeansMorePrefetch) {
  const Diagnosis d = Diagnose(MakeRun({Stage("reader", 1, 0.5), Stage("decode", 2, 0.6)}, 0.3));
  EXPECT_EQ(d.bottleneck, "decode");
  EXPECT_EQ(d.advice,
            "no stage is saturated (busiest: decode at 60% on 2 workers) yet the consumer waited "
            "30% of the time: the pipeline is latency-bound; raise prefetch (batches in flight) "
            "so stages overlap");
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

struct KindCase {
  const char* name;
  StageKind kind;
};

class StageKindFromNameTest : public ::testing::TestWithParam<KindCase> {};

TEST_P(StageKindFromNameTest, GuessesFromTheName) {
  EXPECT_EQ(StageKindFromName(GetParam().name), GetParam().kind);
}

INSTANTIATE_TEST_SUITE_P(
    Names, StageKindFromNameTest,
    ::testing::Values(KindCase{"reader", StageKind::kStorage},
                      KindCase{"Read", StageKind::kStorage},
                      KindCase{"s3_fetch", StageKind::kStorage},
                      KindCase{"download", StageKind::kStorage},
                      KindCase{"upload", StageKind::kTransfer},
                      KindCase{"pin_memory", StageKind::kTransfer},
                      KindCase{"h2d_copy", StageKind::kTransfer},
                      KindCase{"decode", StageKind::kCompute},
                      KindCase{"augment", StageKind::kCompute},
                      KindCase{"collate", StageKind::kCompute}));

}  // namespace
}  // namespace flowloader
