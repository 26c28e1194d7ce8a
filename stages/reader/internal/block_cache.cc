#include "stages/reader/internal/block_cache.h"

namespace flowloader::internal {

absl::StatusOr<BlockCache::Block> BlockCache::Get(const Key& key, const FetchFn& fetch) {
  std::promise<absl::StatusOr<Block>> promise;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto cached = entries_.find(key);
    if (cached != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, cached->second.lru_position);
      return cached->second.block;
    }
    auto pending = in_flight_.find(key);
    if (pending != in_flight_.end()) {
      Result result = pending->second;  // Copy: the fetcher erases the map's entry.
      lock.unlock();
      return result.get();
    }
    in_flight_.emplace(key, promise.get_future().share());
    ++fetches_;
  }
  absl::StatusOr<std::string> fetched = fetch();
  absl::StatusOr<Block> block =
      fetched.ok() ? absl::StatusOr<Block>(std::make_shared<const std::string>(
                         std::move(*fetched)))
                   : absl::StatusOr<Block>(fetched.status());
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(key);
    if (block.ok()) InsertLocked(key, *block);
  }
  promise.set_value(block);
  return block;
}

bool BlockCache::Put(const Key& key, std::string block) {
  const int64_t size = static_cast<int64_t>(block.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (size > capacity_bytes_ || entries_.count(key) != 0 || in_flight_.count(key) != 0) {
    return false;
  }
  InsertLocked(key, std::make_shared<const std::string>(std::move(block)));
  return true;
}

void BlockCache::InsertLocked(const Key& key, Block block) {
  const int64_t size = static_cast<int64_t>(block->size());
  if (size > capacity_bytes_) return;
  while (cached_bytes_ + size > capacity_bytes_ && !lru_.empty()) {
    auto victim = entries_.find(lru_.back());
    cached_bytes_ -= static_cast<int64_t>(victim->second.block->size());
    entries_.erase(victim);
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(block), lru_.begin()});
  cached_bytes_ += size;
}

int64_t BlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

int64_t BlockCache::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

}  // namespace flowloader::internal
