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
std::vector<AutotuneChange> Feed(AutotunePolicy& policy, const std::vector<AutotuneWindow>& windows,
                                 int* workers, int* buffers) {
  std::vector<AutotuneChange> changes;
  for (const AutotuneWindow& w : windows) {
    std::optional<AutotuneChange> c = policy.Decide(w, *workers, *buffers);
    if (!c.has_value()) continue;
    (c->knob == kKnobNumWorkers ? *workers : *buffers) = c->to;
    changes.push_back(*c);
  }
  return changes;
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
