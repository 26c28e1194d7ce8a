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

size_t BlockPool::RegionLength() const {
  // Whole huge pages holding at least one slot, kRegionBytes when slots are small.
  return RoundUpToHugePages(slot_bytes_ > kRegionBytes ? slot_bytes_ : kRegionBytes);
}

void BlockPool::AddRegionLocked(void* start, size_t length) {
  regions_.push_back({start, length});
  mapped_bytes_ += static_cast<int64_t>(length);
  char* base = static_cast<char*>(start);
  const size_t slots = length / slot_bytes_;
  mapped_slots_ += static_cast<int64_t>(slots);
  // Pushed last-first, so Acquire hands them out in address order (one huge page filled
  // before the next is touched).
  for (size_t i = slots; i > 0; --i) free_.push_back(base + (i - 1) * slot_bytes_);
}

bool BlockPool::MapRegionLocked() {
  const size_t length = RegionLength();
  void* start = MapHugeAligned(length);
  if (start == nullptr) return false;
  AddRegionLocked(start, length);
  return true;
}

int64_t BlockPool::Reserve(int64_t slots, const std::atomic<bool>& stop) {
  const size_t length = RegionLength();
  const int64_t region_slots = static_cast<int64_t>(length / slot_bytes_);
  while (!stop.load(std::memory_order_relaxed)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (mapped_slots_ + reserving_slots_ >= slots) return mapped_slots_;
      reserving_slots_ += region_slots;
    }
    // Mapped and touched outside the lock (Acquire maps its own meanwhile); no slot of
    // it is handed out before every page of it is in.
    void* start = MapHugeAligned(length);
    if (start != nullptr) {
      volatile char* bytes = static_cast<char*>(start);
      for (size_t page = 0; page < length; page += 4096) bytes[page] = 0;
    }
    std::lock_guard<std::mutex> lock(mu_);
    reserving_slots_ -= region_slots;
    if (start == nullptr) return mapped_slots_;
    AddRegionLocked(start, length);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return mapped_slots_;
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
