// parallelism_test.cc: ScopedParallelism keeps oneTBB's worker limit at the live
// pipelines' sum while pipelines come and go (graph/internal/parallelism.h).
#include "graph/internal/parallelism.h"

#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

size_t Limit() {
  return tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
}

// While one pipeline of 3 workers lives, the limit is at least 4 (its workers and the
// external thread's slot), however other pipelines are made and dropped: the limit was
// dropped before the next was set, and in between oneTBB's default applied (cores, so 1
// worker on a 2-core machine; on one with 4 cores or more the default hides the gap).
TEST(ScopedParallelismTest, TheLimitNeverFallsBelowTheLivePipelinesSum) {
  ScopedParallelism live(3);
  ASSERT_EQ(Limit(), 4u);
  std::atomic<bool> stop{false};
  std::thread churn([&stop] {
    while (!stop.load()) ScopedParallelism other(2);
  });
  size_t lowest = Limit();
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < end) lowest = std::min(lowest, Limit());
  stop.store(true);
  churn.join();
  EXPECT_GE(lowest, 4u);
  EXPECT_EQ(Limit(), 4u);
}

TEST(ScopedParallelismTest, TheLimitFollowsTheSumAndGoesWithTheLast) {
  const size_t before = Limit();
  {
    ScopedParallelism a(2);
    EXPECT_EQ(Limit(), 3u);
    {
      ScopedParallelism b(5);
      EXPECT_EQ(Limit(), 8u);
    }
    EXPECT_EQ(Limit(), 3u);
  }
  EXPECT_EQ(Limit(), before);
}

}  // namespace
}  // namespace flowloader
