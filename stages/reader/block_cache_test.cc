// Tests of BlockCache and its BlockPool: blocks fetched straight into huge-page slots,
// slots recycled on eviction, blocks held past eviction and past the cache, failed
// fetches, claims for the read stage's block read-ahead, and runs of blocks fetched with
// one request.
#include "stages/reader/internal/block_cache.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
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

// Bytes is `n` bytes counting up from `from` (mod 251), so a misplaced byte shows.
std::string Bytes(int64_t from, int64_t n) {
  std::string s(static_cast<size_t>(n), '\0');
  for (int64_t i = 0; i < n; ++i) s[static_cast<size_t>(i)] = static_cast<char>((from + i) % 251);
  return s;
}

TEST(BlockCacheTest, ARunCachesEachBlockAsSoonAsItsLastByteIsIn) {
  constexpr int64_t kSmall = 4096;
  BlockCache cache(64 * kSmall, kSmall);
  const int64_t file = 5 * kSmall + 100;  // 6 blocks, the last of 100 bytes.
  std::unique_ptr<BlockCache::Run> run = cache.BeginRun("u", 1, 8, file);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->first(), 1);
  EXPECT_EQ(run->count(), 5) << "blocks 1..5: stops at the file's end";
  EXPECT_EQ(run->remaining_bytes(), 4 * kSmall + 100);
  EXPECT_EQ(cache.fetches(), 1) << "one request for the run";
  EXPECT_FALSE(cache.Claim({"u", 3})) << "being fetched by the run";
  EXPECT_EQ(cache.BeginRun("u", 3, 8, file), nullptr) << "no second fetch of a run's block";
  const std::string bytes = Bytes(kSmall, 4 * kSmall + 100);
  run->Write(bytes.data(), kSmall + 10);  // Block 1 and 10 bytes of block 2.
  EXPECT_TRUE(cache.Contains({"u", 1})) << "complete: cached before the run ends";
  EXPECT_FALSE(cache.Contains({"u", 2}));
  auto one = cache.Get({"u", 1}, [](char*) -> absl::StatusOr<int64_t> {
    ADD_FAILURE() << "fetched a block the run brought";
    return 0;
  });
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(**one, bytes.substr(0, kSmall));
  run->Write(bytes.data() + kSmall + 10, bytes.size() - kSmall - 10);
  EXPECT_EQ(run->remaining_bytes(), 0);
  run.reset();
  for (int64_t i = 1; i <= 5; ++i) {
    auto block = cache.Get({"u", i}, Fill('x', 1));
    ASSERT_TRUE(block.ok());
    EXPECT_EQ(**block, bytes.substr(static_cast<size_t>((i - 1) * kSmall),
                                    static_cast<size_t>(i == 5 ? 100 : kSmall)))
        << "block " << i;
  }
  EXPECT_EQ(cache.fetches(), 1);
}

TEST(BlockCacheTest, ARunStopsAtABlockCachedOrBeingFetched) {
  BlockCache cache(64 * kBlock, kBlock);
  ASSERT_TRUE(cache.Get({"u", 2}, Fill('a', kBlock)).ok());
  std::unique_ptr<BlockCache::Run> run = cache.BeginRun("u", 0, 8, 10 * kBlock);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->count(), 2) << "blocks 0 and 1: block 2 is cached";
  EXPECT_EQ(cache.BeginRun("u", 2, 8, 10 * kBlock), nullptr) << "cached";
  EXPECT_EQ(cache.BeginRun("u", 1, 8, 10 * kBlock), nullptr) << "in the run above";
  EXPECT_TRUE(cache.Claim({"u", 4}));
  std::unique_ptr<BlockCache::Run> next = cache.BeginRun("u", 3, 2, 10 * kBlock);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->count(), 2) << "max_blocks; a claimed block is taken over";
}

TEST(BlockCacheTest, ARetriedRunResumesAtItsFirstIncompleteBlockAndFailsTheRest) {
  constexpr int64_t kSmall = 4096;
  BlockCache cache(64 * kSmall, kSmall);
  const int64_t mapped_before = cache.pool_mapped_bytes();
  std::unique_ptr<BlockCache::Run> run = cache.BeginRun("u", 0, 4, 4 * kSmall);
  ASSERT_NE(run, nullptr);
  const std::string bytes = Bytes(0, 4 * kSmall);
  run->Write(bytes.data(), kSmall + 5);  // An attempt cut inside block 1.
  run->Rewind();                         // Its retry: block 1 from its start.
  EXPECT_EQ(run->resume_index(), 1);
  EXPECT_EQ(run->resume_offset(), kSmall);
  EXPECT_EQ(run->remaining_bytes(), 3 * kSmall);
  run->Write(bytes.data() + kSmall, kSmall);  // Block 1 whole, then the retry fails too.
  run->Fail(absl::UnavailableError("cut again"));
  run.reset();
  EXPECT_TRUE(cache.Contains({"u", 0}));
  EXPECT_TRUE(cache.Contains({"u", 1}));
  auto second = cache.Get({"u", 1}, Fill('x', 1));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(**second, bytes.substr(kSmall, kSmall)) << "no byte of the cut attempt left";
  EXPECT_FALSE(cache.Contains({"u", 2})) << "errors are not cached";
  EXPECT_TRUE(cache.Claim({"u", 2})) << "no longer being fetched: a later read-ahead may";
  auto refetched = cache.Get({"u", 3}, Fill('c', 7));
  ASSERT_TRUE(refetched.ok());
  EXPECT_EQ(**refetched, "ccccccc");
  EXPECT_EQ(cache.cached_bytes(), 2 * kSmall + 7);
  EXPECT_GE(cache.pool_mapped_bytes(), mapped_before);
}

TEST(BlockCacheTest, AReaderWaitingForARunsBlockGetsItOrTheRunsError) {
  BlockCache cache(64 * kBlock, kBlock);
  std::unique_ptr<BlockCache::Run> run = cache.BeginRun("u", 0, 2, 2 * kBlock);
  ASSERT_NE(run, nullptr);
  std::promise<void> waiting;
  auto first = std::async(std::launch::async, [&] {
    waiting.set_value();
    return cache.Get({"u", 0}, Fill('x', 1));  // Waits for the run: no fetch of its own.
  });
  auto second = std::async(std::launch::async, [&] { return cache.Get({"u", 1}, Fill('x', 1)); });
  waiting.get_future().wait();
  const std::string bytes(kBlock, 'r');
  run->Write(bytes.data(), bytes.size());
  run->Fail(absl::DataLossError("cut"));
  run.reset();
  absl::StatusOr<BlockCache::Block> got = first.get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(**got, bytes);
  // Block 1: the run's error if Get found it being fetched, or a fetch of its own ('x')
  // if it came after the run ended; never a block of the run's bytes.
  absl::StatusOr<BlockCache::Block> other = second.get();
  if (other.ok()) {
    EXPECT_EQ(**other, "x");
  } else {
    EXPECT_EQ(other.status().code(), absl::StatusCode::kDataLoss) << other.status();
  }
}

}  // namespace
}  // namespace flowloader::internal
