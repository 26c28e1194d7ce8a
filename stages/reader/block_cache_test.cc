// Tests of BlockCache and its BlockPool: blocks fetched straight into huge-page slots,
// slots recycled on eviction, blocks held past eviction and past the cache, failed
// fetches, and claims for the read stage's block read-ahead.
#include "stages/reader/internal/block_cache.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace flowloader::internal {
namespace {

constexpr int64_t kBlock = int64_t{1} << 20;

// Fill is a fetch writing `n` bytes of `c`.
BlockCache::FetchFn Fill(char c, int64_t n, char** seen = nullptr) {
  return [c, n, seen](char* into) -> absl::StatusOr<int64_t> {
    if (seen != nullptr) *seen = into;
    std::memset(into, c, static_cast<size_t>(n));
    return n;
  };
}

// VmFlagsOf is the VmFlags line of the mapping holding `address` in /proc/self/smaps.
std::string VmFlagsOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    const std::string range = line.substr(0, line.find(' '));
    const size_t dash = range.find('-');
    uint64_t lo = 0, hi = 0;
    if (dash != std::string::npos && absl::SimpleHexAtoi(range.substr(0, dash), &lo) &&
        absl::SimpleHexAtoi(range.substr(dash + 1), &hi)) {
      inside = a >= lo && a < hi;
    } else if (inside && absl::StartsWith(line, "VmFlags:")) {
      return line;
    }
  }
  return "";
}

bool ThpOff() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::stringstream text;
  text << f.rdbuf();
  return !f || absl::StrContains(text.str(), "[never]");
}

TEST(BlockCacheTest, AFetchWritesItsBlockInPlaceInAHugePageSlot) {
  BlockCache cache(64 * kBlock, kBlock);
  char* into = nullptr;
  auto block = cache.Get({"u", 0}, Fill('a', 1000, &into));
  ASSERT_TRUE(block.ok()) << block.status();
  EXPECT_EQ((*block)->data(), into) << "served from the slot the fetch wrote: no copy";
  EXPECT_EQ(**block, std::string(1000, 'a'));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(into) % BlockPool::kHugePage, 0u)
      << "the first slot starts a 2 MiB-aligned region";
  EXPECT_EQ(cache.pool_mapped_bytes(), static_cast<int64_t>(BlockPool::kRegionBytes));
  if (!ThpOff()) {
    // "hg": the region is marked MADV_HUGEPAGE (one fault per 2 MiB instead of 512).
    EXPECT_TRUE(absl::StrContains(VmFlagsOf(into), " hg")) << VmFlagsOf(into);
  }
  // Cached: a second Get does not fetch.
  auto again = cache.Get({"u", 0}, [](char*) -> absl::StatusOr<int64_t> {
    ADD_FAILURE() << "fetched a cached block";
    return 0;
  });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->data(), into);
  EXPECT_EQ(cache.fetches(), 1);
}

TEST(BlockCacheTest, EvictedBlocksGiveTheirSlotsBackInsteadOfMappingMore) {
  BlockCache cache(2 * kBlock, kBlock);  // Two blocks cached at most.
  for (int64_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(cache.Get({"u", i}, Fill('x', kBlock)).ok());
  }
  EXPECT_EQ(cache.cached_bytes(), 2 * kBlock);
  EXPECT_EQ(cache.pool_mapped_bytes(), static_cast<int64_t>(BlockPool::kRegionBytes))
      << "100 blocks through 3 slots: one region, never a fresh one";
}

TEST(BlockCacheTest, ABlockHeldByAReaderKeepsItsBytesPastEvictionAndTheCache) {
  BlockCache::Block held;
  {
    BlockCache cache(kBlock, kBlock);  // One block cached at most.
    auto first = cache.Get({"u", 0}, Fill('a', kBlock));
    ASSERT_TRUE(first.ok());
    held = *first;
    // Each evicts the one before; 'a''s slot is not reused while held.
    for (int64_t i = 1; i < 10; ++i) ASSERT_TRUE(cache.Get({"u", i}, Fill('b', kBlock)).ok());
  }
  ASSERT_EQ(held->size(), static_cast<size_t>(kBlock));
  EXPECT_EQ(*held, std::string(kBlock, 'a'));
}

TEST(BlockCacheTest, AFailedFetchIsNotCachedAndGivesItsSlotBack) {
  BlockCache cache(8 * kBlock, kBlock);
  auto failed = cache.Get({"u", 0}, [](char*) -> absl::StatusOr<int64_t> {
    return absl::UnavailableError("gone");
  });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(cache.cached_bytes(), 0);
  const int64_t mapped = cache.pool_mapped_bytes();
  auto ok = cache.Get({"u", 0}, Fill('c', 10));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(**ok, "cccccccccc");
  EXPECT_EQ(cache.fetches(), 2) << "the error was not kept";
  EXPECT_EQ(cache.pool_mapped_bytes(), mapped);
}

TEST(BlockCacheTest, SeededBlocksAndLargeBlocksAreServedToo) {
  BlockCache cache(64 * kBlock, 3 * kBlock);  // Slots larger than a region's default.
  EXPECT_TRUE(cache.Put({"u", 1}, "seed"));
  EXPECT_FALSE(cache.Put({"u", 1}, "again")) << "kept already";
  auto seeded = cache.Get({"u", 1}, Fill('z', 1));
  ASSERT_TRUE(seeded.ok());
  EXPECT_EQ(**seeded, "seed");
  auto big = cache.Get({"u", 2}, Fill('q', 3 * kBlock));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ((*big)->size(), static_cast<size_t>(3 * kBlock));
  EXPECT_EQ(cache.pool_mapped_bytes() % static_cast<int64_t>(BlockPool::kHugePage), 0);
}

TEST(BlockCacheTest, ABlockIsClaimedOnceUntilItsFetchEnds) {
  BlockCache cache(8 * kBlock, kBlock);
  EXPECT_TRUE(cache.Claim({"u", 0}));
  EXPECT_FALSE(cache.Claim({"u", 0})) << "claimed already: one read-ahead per block";
  ASSERT_TRUE(cache.Get({"u", 0}, Fill('a', 5)).ok());
  EXPECT_FALSE(cache.Claim({"u", 0})) << "cached";
  // A failed fetch ends the claim: a later read-ahead may try again.
  EXPECT_TRUE(cache.Claim({"u", 1}));
  EXPECT_FALSE(cache.Get({"u", 1}, [](char*) -> absl::StatusOr<int64_t> {
                      return absl::UnavailableError("gone");
                    }).ok());
  EXPECT_TRUE(cache.Claim({"u", 1}));
}

}  // namespace
}  // namespace flowloader::internal
