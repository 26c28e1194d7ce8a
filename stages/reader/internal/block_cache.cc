#include "stages/reader/internal/block_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace flowloader::internal {

namespace {

// OwnedBlock is a Block over `bytes` itself (a seeded index window, or a fetch into heap
// memory): the view is set once the string sits in the shared state, as a short string
// moves its bytes.
BlockCache::Block OwnedBlock(std::string bytes) {
  auto owner = std::make_shared<std::pair<std::string, absl::string_view>>(std::move(bytes),
                                                                            absl::string_view());
  owner->second = owner->first;
  return BlockCache::Block(owner, &owner->second);
}

}  // namespace

BlockCache::BlockCache(int64_t capacity_bytes, int64_t block_bytes)
    : capacity_bytes_(capacity_bytes),
      block_bytes_(block_bytes > 0 ? block_bytes : 1),
      pool_(std::make_shared<BlockPool>(static_cast<size_t>(block_bytes_))) {}

BlockCache::Block BlockCache::SlotBlock(char* slot, int64_t size) const {
  const absl::string_view bytes(slot, static_cast<size_t>(size));
  std::shared_ptr<BlockPool> pool = pool_;
  return Block(new absl::string_view(bytes), [pool, slot](const absl::string_view* view) {
    pool->Release(slot);
    delete view;
  });
}

absl::StatusOr<BlockCache::Block> BlockCache::FetchInto(const FetchFn& fetch) const {
  char* slot = pool_->Acquire();
  std::string heap;  // Only when the pool could map nothing.
  if (slot == nullptr) {
    heap.resize(static_cast<size_t>(block_bytes_));
    slot = heap.data();
  }
  absl::StatusOr<int64_t> size = fetch(slot);
  if (!size.ok() || *size < 0 || *size > block_bytes_) {
    if (heap.empty()) pool_->Release(slot);
    if (!size.ok()) return size.status();
    return absl::InternalError("block fetch returned a size outside the block");
  }
  if (!heap.empty()) {
    heap.resize(static_cast<size_t>(*size));
    return OwnedBlock(std::move(heap));
  }
  return SlotBlock(slot, *size);
}

void BlockCache::EndFetch(const Key& key, const Block* block) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(key);
  claimed_.erase(key);
  if (block != nullptr) InsertLocked(key, *block);
}

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
  absl::StatusOr<Block> block = FetchInto(fetch);
  EndFetch(key, block.ok() ? &*block : nullptr);
  promise.set_value(block);
  return block;
}

std::unique_ptr<BlockCache::Run> BlockCache::BeginRun(const std::string& url, int64_t first,
                                                     int64_t max_blocks, int64_t file_bytes) {
  std::unique_ptr<Run> run(new Run(this, url, first));
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t index = first; index - first < max_blocks && index * block_bytes_ < file_bytes;
       ++index) {
    const Key key(url, index);
    if (entries_.count(key) != 0 || in_flight_.count(key) != 0) break;
    run->blocks_.emplace_back();
    Run::Pending& p = run->blocks_.back();
    p.size = std::min(block_bytes_, file_bytes - index * block_bytes_);
    in_flight_.emplace(key, p.promise.get_future().share());
  }
  if (run->blocks_.empty()) return nullptr;
  ++fetches_;
  return run;
}

bool BlockCache::Put(const Key& key, std::string block) {
  const int64_t size = static_cast<int64_t>(block.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (size > capacity_bytes_ || entries_.count(key) != 0 || in_flight_.count(key) != 0) {
    return false;
  }
  InsertLocked(key, OwnedBlock(std::move(block)));
  return true;
}

bool BlockCache::Claim(const Key& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(key) != 0 || in_flight_.count(key) != 0) return false;
  return claimed_.insert(key).second;
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

bool BlockCache::Contains(const Key& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(key) != 0;
}

int64_t BlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_bytes_;
}

int64_t BlockCache::fetches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fetches_;
}

BlockCache::Run::~Run() {
  if (error_.ok()) {
    error_ = absl::InternalError(absl::StrCat(url_, ": the response ended before block ",
                                              first_ + static_cast<int64_t>(done_)));
  }
  for (size_t i = done_; i < blocks_.size(); ++i) {
    Pending& p = blocks_[i];
    if (p.slot != nullptr && p.heap.empty()) cache_->pool_->Release(p.slot);
    cache_->EndFetch({url_, first_ + static_cast<int64_t>(i)}, nullptr);
    p.promise.set_value(error_);
  }
}

char* BlockCache::Run::Buffer(Pending& p) {
  if (p.slot == nullptr) {
    p.slot = cache_->pool_->Acquire();
    if (p.slot == nullptr) {  // The pool could map nothing: heap memory, as Get does.
      p.heap.resize(static_cast<size_t>(p.size));
      p.slot = p.heap.data();
    }
  }
  return p.slot;
}

void BlockCache::Run::Write(const char* data, size_t n) {
  while (n > 0 && done_ < blocks_.size()) {
    Pending& p = blocks_[done_];
    const size_t take = std::min(n, static_cast<size_t>(p.size - p.written));
    std::memcpy(Buffer(p) + p.written, data, take);
    p.written += static_cast<int64_t>(take);
    data += take;
    n -= take;
    if (p.written < p.size) break;
    // Complete: cached now, so its readers need not wait for the rest of the run.
    Block block =
        p.heap.empty() ? cache_->SlotBlock(p.slot, p.size) : OwnedBlock(std::move(p.heap));
    cache_->EndFetch({url_, first_ + static_cast<int64_t>(done_)}, &block);
    p.promise.set_value(std::move(block));
    ++done_;
  }
}

void BlockCache::Run::Rewind() {
  if (done_ < blocks_.size()) blocks_[done_].written = 0;
}

int64_t BlockCache::Run::remaining_bytes() const {
  int64_t bytes = 0;
  for (size_t i = done_; i < blocks_.size(); ++i) bytes += blocks_[i].size;
  return bytes;
}

}  // namespace flowloader::internal
