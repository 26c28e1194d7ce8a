#include "stages/collate/batch.h"

#include <numeric>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

struct PlanCase {
  int64_t samples, batch;
  bool drop_last;
  int64_t batches, last_size;
};

class PlanBatchesTest : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanBatchesTest, GroupsEveryPositionOnceWithPartialTailUnlessDropLast) {
  const PlanCase c = GetParam();
  const auto ranges = PlanBatches(c.samples, c.batch, c.drop_last);
  ASSERT_EQ(static_cast<int64_t>(ranges.size()), c.batches);
  EXPECT_EQ(NumBatches(c.samples, c.batch, c.drop_last), c.batches);
  int64_t next = 0;
  for (const BatchRange& r : ranges) {
    EXPECT_EQ(r.begin, next);
    next = r.end;
  }
  if (!ranges.empty()) {
    EXPECT_EQ(ranges.back().end - ranges.back().begin, c.last_size);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PlanBatchesTest,
                         ::testing::Values(PlanCase{10, 4, false, 3, 2},
                                           PlanCase{10, 4, true, 2, 4},
                                           PlanCase{8, 4, true, 2, 4},
                                           PlanCase{3, 4, true, 0, 0},
                                           PlanCase{3, 4, false, 1, 3}));

TEST(CompactSlotsTest, RemovesSkippedSlotsKeepingOrder) {
  std::vector<int32_t> data(6 * 2);
  std::iota(data.begin(), data.end(), 0);  // Slot i holds {2i, 2i+1}.
  const int64_t kept =
      CompactSlots(data.data(), 2 * sizeof(int32_t), {true, false, true, false, false, true});
  ASSERT_EQ(kept, 3);
  EXPECT_EQ(std::vector<int32_t>(data.begin(), data.begin() + 6),
            (std::vector<int32_t>{0, 1, 4, 5, 10, 11}));
}

TEST(BatchTest, BytesFollowShapeAndDType) {
  Batch b;
  EXPECT_EQ(b.bytes(), 0u);
  EXPECT_EQ(b.size(), 0);
  b.tensors.resize(1);
  b.tensors[0].shape = {3, 3, 4, 5};
  EXPECT_EQ(b.bytes(), 3u * 3 * 4 * 5 * 4);
  b.tensors[0].dtype = DType::kUint8;
  EXPECT_EQ(b.bytes(), 3u * 3 * 4 * 5);
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b.dtype(), DType::kUint8);
}

}  // namespace
}  // namespace flowloader
