// memory_plan_test.cc: Pipeline::Create plans its memory before allocating it: the batch
// pool holds at most an epoch's samples per buffer, and a plan above the memory the
// pipeline may use is refused in one line naming the bytes and the knobs.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Drain;
using testing::MakeImageFolder;
using testing::SmallCpuOptions;
using testing::TempDirForTest;

constexpr int kImages = 10;

class MemoryPlanTest : public ::testing::Test {
 protected:
  void SetUp() override { data_ = MakeImageFolder(TempDirForTest("memory_plan_"), 2, 5); }

  static std::map<std::string, int64_t> Plan(const Pipeline& pipeline) {
    std::map<std::string, int64_t> plan;
    for (const auto& [key, bytes] : pipeline.stats()->memory_plan) plan[key] = bytes;
    return plan;
  }

  std::string data_;
};

TEST_F(MemoryPlanTest, BatchSizeAboveTheDatasetAllocatesOnlyTheEpochsRows) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/100000, nullptr);
  o.prefetch_batches = 3;  // A fixed pool (auto would start at 2 buffers and grow).
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const int64_t sample_bytes = static_cast<int64_t>((*pipeline)->output().sample_bytes);
  const int64_t pool = int64_t{o.prefetch_batches} * kImages * sample_bytes;
  const int64_t labels = int64_t{o.prefetch_batches} * kImages * 8;  // int64 labels.
  // The gauge of what the pool holds, and the plan, both count 10 rows, not 100000.
  EXPECT_EQ((*pipeline)->stats()->host_bytes_budget.load(), pool + labels);
  EXPECT_EQ(Plan(**pipeline)["batch_pool_bytes"], pool);
  EXPECT_EQ(Plan(**pipeline)["batch_labels_bytes"], labels);
  const testing::Drained d = Drain(pipeline->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.samples, kImages);
}

TEST_F(MemoryPlanTest, PlanIsInTheStatsWithItsParts) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/4, nullptr);
  o.prefetch_batches = 3;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::map<std::string, int64_t> plan = Plan(**pipeline);
  const int64_t sample_bytes = static_cast<int64_t>((*pipeline)->output().sample_bytes);
  EXPECT_EQ(plan["batch_pool_bytes"], 3 * 4 * sample_bytes);
  // decode's budget as the dataset can use it: 10 files × 8 KiB, within the 256 MiB.
  EXPECT_EQ(plan["seek_index_bytes"], 10 * (8 << 10));
  EXPECT_EQ(plan["decode_scratch_bytes"], 2 * (2 * 2 * 16 * 16 * 3));  // 2 workers.
  // decode's per-decode codec budget (max_decode_mb 8), once per worker.
  EXPECT_EQ(plan["decode_codec_bytes"], 2 * (8 << 20));
  EXPECT_EQ(plan["batch_labels_bytes"], 3 * 4 * 8);  // int64 labels in each buffer.
  EXPECT_EQ(plan["total_bytes"], plan["batch_pool_bytes"] + plan["batch_labels_bytes"] +
                                     plan["seek_index_bytes"] + plan["decode_codec_bytes"] +
                                     plan["decode_scratch_bytes"]);
  EXPECT_GT(plan["available_bytes"], 0);  // MemAvailable is always readable on Linux.
}

TEST_F(MemoryPlanTest, LargeImagesAreRefusedAtCreateAboveTheLimit) {
  PipelineOptions o = SmallCpuOptions(data_, /*batch_size=*/4, nullptr);
  o.image_size = 5000;
  o.prefetch_batches = 3;
  o.memory_limit_mb = 1024;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(o);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(pipeline.status().message(),
            "the batch pool needs 3.4 GiB (prefetch 3 × batch 4 × 3×5000² float32) but 1.0 GiB "
            "is available (memory_limit_mb): lower batch_size, image_size or prefetch_batches");
}

// The seek index is planned from the dataset (files × 8 KiB, within seek_index_mb), not
// at its whole 256 MiB budget: a small dataset runs in a small container, under a limit
// far below 257 MiB.
TEST_F(MemoryPlanTest, TheSeekIndexIsPlannedFromTheDatasetsSize) {
  PipelineOptions o = SmallCpuOptions(data_, 4, nullptr);
  // Codec memory 2 × 16 MiB + pool 36 KiB + seek index 80 KiB + scratch 6 KiB.
  o.memory_limit_mb = 33;
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(plan->Describe().find("seek index 80.0 KiB (10 files × 8.0 KiB, within decode "
                                  "seek_index_mb 256)"),
            std::string::npos)
      << plan->Describe();
  EXPECT_TRUE(Pipeline::Create(o).ok());
  // A budget below what the files could use is the budget.
  o.stages = *DefaultStages(o);
  o.stages[1].args["seek_index_mb"] = "0";
  plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (const MemoryPart& part : plan->parts()) EXPECT_NE(part.key, "seek_index");
}

}  // namespace
}  // namespace flowloader
