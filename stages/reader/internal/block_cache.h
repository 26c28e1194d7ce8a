// block_cache.h: a bounded, thread-safe LRU cache of fixed-size blocks of remote files,
// keyed by (url, block index), for HttpEnv's member reads.
//
// Why: a tar member over HTTP costs one Range request (curl + server CPU on the same
// cores as decode); disk reads after the first epoch come from the OS page cache. Blocks
// fetched once and kept here make later epochs over HTTP cost a memcpy, like the disk.
//
//   * Bounded: the cached bytes stay <= capacity_bytes; the least recently used blocks
//     are evicted first. A block larger than the capacity is never kept.
//   * One fetch per block: a thread asking for a block another thread is fetching waits
//     for that fetch instead of sending a second request.
//   * Errors are not cached: a failed fetch is reported to its waiters and the next read
//     of that block fetches it again.
//   * Fetched blocks live in a BlockPool's huge-page slots (block_pool.h): a fetch writes
//     the block straight into its slot (no string grown, no copy after), and a slot comes
//     back to the pool when its block is evicted and no reader holds it any more.
//
// Thread-safety: thread-safe; `fetch` runs without the lock held.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_CACHE_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_CACHE_H_

#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/reader/internal/block_pool.h"

namespace flowloader::internal {

class BlockCache {
 public:
  // Block is a cached block's bytes; holding it keeps them (its pool slot) alive.
  using Block = std::shared_ptr<const absl::string_view>;
  using Key = std::pair<std::string, int64_t>;  // (url, block index)
  // Fetch reads one block into `into` (room for block_bytes) and returns its size (at
  // most block_bytes); it runs on the calling thread, without the cache's lock.
  using FetchFn = std::function<absl::StatusOr<int64_t>(char* into)>;

  // `block_bytes` > 0: the most bytes a block holds (the pool's slot size).
  BlockCache(int64_t capacity_bytes, int64_t block_bytes);

  // Get returns the block `key`, from the cache, from a fetch in flight, or by running
  // `fetch` (and keeping its result if it succeeded and fits).
  absl::StatusOr<Block> Get(const Key& key, const FetchFn& fetch);

  // Put keeps `block` as `key` unless the cache holds it (or a fetch of it is in flight)
  // already: bytes read another way (a shard's index windows), so no fetch is needed.
  // Returns whether it was kept (false also when it is larger than the capacity).
  bool Put(const Key& key, std::string block);

  // Claim marks `key` as about to be fetched by the caller (a read-ahead of the block)
  // and returns true, unless it is cached, being fetched or claimed already (false: no
  // one need fetch it ahead). A claim ends when the block's fetch ends, whoever runs it;
  // an unfetched claim only stops later Claims, never a read.
  bool Claim(const Key& key);

  // Contains reports whether `key` is cached (not merely being fetched or claimed).
  bool Contains(const Key& key) const;

  int64_t cached_bytes() const;
  int64_t fetches() const;  // How many times `fetch` ran.
  // pool_mapped_bytes is the memory the block pool has mapped (block_pool.h).
  int64_t pool_mapped_bytes() const { return pool_->mapped_bytes(); }

 private:
  struct Entry {
    Block block;
    std::list<Key>::iterator lru_position;
  };
  using Result = std::shared_future<absl::StatusOr<Block>>;

  void InsertLocked(const Key& key, Block block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Run fetches `key` into a pool slot (heap memory when the pool has none).
  absl::StatusOr<Block> Run(const FetchFn& fetch) const;

  const int64_t capacity_bytes_;
  const int64_t block_bytes_;
  // Shared with every Block's deleter, so a block held past the cache still has its pool.
  const std::shared_ptr<BlockPool> pool_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<Key> lru_ ABSL_GUARDED_BY(mu_);  // Front: most recently used.
  std::map<Key, Result> in_flight_ ABSL_GUARDED_BY(mu_);
  std::set<Key> claimed_ ABSL_GUARDED_BY(mu_);
  int64_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t fetches_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_CACHE_H_
