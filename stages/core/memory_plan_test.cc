// memory_plan_test.cc: MemoryPlan's totals, summary keys and its one-line refusals.
#include "stages/core/memory_plan.h"

#include "gtest/gtest.h"

namespace flowloader {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

MemoryPlan ImageSize5000Plan() {
  MemoryPlan plan;
  plan.Add({"batch pool", "batch_pool", int64_t{3} * 64 * 3 * 5000 * 5000 * 4,
            "prefetch 3 × batch 64 × 3×5000² float32",
            {"batch_size", "image_size", "prefetch_batches"}, /*pinned=*/true});
  plan.Add({"seek index", "seek_index", 256 * kMiB, "seek_index_mb 256", {"seek_index_mb"}});
  return plan;
}

TEST(MemoryPlanTest, TotalsAndSummaryKeys) {
  const MemoryPlan plan = ImageSize5000Plan();
  EXPECT_EQ(plan.total_bytes(), int64_t{57600000000} + 256 * kMiB);
  EXPECT_EQ(plan.pinned_bytes(), int64_t{57600000000});
  const auto keys = plan.BytesByKey();
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0].first, "batch_pool_bytes");
  EXPECT_EQ(keys[1].first, "seek_index_bytes");
  EXPECT_EQ(keys[2].first, "pinned_bytes");
  EXPECT_EQ(keys[3], (std::pair<std::string, int64_t>{"total_bytes", plan.total_bytes()}));
}

TEST(MemoryPlanTest, LargestPartThatAloneDoesNotFitLeads) {
  const absl::Status s =
      ImageSize5000Plan().CheckFits(MemoryBudget{int64_t{219} * kGiB / 10, "MemAvailable"});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "the batch pool needs 53.6 GiB (prefetch 3 × batch 64 × 3×5000² float32) but "
            "21.9 GiB is available (MemAvailable): lower batch_size, image_size or "
            "prefetch_batches");
}

TEST(MemoryPlanTest, TheSumAndItsLargestPartWhenOnlyTheSumDoesNotFit) {
  MemoryPlan plan;
  plan.Add({"batch pool", "batch_pool", 300 * kMiB, "prefetch 3 × batch 64", {"batch_size"}});
  plan.Add({"seek index", "seek_index", 256 * kMiB, "seek_index_mb 256", {"seek_index_mb"}});
  const absl::Status s = plan.CheckFits(MemoryBudget{512 * kMiB, "cgroup v2 memory.max"});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "the pipeline needs 556.0 MiB (2 parts; largest: batch pool 300.0 MiB (prefetch 3 "
            "× batch 64)) but 512.0 MiB is available (cgroup v2 memory.max): lower batch_size "
            "or seek_index_mb (flowloader plan lists every part)");
}

TEST(MemoryPlanTest, FitsOrUnknownIsOk) {
  const MemoryPlan plan = ImageSize5000Plan();
  EXPECT_TRUE(plan.CheckFits(MemoryBudget{}).ok());
  EXPECT_TRUE(plan.CheckFits(MemoryBudget{plan.total_bytes(), "MemAvailable"}).ok());
  EXPECT_FALSE(plan.CheckFits(MemoryBudget{plan.total_bytes() - 1, "MemAvailable"}).ok());
}

TEST(MemoryPlanTest, DevicePartsAreListedButNotHostMemory) {
  MemoryPlan plan;
  plan.Add({"batch pool", "batch_pool", 300 * kMiB, "prefetch 3 × batch 64", {"batch_size"},
            /*pinned=*/true});
  plan.Add({"device batches", "device_batches", 300 * kMiB, "prefetch 3 × batch 64",
            {"batch_size"}, /*pinned=*/false, /*device=*/true});
  EXPECT_EQ(plan.total_bytes(), 300 * kMiB);
  EXPECT_EQ(plan.device_bytes(), 300 * kMiB);
  EXPECT_EQ(plan.Describe(),
            "batch pool 300.0 MiB (prefetch 3 × batch 64) = 300.0 MiB; on the device: device "
            "batches 300.0 MiB (prefetch 3 × batch 64)");
  const auto keys = plan.BytesByKey();
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[1], (std::pair<std::string, int64_t>{"device_batches_bytes", 300 * kMiB}));
  EXPECT_EQ(keys[3], (std::pair<std::string, int64_t>{"total_bytes", 300 * kMiB}));
  // The host has room for the pool; the device's copy takes none of it.
  EXPECT_TRUE(plan.CheckFits(MemoryBudget{400 * kMiB, "MemAvailable"}).ok());
  EXPECT_EQ(plan.CheckFits(MemoryBudget{200 * kMiB, "MemAvailable"}).message(),
            "the batch pool needs 300.0 MiB (prefetch 3 × batch 64) but 200.0 MiB is "
            "available (MemAvailable): lower batch_size");
}

TEST(MemoryPlanTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{60211200000}), "56.1 GiB");
}

}  // namespace
}  // namespace flowloader
