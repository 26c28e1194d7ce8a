// autotune_policy_test.cc: the autotuner's decisions, window by window, as tables.
#include "runtime/autotune_policy.h"

#include <optional>
#include <string>
#include <vector>

#include "graph/autotune_stats.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

AutotuneWindow Window(double wait, double busy, double blocked, double cores) {
  AutotuneWindow w;
  w.seconds = 0.2;
  w.consumer_wait_fraction = wait;
  w.worker_busy_fraction = busy;
  w.source_blocked_fraction = blocked;
  w.cpu_cores = cores;
  return w;
}

AutotunePolicyOptions TwoCpus() {
  AutotunePolicyOptions o;
  o.max_workers = 2;
  o.cpu_budget = 2;
  o.min_buffers = 2;
  o.max_buffers = 4;
  o.calm_windows = 3;
  return o;
}

// One window's decision from fresh state at (workers, buffers).
struct GrowCase {
  std::string name;
  AutotuneWindow window;
  int workers;
  int buffers;
  std::optional<std::string> knob;  // nullopt: no change.
  int to;
};

class AutotuneGrowTest : public ::testing::TestWithParam<GrowCase> {};

TEST_P(AutotuneGrowTest, DecidesOneChange) {
  const GrowCase& c = GetParam();
  AutotunePolicy policy(TwoCpus());
  const std::optional<AutotuneChange> change = policy.Decide(c.window, c.workers, c.buffers);
  if (!c.knob.has_value()) {
    EXPECT_FALSE(change.has_value()) << change->knob << " → " << change->to;
    return;
  }
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->knob, *c.knob);
  EXPECT_EQ(change->from, c.knob == kKnobNumWorkers ? c.workers : c.buffers);
  EXPECT_EQ(change->to, c.to);
  EXPECT_FALSE(change->reason.empty());
  EXPECT_EQ(change->reason.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Table, AutotuneGrowTest,
    ::testing::Values(
        GrowCase{"HungryBusyWorkersFreeCpuAddsAWorker", Window(0.30, 0.95, 0.0, 1.0), 1, 2,
                 kKnobNumWorkers, 2},
        GrowCase{"HungryIdleWorkersStalledSourceAddsABuffer", Window(0.30, 0.50, 0.5, 0.6), 1,
                 2, kKnobPrefetchBatches, 3},
        GrowCase{"HungryBusyWorkersStalledSourceAddsAWorkerNotABuffer",
                 Window(0.30, 0.95, 0.5, 1.0), 1, 2, kKnobNumWorkers, 2},
        GrowCase{"HungryContendedBusyWorkersAtBudgetHold", Window(0.40, 0.98, 0.9, 1.0), 2, 2,
                 std::nullopt, 0},
        GrowCase{"HungryNoFreeCpuHolds", Window(0.30, 0.95, 0.0, 1.9), 1, 2, std::nullopt, 0},
        GrowCase{"HungryBusyAtCpuBudgetHolds", Window(0.30, 0.95, 0.0, 1.0), 2, 2,
                 std::nullopt, 0},
        GrowCase{"HungryIdleWorkersFreeBuffersHold", Window(0.30, 0.20, 0.0, 0.5), 1, 2,
                 std::nullopt, 0},
        GrowCase{"HungryAtEveryCeilingHolds", Window(0.30, 0.95, 0.5, 1.0), 2, 4, std::nullopt,
                 0},
        GrowCase{"BetweenThresholdsHolds", Window(0.03, 0.95, 0.5, 1.0), 1, 2, std::nullopt, 0},
        GrowCase{"OneCalmWindowHolds", Window(0.0, 0.30, 0.0, 0.5), 2, 3, std::nullopt, 0}),
    [](const ::testing::TestParamInfo<GrowCase>& info) { return info.param.name; });

// Feeds `windows` one after another, applying each change, and returns the changes.
// `read_ahead` (the read-ahead's floor) may be null where it is not tuned.
std::vector<AutotuneChange> Feed(AutotunePolicy& policy, const std::vector<AutotuneWindow>& windows,
                                 int* workers, int* buffers, int* read_ahead = nullptr) {
  std::vector<AutotuneChange> changes;
  for (const AutotuneWindow& w : windows) {
    std::optional<AutotuneChange> c =
        policy.Decide(w, *workers, *buffers, read_ahead == nullptr ? 0 : *read_ahead);
    if (!c.has_value()) continue;
    if (c->knob == kKnobReadAhead) {
      EXPECT_NE(read_ahead, nullptr) << "read_ahead changed where it is not tuned";
      if (read_ahead != nullptr) *read_ahead = c->to;
    } else {
      (c->knob == kKnobNumWorkers ? *workers : *buffers) = c->to;
    }
    changes.push_back(*c);
  }
  return changes;
}

// Remote reads: read_ahead tuned, its own floor 16, ceiling 128, 64 MiB of bytes.
AutotunePolicyOptions RemoteTwoCpus() {
  AutotunePolicyOptions o = TwoCpus();
  o.tune_read_ahead = true;
  o.min_read_ahead = 16;
  o.max_read_ahead = 128;
  o.read_ahead_bytes = int64_t{64} << 20;
  return o;
}

// StorageWindow is Window with the workers waiting on reads `storage` of their time,
// `requests` a second of `latency` seconds, `bytes` each, the read-ahead's limit `limit`.
AutotuneWindow StorageWindow(double wait, double busy, double cores, double storage,
                             double requests, double latency, int limit,
                             double bytes = 55000) {
  AutotuneWindow w = Window(wait, busy, 0.0, cores);
  w.storage_wait_fraction = storage;
  w.storage_requests_per_second = requests;
  w.storage_latency_seconds = latency;
  w.storage_bytes_per_request = bytes;
  w.read_ahead_limit = limit;
  return w;
}

// One window's decision from fresh state, remote reads, 1 of 2 workers, 2 buffers, the
// read-ahead's floor at its own 16.
struct StorageCase {
  std::string name;
  bool tune_read_ahead;
  AutotuneWindow window;
  std::optional<std::string> knob;  // nullopt: no change.
  int to;
};

class AutotuneStorageTest : public ::testing::TestWithParam<StorageCase> {};

TEST_P(AutotuneStorageTest, DecidesOneChange) {
  const StorageCase& c = GetParam();
  AutotunePolicyOptions o = RemoteTwoCpus();
  o.tune_read_ahead = c.tune_read_ahead;
  AutotunePolicy policy(o);
  const std::optional<AutotuneChange> change = policy.Decide(c.window, 1, 2, 16);
  if (!c.knob.has_value()) {
    EXPECT_FALSE(change.has_value()) << change->knob << " → " << change->to;
    return;
  }
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->knob, *c.knob);
  EXPECT_EQ(change->to, c.to);
  EXPECT_EQ(change->reason.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Table, AutotuneStorageTest,
    ::testing::Values(
        // Workers 95% busy, 70% of it waiting on 30 ms reads, a CPU free, the consumer
        // waiting 80%: no worker, but Little's law on the 1000 requests/s × 30 ms in
        // flight, for the rate that stops the waits, at most doubled: 60.
        StorageCase{"WaitingOnReadsRaisesReadAheadNotWorkers", true,
                    StorageWindow(0.80, 0.95, 1.0, 0.70, 1000, 0.030, 16), kKnobReadAhead, 60},
        // The consumer waits only 30%: it needs 1 / 0.7 of the rate, 43 in flight.
        StorageCase{"TheConsumersNeedSizesTheRaise", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 1000, 0.030, 16), kKnobReadAhead, 43},
        // Few in flight for the limit: the raise is 1.5 × the limit.
        StorageCase{"RaiseIsAtLeastHalfAgainTheLimitFromItsStart", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 16), kKnobReadAhead, 24},
        // The read-ahead's own limit is past Little's law: 1.5 × it.
        StorageCase{"RaiseIsAtLeastHalfAgainTheLimit", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 48), kKnobReadAhead, 72},
        // Never past the ceiling; at it, nothing (a worker would only wait too).
        StorageCase{"RaiseStopsAtTheCeiling", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 100), kKnobReadAhead, 128},
        StorageCase{"AtTheCeilingNeitherReadsNorWorkers", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 128), std::nullopt, 0},
        // 1 MiB reads: the 64 MiB the memory plan gives read-ahead hold 64 of them.
        StorageCase{"TheByteBudgetCapsTheReads", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 100, 0.050, 60, 1 << 20),
                    kKnobReadAhead, 64},
        StorageCase{"AtTheByteBudgetNothing", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 100, 0.050, 64, 1 << 20),
                    std::nullopt, 0},
        // Reads a small share of the workers' time: the workers are the limit.
        StorageCase{"ComputeBoundRemoteRunAddsAWorker", true,
                    StorageWindow(0.30, 0.95, 1.0, 0.10, 500, 0.002, 16), kKnobNumWorkers, 2},
        // read_ahead fixed (or local data): the policy as before.
        StorageCase{"UntunedReadAheadLeavesTheWorkerRule", false,
                    StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 16), kKnobNumWorkers, 2},
        // Idle workers and a source out of buffers: a buffer first, as without remote
        // reads (with no sample to read, more reads in flight would not feed them).
        StorageCase{"IdleWorkersStalledSourceAddABufferFirst", true,
                    [] {
                      AutotuneWindow w = StorageWindow(0.30, 0.60, 1.0, 0.30, 500, 0.020, 16);
                      w.source_blocked_fraction = 0.5;
                      return w;
                    }(),
                    kKnobPrefetchBatches, 3},
        // The consumer does not wait: nothing, however long the reads.
        StorageCase{"FedConsumerHolds", true,
                    StorageWindow(0.03, 0.95, 1.0, 0.70, 500, 0.020, 16), std::nullopt, 0}),
    [](const ::testing::TestParamInfo<StorageCase>& info) { return info.param.name; });

TEST(AutotunePolicyTest, ARaiseThatBroughtNoRequestsIsUndoneAndNotRepeated) {
  AutotunePolicy policy(RemoteTwoCpus());
  int workers = 1, buffers = 2, read_ahead = 16;
  // A saturated store: 40 in flight answer 500 requests/s at 80 ms, and more only queue.
  const AutotuneWindow before = StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.080, 40);
  const AutotuneWindow after = StorageWindow(0.30, 0.95, 1.0, 0.70, 510, 0.120, 60);
  std::vector<AutotuneChange> changes =
      Feed(policy, {before, after, after}, &workers, &buffers, &read_ahead);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].knob, kKnobReadAhead);
  EXPECT_EQ(changes[0].to, 60);  // 1.5 × 40 (Little's law: 500 × 0.08 / 0.7 = 58).
  EXPECT_EQ(changes[1].knob, kKnobReadAhead);
  EXPECT_EQ(changes[1].from, 60);
  EXPECT_EQ(changes[1].to, 16);  // Back where it was.
  EXPECT_NE(changes[1].reason.find("saturated"), std::string::npos) << changes[1].reason;
  EXPECT_EQ(policy.max_read_ahead(), 40);  // The limit the read-ahead had: no raise past it.
  // Storage still waits; nothing more is tried for 20 windows (this one the 3rd), and no
  // worker is added for it.
  EXPECT_TRUE(Feed(policy, std::vector<AutotuneWindow>(19, after), &workers, &buffers,
                   &read_ahead)
                  .empty());
  EXPECT_EQ(workers, 1);
  EXPECT_EQ(read_ahead, 16);
  // Then the store is tried again: 1.5 × the limit of 60.
  changes = Feed(policy, {after}, &workers, &buffers, &read_ahead);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].knob, kKnobReadAhead);
  EXPECT_EQ(changes[0].to, 90);
  EXPECT_EQ(policy.max_read_ahead(), 128);
}

TEST(AutotunePolicyTest, ARaiseThatBroughtRequestsIsKeptAndGrowsOn) {
  AutotunePolicy policy(RemoteTwoCpus());
  int workers = 1, buffers = 2, read_ahead = 16;
  // A store 20 ms away: 24 in flight answered 40% more requests, still waiting.
  const AutotuneWindow before = StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 16);
  const AutotuneWindow after = StorageWindow(0.20, 0.95, 1.0, 0.50, 700, 0.021, 34);
  const std::vector<AutotuneChange> changes =
      Feed(policy, {before, after, after}, &workers, &buffers, &read_ahead);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].to, 24);
  EXPECT_EQ(changes[1].from, 24);
  EXPECT_EQ(changes[1].to, 51);  // 1.5 × its limit 34 (Little's law: 700 × 0.021 / 0.8 = 19).
  EXPECT_EQ(workers, 1);
  EXPECT_EQ(policy.max_read_ahead(), 128);
}

TEST(AutotunePolicyTest, CalmShrinksWorkersThenReadAheadBackToItsOwnFloor) {
  AutotunePolicy policy(RemoteTwoCpus());
  int workers = 2, buffers = 3, read_ahead = 72;
  // Calm, workers 30% busy: a worker first (the trainer's CPU), then the read-ahead's
  // floor by 1.5 a step, 72 → 48 → 32 → 21 → 16, then the buffer.
  const AutotuneWindow calm = StorageWindow(0.0, 0.30, 0.7, 0.20, 500, 0.020, 20);
  const std::vector<AutotuneChange> changes = Feed(
      policy, std::vector<AutotuneWindow>(6 * 4, calm), &workers, &buffers, &read_ahead);
  ASSERT_EQ(changes.size(), 6u);
  EXPECT_EQ(changes[0].knob, kKnobNumWorkers);
  std::vector<int> floors;
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(changes[i].knob, kKnobReadAhead);
    floors.push_back(changes[i].to);
  }
  EXPECT_EQ(floors, (std::vector<int>{48, 32, 21, 16}));
  EXPECT_EQ(changes[5].knob, kKnobPrefetchBatches);
  EXPECT_EQ(read_ahead, 16);
}

TEST(AutotunePolicyTest, RaisingReadAheadBackSoonAfterAShrinkDoublesTheCalmNeeded) {
  AutotunePolicy policy(RemoteTwoCpus());
  int workers = 1, buffers = 2, read_ahead = 48;
  const AutotuneWindow calm = StorageWindow(0.0, 0.30, 0.7, 0.20, 500, 0.020, 20);
  const AutotuneWindow waiting = StorageWindow(0.30, 0.95, 1.0, 0.70, 500, 0.020, 32);
  Feed(policy, {calm, calm, calm}, &workers, &buffers, &read_ahead);
  ASSERT_EQ(read_ahead, 32);
  Feed(policy, {waiting, waiting}, &workers, &buffers, &read_ahead);
  EXPECT_EQ(read_ahead, 48);
  EXPECT_EQ(policy.calm_windows_needed(), 6);
  EXPECT_EQ(workers, 1);
}

TEST(AutotunePolicyTest, ShrinksAWorkerOnlyAfterCalmWindowsInARow) {
  AutotunePolicy policy(TwoCpus());
  int workers = 2, buffers = 3;
  const AutotuneWindow calm = Window(0.0, 0.30, 0.9, 0.7);
  const AutotuneWindow between = Window(0.02, 0.30, 0.9, 0.7);
  // Two calm windows, one in between (resets the count), then three calm: one shrink.
  const std::vector<AutotuneChange> changes =
      Feed(policy, {calm, calm, between, calm, calm, calm}, &workers, &buffers);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].knob, kKnobNumWorkers);
  EXPECT_EQ(changes[0].to, 1);
}

TEST(AutotunePolicyTest, KeepsAWorkerTheOthersCouldNotCarry) {
  AutotunePolicy policy(TwoCpus());
  int workers = 2, buffers = 3;
  // Busy 60% each: one worker would be 120% busy, so the buffer goes instead.
  const AutotuneWindow calm = Window(0.0, 0.60, 0.9, 1.2);
  const std::vector<AutotuneChange> changes = Feed(policy, {calm, calm, calm}, &workers, &buffers);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].knob, kKnobPrefetchBatches);
  EXPECT_EQ(changes[0].to, 2);
  EXPECT_EQ(workers, 2);
}

TEST(AutotunePolicyTest, NeverShrinksBuffersBelowTheMinimum) {
  AutotunePolicy policy(TwoCpus());
  int workers = 1, buffers = 2;
  const AutotuneWindow calm = Window(0.0, 0.40, 0.9, 0.5);
  EXPECT_TRUE(Feed(policy, std::vector<AutotuneWindow>(12, calm), &workers, &buffers).empty());
}

TEST(AutotunePolicyTest, SkipsTheWindowAfterAChange) {
  AutotunePolicy policy(TwoCpus());
  int workers = 1, buffers = 2;
  const AutotuneWindow hungry = Window(0.30, 0.95, 0.0, 1.0);
  const AutotuneWindow stalled = Window(0.30, 0.50, 0.5, 1.0);
  // Grows a worker, skips the next window, then a buffer for the stalled source.
  const std::vector<AutotuneChange> changes =
      Feed(policy, {hungry, stalled, stalled}, &workers, &buffers);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].knob, kKnobNumWorkers);
  EXPECT_EQ(changes[1].knob, kKnobPrefetchBatches);
}

TEST(AutotunePolicyTest, GrowingBackAfterAShrinkDoublesTheCalmNeeded) {
  AutotunePolicy policy(TwoCpus());
  int workers = 2, buffers = 2;
  const AutotuneWindow calm = Window(0.0, 0.30, 0.9, 0.7);
  const AutotuneWindow hungry = Window(0.30, 0.95, 0.0, 1.0);
  Feed(policy, {calm, calm, calm}, &workers, &buffers);
  ASSERT_EQ(workers, 1);
  // The window after the shrink is not judged; the next grows the worker back.
  Feed(policy, {hungry, hungry}, &workers, &buffers);
  ASSERT_EQ(workers, 2);
  EXPECT_EQ(policy.calm_windows_needed(), 6);
  // One skipped window and five calm ones no longer shrink; the sixth calm one does.
  EXPECT_TRUE(Feed(policy, std::vector<AutotuneWindow>(6, calm), &workers, &buffers).empty());
  EXPECT_EQ(Feed(policy, {calm}, &workers, &buffers).size(), 1u);
  EXPECT_EQ(workers, 1);
}

TEST(AutotunePolicyTest, ARefusedBufferLowersTheCeiling) {
  AutotunePolicy policy(TwoCpus());
  policy.MarkBuffersFull(3);
  EXPECT_EQ(policy.max_buffers(), 2);
  int workers = 2, buffers = 2;
  const AutotuneWindow stalled = Window(0.30, 0.50, 0.5, 1.0);
  EXPECT_TRUE(Feed(policy, {stalled, stalled}, &workers, &buffers).empty());
}

TEST(AutotunePolicyTest, FixedKnobsAreNeverChanged) {
  AutotunePolicyOptions o = TwoCpus();
  o.tune_workers = false;
  AutotunePolicy policy(o);
  int workers = 1, buffers = 2;
  const AutotuneWindow hungry = Window(0.30, 0.95, 0.0, 1.0);
  for (const AutotuneChange& c : Feed(policy, {hungry, hungry, hungry}, &workers, &buffers)) {
    EXPECT_EQ(c.knob, kKnobPrefetchBatches);
  }
  EXPECT_EQ(workers, 1);
}

}  // namespace
}  // namespace flowloader
