#include "stages/core/rng.h"

#include <set>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

TEST(SampleRngTest, SameKeyGivesSameStream) {
  SampleRng a(7, 3, 42), b(7, 3, 42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.NextU64(), b.NextU64());
}

TEST(SampleRngTest, EachKeyComponentChangesTheStream) {
  const uint64_t base = SampleRng(7, 3, 42).NextU64();
  EXPECT_NE(base, SampleRng(8, 3, 42).NextU64());
  EXPECT_NE(base, SampleRng(7, 4, 42).NextU64());
  EXPECT_NE(base, SampleRng(7, 3, 43).NextU64());
  EXPECT_NE(base, SampleRng(7, 3, 42, 1).NextU64());
}

TEST(SampleRngTest, UniformStaysInRangeAndCoversIt) {
  SampleRng rng(1, 0, 0);
  double lo = 1, hi = 0, sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform(0.08, 1.0);
    ASSERT_GE(u, 0.08);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  EXPECT_LT(lo, 0.09);
  EXPECT_GT(hi, 0.99);
  EXPECT_NEAR(sum / n, 0.54, 0.01);
}

TEST(SampleRngTest, UniformIntHitsEveryValueAndNoOther) {
  SampleRng rng(1, 0, 0);
  std::set<int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = rng.UniformInt(-3, 4);
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(SampleRngTest, BernoulliMatchesProbability) {
  SampleRng rng(5, 0, 0);
  int hits = 0;
  for (int i = 0; i < 10000; ++i) hits += rng.Bernoulli(0.25);
  EXPECT_NEAR(hits / 10000.0, 0.25, 0.02);
}

}  // namespace
}  // namespace flowloader
