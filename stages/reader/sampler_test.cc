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

// RASamplerOf is torchvision's references/classification/sampler.py RASampler.__iter__
// on a given epoch order, transcribed: repeat each index `reps` times in a row, pad with
// the start to total_size = ceil(n·reps / ws)·ws, take [rank::ws], cut to
// floor(n // 256 * 256 / ws).
std::vector<int64_t> RASamplerOf(const std::vector<int64_t>& order, int reps, int ws, int rank) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<int64_t> indices;
  for (int64_t i : order) indices.insert(indices.end(), reps, i);
  const int64_t num_samples = (n * reps + ws - 1) / ws;
  const int64_t total = num_samples * ws;
  for (int64_t j = 0; static_cast<int64_t>(indices.size()) < total; ++j) {
    indices.push_back(indices[static_cast<size_t>(j)]);
  }
  std::vector<int64_t> mine;
  for (int64_t j = rank; j < total; j += ws) mine.push_back(indices[static_cast<size_t>(j)]);
  mine.resize(static_cast<size_t>(n / 256 * 256 / ws));
  return mine;
}

struct RepeatCase {
  int64_t size;
  int reps, world_size;
  bool shuffle;
};

class RepeatedAugmentTest : public ::testing::TestWithParam<RepeatCase> {};

TEST_P(RepeatedAugmentTest, EveryRankGetsExactlyRASamplersSequence) {
  const RepeatCase c = GetParam();
  SamplerOptions plain;
  plain.shuffle = c.shuffle;
  plain.seed = 9;
  // The epoch's order before sharding is the plain sampler's on one rank.
  const std::vector<int64_t> order = (*Sampler::Create(c.size, plain))->EpochIndices(2);
  std::set<uint64_t> keys;
  for (int rank = 0; rank < c.world_size; ++rank) {
    SamplerOptions o = plain;
    o.repeated_augment = c.reps;
    o.world_size = c.world_size;
    o.rank = rank;
    auto s = Sampler::Create(c.size, o);
    ASSERT_TRUE(s.ok()) << s.status();
    const std::vector<int64_t> mine = (*s)->EpochIndices(2);
    EXPECT_EQ(mine, RASamplerOf(order, c.reps, c.world_size, rank)) << "rank " << rank;
    EXPECT_EQ((*s)->samples_per_rank(), static_cast<int64_t>(mine.size()));
    for (int64_t p = 0; p < static_cast<int64_t>(mine.size()); ++p) {
      // Each copy its own draw key, distinct across ranks; copies count 0..k-1 in a row.
      EXPECT_TRUE(keys.insert((*s)->RngKey(p, mine[static_cast<size_t>(p)])).second);
      EXPECT_EQ((*s)->Copy(p), (p * c.world_size + rank) % c.reps);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    RASampler, RepeatedAugmentTest,
    ::testing::Values(RepeatCase{600, 3, 1, false}, RepeatCase{600, 3, 2, true},
                      RepeatCase{1000, 4, 3, true}, RepeatCase{257, 2, 1, true},
                      RepeatCase{513, 3, 4, true}));

TEST(RepeatedAugmentTest, OffKeysByIndexAndRefusesZeroOrAnEmptyCut) {
  SamplerOptions o;
  auto s = Sampler::Create(10, o);
  EXPECT_EQ((*s)->RngKey(3, 7), 7u);  // As before repeats existed: the dataset index.
  EXPECT_EQ((*s)->Copy(3), 0);
  o.repeated_augment = 0;
  EXPECT_EQ(Sampler::Create(10, o).status().message(),
            "repeated_augment must be >= 1 (1 = off), got 0");
  o.repeated_augment = 3;
  EXPECT_FALSE(Sampler::Create(255, o).ok());  // floor(255 // 256 * 256) = 0.
  o.world_size = 2;
  EXPECT_TRUE(Sampler::Create(256, o).ok());
}

TEST(SamplerTest, OneRanksOrderIsNotCopied) {
  // One rank: its indices are the order itself, held and the next built (2 × 8 B).
  SamplerOptions o;
  o.shuffle = true;
  auto one = Sampler::Create(1000, o);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->order_bytes(), 1000 * 16);
  EXPECT_EQ((*one)->EpochIndices(3).size(), 1000u);
  // Two ranks build the whole order (8 B) and copy their half of it.
  o.world_size = 2;
  auto two = Sampler::Create(1000, o);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)->order_bytes(), 1000 * 8 + 2 * 500 * 8);
}

}  // namespace
}  // namespace flowloader
