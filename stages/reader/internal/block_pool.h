// block_pool.h: memory for the block cache's blocks (block_cache.h), in 2 MiB-aligned
// regions backed by transparent huge pages, handed out as fixed-size slots and recycled.
//
// Why: a remote shard's epoch fetches ~110 blocks of 1 MiB into fresh memory, and the
// VMs here pay a hypervisor fault of ~5-8 us on the first touch of every 4 KiB page
// (host_memory.cc measured 100 MB: 460-840 ms on small pages, 15-30 ms on huge pages).
// perf on a shard epoch from nginx (s3perf, before this pool): 43 000 page faults
// against 4 800 from disk, 68% of them in copying bodies into fresh 1 MiB std::string
// blocks, and the faults' time was ~30% of the client's CPU. Slots carved from huge-page
// regions take one fault per 2 MiB, and a slot freed by eviction is reused untouched.
//
//   * Regions are mapped when a slot is needed and none is free (kRegionBytes each, or
//     one slot's worth rounded up to 2 MiB when a block is larger), and unmapped only by
//     the destructor: the pool's memory is the high-water mark of the blocks alive at
//     once, which the block cache bounds (its capacity plus the fetches in flight).
//   * Where THP is off (madvise refused) the regions are plain anonymous memory: 4 KiB
//     pages, correct, only slower.
//   * Acquire returns nullptr when the kernel refuses the mapping; the cache then keeps
//     that block in ordinary heap memory.
//
// Thread-safety: thread-safe.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_POOL_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_POOL_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace flowloader::internal {

class BlockPool {
 public:
  // A region's size when blocks are at most this large (8 slots of the default 1 MiB
  // blocks, 4 huge pages): small enough that a small cache maps little.
  static constexpr size_t kRegionBytes = size_t{8} << 20;
  static constexpr size_t kHugePage = size_t{2} << 20;

  // `slot_bytes` > 0: the size of every slot (the cache's block size).
  explicit BlockPool(size_t slot_bytes);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Acquire returns a slot of slot_bytes() (a free one, else one of a newly mapped
  // region), or nullptr when no region could be mapped.
  char* Acquire();
  // Release gives back a slot Acquire returned; it is handed out again before any new
  // region is mapped.
  void Release(char* slot);

  size_t slot_bytes() const { return slot_bytes_; }
  // mapped_bytes is the memory of every region mapped so far; free_slots the slots
  // waiting for Acquire.
  int64_t mapped_bytes() const;
  int64_t free_slots() const;

 private:
  struct Region {
    void* start;
    size_t length;
  };
  // MapRegionLocked maps one region and puts its slots on the free list; false when the
  // kernel refused.
  bool MapRegionLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t slot_bytes_;
  mutable std::mutex mu_;
  std::vector<Region> regions_ ABSL_GUARDED_BY(mu_);
  std::vector<char*> free_ ABSL_GUARDED_BY(mu_);
  int64_t mapped_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_POOL_H_
