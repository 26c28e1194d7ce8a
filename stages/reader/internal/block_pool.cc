#include "stages/reader/internal/block_pool.h"

#include <sys/mman.h>

#include <cstdint>

#include "stages/core/huge_pages.h"

namespace flowloader::internal {

static_assert(BlockPool::kHugePage == kHugePageBytes, "regions are whole huge pages");

BlockPool::BlockPool(size_t slot_bytes) : slot_bytes_(slot_bytes > 0 ? slot_bytes : 1) {}

BlockPool::~BlockPool() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Region& r : regions_) munmap(r.start, r.length);
}

bool BlockPool::MapRegionLocked() {
  // Whole huge pages holding at least one slot, kRegionBytes when slots are small.
  size_t length = slot_bytes_ > kRegionBytes ? slot_bytes_ : kRegionBytes;
  length = RoundUpToHugePages(length);
  void* start = MapHugeAligned(length);
  if (start == nullptr) return false;
  regions_.push_back({start, length});
  mapped_bytes_ += static_cast<int64_t>(length);
  char* base = static_cast<char*>(start);
  const size_t slots = length / slot_bytes_;
  // Pushed last-first, so Acquire hands them out in address order (one huge page filled
  // before the next is touched).
  for (size_t i = slots; i > 0; --i) free_.push_back(base + (i - 1) * slot_bytes_);
  return true;
}

char* BlockPool::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty() && !MapRegionLocked()) return nullptr;
  char* slot = free_.back();
  free_.pop_back();
  return slot;
}

void BlockPool::Release(char* slot) {
  if (slot == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(slot);
}

int64_t BlockPool::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mapped_bytes_;
}

int64_t BlockPool::free_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(free_.size());
}

}  // namespace flowloader::internal
