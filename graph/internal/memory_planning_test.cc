// memory_planning_test.cc: the graph's memory plan arithmetic: the batch pool from the
// batch geometry, the stages' parts as declared, and, with batches on a CUDA device, one
// device buffer per batch buffer counted on the device, outside the host total.
#include "graph/internal/memory_planning.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

constexpr int64_t kSampleBytes = int64_t{3} * 224 * 224 * 4;  // 3×224² float32.

OutputSpec FloatOutput224() {
  OutputSpec output;
  output.sample_shape = {3, 224, 224};
  output.is_float = true;
  output.sample_bytes = static_cast<size_t>(kSampleBytes);
  return output;
}

GraphOptions Prefetch3Batch32() {
  GraphOptions options;
  options.prefetch_batches = 3;
  options.batch_size = 32;
  return options;
}

const std::vector<MemoryPart> kSeekIndex = {
    {"seek index", "seek_index", int64_t{4} << 20, "decode seek_index_mb 4", {"seek_index_mb"}}};

TEST(MemoryPlanningTest, HostPlanIsThePoolThenTheStageParts) {
  const MemoryPlan plan = PlanGraphMemory(Prefetch3Batch32(), {FloatOutput224()}, 32,
                                          /*pinned=*/false, /*on_device=*/false, kSeekIndex);
  ASSERT_EQ(plan.parts().size(), 3u);
  EXPECT_EQ(plan.parts()[0].key, "batch_pool");
  EXPECT_EQ(plan.parts()[0].bytes, 3 * 32 * kSampleBytes);
  EXPECT_EQ(plan.parts()[0].formula, "prefetch 3 × batch 32 × 3×224² float32");
  EXPECT_EQ(plan.parts()[1].key, "batch_labels");
  EXPECT_EQ(plan.parts()[1].bytes, 3 * 32 * 8);  // int64 class indices.
  EXPECT_EQ(plan.parts()[1].formula, "prefetch 3 × batch 32 × int64 label");
  EXPECT_EQ(plan.parts()[2].key, "seek_index");
  EXPECT_EQ(plan.total_bytes(), 3 * 32 * (kSampleBytes + 8) + (int64_t{4} << 20));
  EXPECT_EQ(plan.device_bytes(), 0);
}

TEST(MemoryPlanningTest, OnADeviceEachBatchBufferHasADeviceTwin) {
  const MemoryPlan plan = PlanGraphMemory(Prefetch3Batch32(), {FloatOutput224()}, 32,
                                          /*pinned=*/true, /*on_device=*/true, kSeekIndex);
  ASSERT_EQ(plan.parts().size(), 4u);
  const MemoryPart& device = plan.parts()[3];
  EXPECT_EQ(device.key, "device_batches");
  EXPECT_TRUE(device.device);
  EXPECT_FALSE(device.pinned);
  // 57.8 MB: prefetch × batch × (sample + its int64 label).
  EXPECT_EQ(device.bytes, 3 * 32 * (kSampleBytes + 8));
  EXPECT_EQ(device.formula,
            "prefetch 3 × batch 32 × 3×224² float32 + labels, a device buffer per batch buffer");
  // The host holds the pinned pool and the seek index; the device copy is not host memory.
  EXPECT_EQ(plan.pinned_bytes(), 3 * 32 * (kSampleBytes + 8));
  EXPECT_EQ(plan.total_bytes(), 3 * 32 * (kSampleBytes + 8) + (int64_t{4} << 20));
  EXPECT_EQ(plan.device_bytes(), 3 * 32 * (kSampleBytes + 8));
}

TEST(MemoryPlanningTest, DeviceBuffersHaveTheEpochsRowsToo) {
  // batch_size 64 over a 10-sample epoch: each buffer, host and device, holds 10 rows.
  GraphOptions options = Prefetch3Batch32();
  options.batch_size = 64;
  const int rows = PoolRows(options.batch_size, /*samples_per_epoch=*/10);
  ASSERT_EQ(rows, 10);
  const MemoryPlan plan =
      PlanGraphMemory(options, {FloatOutput224()}, rows, true, true, /*stage_parts=*/{});
  EXPECT_EQ(plan.parts()[2].bytes, 3 * 10 * (kSampleBytes + 8));
  EXPECT_EQ(plan.parts()[2].formula,
            "prefetch 3 × batch 10 (an epoch's samples; batch_size 64) × 3×224² float32 + "
            "labels, a device buffer per batch buffer");
}

TEST(MemoryPlanningTest, SoftTargetsCountTheirClassesAndTheAlignment) {
  // float32 [N, 1000] soft targets: 4000 bytes a row, the region aligned to 64 bytes
  // after a 3-byte tensor row (3 × 32 = 96 bytes: 32 bytes of padding per buffer).
  OutputSpec tiny;
  tiny.sample_shape = {3};
  tiny.is_float = false;
  tiny.sample_bytes = 3;
  LabelSpec soft;
  soft.num_classes = 1000;
  const MemoryPlan plan = PlanGraphMemory(Prefetch3Batch32(), {tiny}, 32, false, false, {}, soft);
  ASSERT_EQ(plan.parts().size(), 2u);
  EXPECT_EQ(plan.parts()[1].key, "batch_labels");
  EXPECT_EQ(plan.parts()[1].bytes, 3 * (32 + 32 * 4000));
  EXPECT_EQ(plan.parts()[1].formula, "prefetch 3 × batch 32 × 1000 float32 soft label");
  const std::vector<TensorRegion> regions = LayOutTensors({tiny}, 32);
  const TensorRegion label = LabelRegion(regions, soft, 32);
  EXPECT_EQ(label.offset, 128u);
  EXPECT_EQ(label.bytes, 32u * 4000u);
}

}  // namespace
}  // namespace flowloader
