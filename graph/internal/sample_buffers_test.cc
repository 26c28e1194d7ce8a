// Tests of the per-thread spare buffers: a buffer given back is lent to the next sample
// on the thread, for byte strings (std::string's inline capacity is not a block) as for
// vectors.
#include "graph/internal/sample_buffers.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace graph_internal {
namespace {

TEST(SampleBuffersTest, AStringGivenBackIsLentToTheNextSample) {
  std::string first;
  Borrow(first);
  first.assign(100000, 'x');
  const char* const block = first.data();
  GiveBack(first);
  EXPECT_TRUE(first.empty());
  std::string next;  // Empty, 15 bytes inline: no block of its own.
  Borrow(next);
  EXPECT_EQ(next.data(), block);  // The same block, not a new one.
  EXPECT_GE(next.capacity(), 100000u);
  GiveBack(next);
}

TEST(SampleBuffersTest, AVectorGivenBackIsLentToTheNextSample) {
  std::vector<float> first(5000, 1.0f);
  const float* const block = first.data();
  GiveBack(first);
  std::vector<float> next;
  Borrow(next);
  EXPECT_EQ(next.data(), block);
  GiveBack(next);
}

TEST(SampleBuffersTest, ABufferOverMaxKeptIsFreedNotKept) {
  std::string spare_before;
  Borrow(spare_before);  // Empties the thread's spare.
  std::string big(2000, 'z');
  GiveBack(big, 1000);  // Over max_kept: freed.
  EXPECT_TRUE(big.empty());
  std::string next;
  Borrow(next);
  EXPECT_LT(next.capacity(), 2000u);
  std::string small(500, 'w');
  const char* const block = small.data();
  GiveBack(small, 1000);  // Within it: kept.
  std::string again;
  Borrow(again);
  EXPECT_EQ(again.data(), block);
}

TEST(SampleBuffersTest, ABufferWithItsOwnBlockKeepsIt) {
  std::string own(1000, 'y');
  const char* const block = own.data();
  Borrow(own);
  EXPECT_EQ(own.data(), block);
}

}  // namespace
}  // namespace graph_internal
}  // namespace flowloader
