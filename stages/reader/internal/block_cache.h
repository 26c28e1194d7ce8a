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
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"

namespace flowloader::internal {

class BlockCache {
 public:
  using Block = std::shared_ptr<const std::string>;
  using Key = std::pair<std::string, int64_t>;  // (url, block index)
  // Fetch reads one block; it runs on the calling thread, without the cache's lock.
  using FetchFn = std::function<absl::StatusOr<std::string>()>;

  explicit BlockCache(int64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

  // Get returns the block `key`, from the cache, from a fetch in flight, or by running
  // `fetch` (and keeping its result if it succeeded and fits).
  absl::StatusOr<Block> Get(const Key& key, const FetchFn& fetch);

  // Put keeps `block` as `key` unless the cache holds it (or a fetch of it is in flight)
  // already: bytes read another way (a shard's index windows), so no fetch is needed.
  // Returns whether it was kept (false also when it is larger than the capacity).
  bool Put(const Key& key, std::string block);

  int64_t cached_bytes() const;
  int64_t fetches() const;  // How many times `fetch` ran.

 private:
  struct Entry {
    Block block;
    std::list<Key>::iterator lru_position;
  };
  using Result = std::shared_future<absl::StatusOr<Block>>;

  void InsertLocked(const Key& key, Block block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t capacity_bytes_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<Key> lru_ ABSL_GUARDED_BY(mu_);  // Front: most recently used.
  std::map<Key, Result> in_flight_ ABSL_GUARDED_BY(mu_);
  int64_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t fetches_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_CACHE_H_
