#include "stages/reader/sampler.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(SamplerTest, SequentialVisitsDatasetOrder) {
  auto s = Sampler::Create(5, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->EpochIndices(0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ((*s)->EpochIndices(7), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(SamplerTest, ShuffleIsAPermutationThatChangesPerEpochAndRepeatsPerSeed) {
  SamplerOptions o;
  o.shuffle = true;
  o.seed = 42;
  auto s = Sampler::Create(100, o);
  ASSERT_TRUE(s.ok());
  const auto e0 = (*s)->EpochIndices(0), e1 = (*s)->EpochIndices(1);
  std::vector<int64_t> all(100);
  for (int i = 0; i < 100; ++i) all[i] = i;
  EXPECT_EQ(Sorted(e0), all);
  EXPECT_EQ(Sorted(e1), all);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, (*Sampler::Create(100, o))->EpochIndices(0));
  o.seed = 43;
  EXPECT_NE(e0, (*Sampler::Create(100, o))->EpochIndices(0));
}

struct ShardCase {
  int64_t size;
  int world_size;
  bool drop_remainder;
};

class ShardingTest : public ::testing::TestWithParam<ShardCase> {};

TEST_P(ShardingTest, RanksAreDisjointCoverTheDatasetAndAreEqualInSize) {
  const ShardCase c = GetParam();
  std::multiset<int64_t> seen;
  int64_t per_rank = -1;
  for (int r = 0; r < c.world_size; ++r) {
    SamplerOptions o;
    o.shuffle = true;
    o.seed = 9;
    o.rank = r;
    o.world_size = c.world_size;
    o.drop_remainder = c.drop_remainder;
    auto s = Sampler::Create(c.size, o);
    ASSERT_TRUE(s.ok()) << s.status();
    const auto mine = (*s)->EpochIndices(3);
    if (per_rank < 0) per_rank = static_cast<int64_t>(mine.size());
    EXPECT_EQ(static_cast<int64_t>(mine.size()), per_rank);
    EXPECT_EQ((*s)->samples_per_rank(), per_rank);
    seen.insert(mine.begin(), mine.end());
  }
  const int64_t total = per_rank * c.world_size;
  const int64_t padding = total - c.size;  // Negative when the remainder is dropped.
  std::set<int64_t> distinct(seen.begin(), seen.end());
  if (c.drop_remainder) {
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), total);  // Disjoint.
  } else {
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), c.size);  // Covers everything.
    EXPECT_EQ(static_cast<int64_t>(seen.size()) - c.size, padding);  // Only padding repeats.
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, ShardingTest,
                         ::testing::Values(ShardCase{100, 4, false}, ShardCase{103, 4, false},
                                           ShardCase{103, 4, true}, ShardCase{7, 7, false},
                                           ShardCase{10, 3, false}));

TEST(SamplerTest, RejectsBadShardOptions) {
  SamplerOptions o;
  o.world_size = 2;
  o.rank = 2;
  EXPECT_FALSE(Sampler::Create(10, o).ok());
  o.world_size = 0;
  EXPECT_FALSE(Sampler::Create(10, o).ok());
  EXPECT_FALSE(Sampler::Create(0, {}).ok());
}

}  // namespace
}  // namespace flowloader
