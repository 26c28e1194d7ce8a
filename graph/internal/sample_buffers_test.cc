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

TEST(SampleBuffersTest, ABufferWithItsOwnBlockKeepsIt) {
  std::string own(1000, 'y');
  const char* const block = own.data();
  Borrow(own);
  EXPECT_EQ(own.data(), block);
}

}  // namespace
}  // namespace graph_internal
}  // namespace flowloader
