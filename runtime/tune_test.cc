// TuneSearch on a deterministic cost model: what the hill climb picks, how few trials it
// needs against the grid, the consumer goal, the RAM budget and the time budget.
#include "runtime/tune.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

// CostModel stands in for real trials: images/s grow with workers up to the CPUs (then
// oversubscription costs 4% a worker), a little with batch size, and prefetch below 3
// costs 5%. Memory is batch_size × prefetch_batches units.
struct CostModel {
  int cpus = 2;
  double per_worker = 1000;
  double third_worker_gain = 0;  // Extra share a worker past `cpus` adds before the cost.
  int64_t memory_limit = 1 << 30;
  int calls = 0;

  double ImagesPerSecond(const TrialConfig& c) const {
    const double useful = std::min(c.num_workers, cpus) +
                          (c.num_workers > cpus ? third_worker_gain : 0);
    const double oversubscribed = std::max(0, c.num_workers - cpus) * 0.04;
    const double batch = c.batch_size / (c.batch_size + 16.0);
    const double prefetch = c.prefetch_batches >= 3 ? 1.0 : 0.95;
    return per_worker * useful * batch * prefetch * (1 - oversubscribed);
  }
  TrialRunner Runner(double consumer_ms = 0) {
    return [this, consumer_ms](const TrialConfig& c, double) -> absl::StatusOr<TrialResult> {
      ++calls;
      TrialResult r;
      r.config = c;
      r.images_per_second = ImagesPerSecond(c);
      if (consumer_ms > 0) {
        // The consumer needs batch_size images every consumer_ms.
        const double demand = c.batch_size / (consumer_ms / 1000);
        r.consumer_wait_fraction = std::max(0.0, 1 - r.images_per_second / demand);
        r.images_per_second = std::min(r.images_per_second, demand);
      }
      r.cpu_cores = std::min(c.num_workers, cpus);
      r.peak_rss_bytes = int64_t{c.batch_size} * c.prefetch_batches << 20;
      return r;
    };
  }
  MemoryCheck Fits() const {
    return [this](const TrialConfig& c) {
      const int64_t need = int64_t{c.batch_size} * c.prefetch_batches;
      if (need <= memory_limit) return absl::OkStatus();
      return absl::ResourceExhaustedError(absl::StrCat("its pool would need ", need, " units"));
    };
  }
};

TuneOptions Budgets(int cpus) {
  TuneOptions o;
  o.cpu_budget = cpus;
  o.ram_budget_bytes = int64_t{1} << 40;
  o.time_budget_seconds = 600;
  return o;
}

TEST(TuneSearchTest, HillClimbFindsTheGridsChoiceWithAFractionOfItsTrials) {
  CostModel grid_model, climb_model;
  TuneOptions o = Budgets(2);
  o.grid = true;
  absl::StatusOr<TuneResult> grid = TuneSearch(o, grid_model.Runner(), grid_model.Fits());
  ASSERT_TRUE(grid.ok()) << grid.status();
  o.grid = false;
  absl::StatusOr<TuneResult> climb = TuneSearch(o, climb_model.Runner(), climb_model.Fits());
  ASSERT_TRUE(climb.ok()) << climb.status();
  EXPECT_EQ(grid->trials.size(), 4u * 4u * 4u);  // workers 1..4 × 4 prefetch × 4 batch.
  EXPECT_LE(climb->trials.size() * 5, grid->trials.size());
  EXPECT_GE(climb->best.images_per_second * 1.03, grid->best.images_per_second);
  EXPECT_EQ(climb->best.config.num_workers, 2);
  EXPECT_EQ(grid->best.config.num_workers, 2);
  EXPECT_TRUE(grid->grid);
  EXPECT_FALSE(climb->grid);
}

TEST(TuneSearchTest, AWorkerThatAddsUnderThreePercentIsNotTaken) {
  CostModel model;
  model.third_worker_gain = 0.10;  // A third worker: +5% before its 4% cost: +1%.
  absl::StatusOr<TuneResult> r = TuneSearch(Budgets(2), model.Runner(), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best.config.num_workers, 2);
  EXPECT_TRUE(absl::StartsWith(r->reasons[0], "num_workers 2: 3 workers changed images/s by +"))
      << r->reasons[0];
}

TEST(TuneSearchTest, WorkersGrowWhileEachAddsAtLeastThreePercent) {
  CostModel model;
  model.cpus = 4;
  absl::StatusOr<TuneResult> r = TuneSearch(Budgets(4), model.Runner(), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best.config.num_workers, 4);
  for (const TrialResult& t : r->trials) EXPECT_LE(t.config.num_workers, 8);
}

TEST(TuneSearchTest, WithAConsumerTheFewestWorkersThatKeepItWaitingUnderFivePercent) {
  CostModel model;
  TuneOptions o = Budgets(2);
  o.consumer_ms = 100;  // 64 images per 100 ms = 640 images/s: one worker (760) keeps up.
  o.pipeline.batch_size = 64;
  absl::StatusOr<TuneResult> r = TuneSearch(o, model.Runner(o.consumer_ms), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best.config.num_workers, 1);
  EXPECT_EQ(r->best.config.batch_size, 64);  // The consumer's batch is not the tuner's.
  EXPECT_LT(r->best.consumer_wait_fraction, 0.05);
  for (const TrialResult& t : r->trials) EXPECT_EQ(t.config.batch_size, 64);
}

TEST(TuneSearchTest, AConsumerNoBudgetCanFeedIsSaidSo) {
  CostModel model;
  TuneOptions o = Budgets(2);
  o.consumer_ms = 10;  // 6400 images/s: more than 2 CPUs make.
  o.pipeline.batch_size = 64;
  absl::StatusOr<TuneResult> r = TuneSearch(o, model.Runner(o.consumer_ms), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->best.consumer_wait_fraction, 0.05);
  EXPECT_TRUE(absl::StrContains(absl::StrJoin(r->reasons, "\n"),
                                "no configuration within the budgets kept the consumer waiting"));
}

TEST(TuneSearchTest, BatchSizesOverTheRamBudgetAreNotTriedAndSaySo) {
  CostModel model;
  model.memory_limit = 128 * 3;  // batch 256 does not fit at any prefetch >= 2.
  absl::StatusOr<TuneResult> r = TuneSearch(Budgets(2), model.Runner(), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  for (const TrialResult& t : r->trials) {
    EXPECT_LE(int64_t{t.config.batch_size} * t.config.prefetch_batches, model.memory_limit);
  }
  EXPECT_NE(r->best.config.batch_size, 256);
  const std::string reasons = absl::StrJoin(r->reasons, "\n");
  EXPECT_TRUE(absl::StrContains(reasons, "batch_size 256 not tried: its pool would need"))
      << reasons;
}

TEST(TuneSearchTest, NothingFittingIsAnErrorSayingWhy) {
  CostModel model;
  model.memory_limit = 1;
  absl::StatusOr<TuneResult> r = TuneSearch(Budgets(2), model.Runner(), model.Fits());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "its pool would need")) << r.status();
}

TEST(TuneSearchTest, TheTimeBudgetStopsTheSearchWithinOneTrial) {
  CostModel model;
  TuneOptions o = Budgets(2);
  o.grid = true;
  o.time_budget_seconds = 0.05;
  TrialRunner slow = [&model](const TrialConfig& c, double s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return model.Runner()(c, s);
  };
  absl::StatusOr<TuneResult> r = TuneSearch(o, slow, model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  // 20 ms a trial in 50 ms: the trial that crosses the budget is the last one.
  EXPECT_LE(r->trials.size(), 3u);
  EXPECT_LT(r->seconds, 0.05 + 0.5);
}

TEST(TuneSearchTest, JsonHasTheDocumentedFields) {
  CostModel model;
  absl::StatusOr<TuneResult> r = TuneSearch(Budgets(2), model.Runner(), model.Fits());
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string json = TuneJson(*r);
  for (const char* field :
       {"\"best\": {\"num_workers\": 2", "\"batch_size\"", "\"prefetch_batches\"",
        "\"images_per_second\"", "\"cpu_cores\"", "\"peak_rss_bytes\"",
        "\"consumer_wait_fraction\"", "\"trials\": [{", "\"seconds\"",
        "\"budgets\": {\"cpu\": 2, \"ram_bytes\": 1099511627776}", "\"grid\": false",
        "\"reasons\": [\"num_workers 2"}) {
    EXPECT_TRUE(absl::StrContains(json, field)) << field << " in " << json;
  }
}

TEST(TuneSearchTest, BadBudgetsAreRefused) {
  CostModel model;
  TuneOptions o = Budgets(0);
  EXPECT_FALSE(TuneSearch(o, model.Runner(), model.Fits()).ok());
  o = Budgets(2);
  o.batch_sizes = {0};
  EXPECT_FALSE(TuneSearch(o, model.Runner(), model.Fits()).ok());
}

}  // namespace
}  // namespace flowloader
