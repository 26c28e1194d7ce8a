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
//   * Runs: consecutive blocks fetched with one request (BeginRun, the read stage's block
//     read-ahead). Its bytes are written in order, each into its block's slot, and each
//     block is cached, and its waiters woken, as soon as its last byte is in, so the
//     first block of a run is there as early as a fetch of it alone would be. A run's
//     blocks are "being fetched" for Get and Claim from BeginRun on; those it did not
//     complete (an error, a short response) are not cached, and their waiters get the
//     error (their next read fetches them again).
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
#include <vector>

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

  class Run;
  // BeginRun starts a fetch of the blocks of `url` from `first` on, with one request: as
  // many as are neither cached nor being fetched, consecutive, at most `max_blocks`, and
  // none at or past `file_bytes` (a block holds min(block_bytes, file_bytes - its
  // start)); claimed ones are taken over. Returns nullptr when `first` itself is cached
  // or being fetched (or past the end). The caller writes the run's bytes into it.
  std::unique_ptr<Run> BeginRun(const std::string& url, int64_t first, int64_t max_blocks,
                                int64_t file_bytes);

  // Contains reports whether `key` is cached (not merely being fetched or claimed).
  bool Contains(const Key& key) const;

  int64_t cached_bytes() const;
  int64_t fetches() const;  // How many times `fetch` ran, or a run began (one request).
  // pool_mapped_bytes is the memory the block pool has mapped (block_pool.h).
  int64_t pool_mapped_bytes() const { return pool_->mapped_bytes(); }

 private:
  struct Entry {
    Block block;
    std::list<Key>::iterator lru_position;
  };
  using Result = std::shared_future<absl::StatusOr<Block>>;

  void InsertLocked(const Key& key, Block block) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FetchInto fetches one block into a pool slot (heap memory when the pool has none).
  absl::StatusOr<Block> FetchInto(const FetchFn& fetch) const;
  // SlotBlock is a Block over `size` bytes of a pool slot, giving it back when dropped.
  Block SlotBlock(char* slot, int64_t size) const;
  // EndFetch ends the fetch of `key` (a Get's, or one block of a Run): no longer in
  // flight or claimed; cached when `block` is set.
  void EndFetch(const Key& key, const Block* block);

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

// BlockCache::Run is one request's consecutive blocks (BeginRun). Not thread-safe: the
// thread running the request writes into it; the cache's waiters are woken per block.
class BlockCache::Run {
 public:
  ~Run();  // Ends the blocks not completed: not cached, their waiters get the error.
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  int64_t first() const { return first_; }
  int64_t count() const { return static_cast<int64_t>(blocks_.size()); }
  // Write appends the next `n` bytes of the run (at most remaining_bytes()); each block
  // it completes is cached at once.
  void Write(const char* data, size_t n);
  // Rewind drops the bytes of the block being written (a failed attempt's): a retry asks
  // for the run from resume_index() on.
  void Rewind();
  int64_t resume_index() const { return first_ + static_cast<int64_t>(done_); }
  int64_t resume_offset() const { return resume_index() * cache_->block_bytes_; }
  int64_t remaining_bytes() const;  // Of the blocks not completed.
  // Fail sets the error the blocks not completed end with (default: the response ended
  // before them).
  void Fail(absl::Status status) { error_ = std::move(status); }

 private:
  friend class BlockCache;
  struct Pending {
    std::promise<absl::StatusOr<Block>> promise;
    int64_t size = 0;     // The block's bytes.
    char* slot = nullptr;  // Acquired at its first byte.
    std::string heap;      // Only when the pool could map nothing.
    int64_t written = 0;
  };
  Run(BlockCache* cache, std::string url, int64_t first)
      : cache_(cache), url_(std::move(url)), first_(first) {}
  char* Buffer(Pending& p);

  BlockCache* const cache_;
  const std::string url_;
  const int64_t first_;
  std::vector<Pending> blocks_;
  size_t done_ = 0;  // Blocks completed (cached), from the front.
  absl::Status error_;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_BLOCK_CACHE_H_
