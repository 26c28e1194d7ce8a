// disk_cache.h: the on-disk cache of remote data (spec keys cache_dir, cache_bytes): whole
// objects and fixed-size blocks of objects, kept across epochs and runs, bounded, and
// shared by every process on the machine that names the same directory (ranks of one job).
//
// Layout, under DIR/flowloader-cache/:
//   lock             flock(2)ed while an entry is added or removed; its first 8 bytes
//                    hold the bytes the entries take (the size accounting)
//   tmp/             entries being written
//   ab/ab12...ef     one entry: the payload, then a 32-byte trailer (magic, payload size,
//                    XXH3 of the payload, a second hash of the identity); the name is
//                    the XXH3 of the identity ("s3 http://host:7480\ns3://b/k#3")
//
//   * Never a torn entry: an entry is written whole under tmp/ and renamed into place
//     (atomic), under the lock, which also adds its size to the accounting.
//   * Never a damaged entry served: a hit checks the trailer (size, payload hash,
//     identity); a truncated, corrupted or foreign file is removed, counted (corrupt)
//     and read as a miss, so the caller fetches it again. A whole-object hit is checked
//     every time (it is read whole anyway); a block is checked on its first read in this
//     process, and later reads of the same file (same inode and size) read only the range.
//   * Bounded: when an addition brings the accounting over `bytes`, the entries are
//     scanned (which also corrects an accounting a killed process left behind) and the
//     least recently used (oldest mtime; a hit refreshes it) are removed down to 90% of
//     `bytes`. An entry larger than `bytes` is never kept.
//   * A failure of the disk (full, read-only) never fails a read: the entry is not kept,
//     counted (write_errors) and logged once.
//
// Objects are taken to be immutable while cached (as in MosaicML Streaming's and
// s3torchconnector's caches): a key rewritten in the bucket is served from the cache
// until evicted. Clear the directory after rewriting a dataset.
//
// Thread-safety: thread-safe. Several DiskCache objects (in one or several processes)
// may share one directory.
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_DISK_CACHE_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_DISK_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/reader/cache_options.h"

namespace flowloader::internal {

// DiskCacheStats are the counters of one DiskCache (this process's use of the directory).
struct DiskCacheStats {
  int64_t hits = 0;           // Reads served from the directory.
  int64_t misses = 0;         // Reads that found no valid entry (the caller fetched).
  int64_t hit_bytes = 0;      // Bytes those hits returned.
  int64_t written_bytes = 0;  // Payload bytes of the entries this process added.
  int64_t evicted = 0;        // Entries this process removed to stay within `bytes`.
  int64_t corrupt = 0;        // Damaged entries found (removed, read as misses).
  int64_t write_errors = 0;   // Entries that could not be written (disk full, ...).
};

class DiskCache {
 public:
  // Create makes DIR/flowloader-cache if needed and recounts what it holds (evicting down
  // to `bytes` if a smaller budget is given now); refused in one line naming cache_dir
  // when the directory cannot be made or written.
  static absl::StatusOr<std::unique_ptr<DiskCache>> Create(const DiskCacheOptions& options);
  ~DiskCache();

  // Get replaces *contents with the payload of `identity`'s entry and returns true, or
  // returns false (a miss) when there is no valid entry.
  bool Get(const std::string& identity, std::string* contents);
  // GetRange appends bytes [offset, offset + length) of `identity`'s payload (fewer where
  // it ends) to *contents and returns true, or returns false on a miss (*contents as it was).
  bool GetRange(const std::string& identity, int64_t offset, int64_t length,
                std::string* contents);
  // Put keeps `payload` as `identity`'s entry (a no-op when another process already
  // did, or when it is larger than the budget).
  void Put(const std::string& identity, absl::string_view payload);

  DiskCacheStats stats() const;
  // used_bytes is what the directory's entries take now, by the shared accounting.
  int64_t used_bytes() const;
  const DiskCacheOptions& options() const { return options_; }
  // root is DIR/flowloader-cache.
  const std::string& root() const { return root_; }

  // UsedBytesIn reads the accounting of the cache under `dir` without creating anything
  // (0 when there is none yet), for `flowloader plan`.
  static int64_t UsedBytesIn(const std::string& dir);
  // FreeBytesAt is the space free for an unprivileged writer on the file system holding
  // `dir` (or its nearest existing parent); -1 if unknown.
  static int64_t FreeBytesAt(const std::string& dir);

 private:
  DiskCache(const DiskCacheOptions& options, std::string root, int lock_fd)
      : options_(options), root_(std::move(root)), lock_fd_(lock_fd) {}

  // Entry is one validated open entry file.
  struct Entry;
  // OpenEntry opens `identity`'s entry and validates it (fully, unless `trust_known`
  // and this file was validated before); false on a miss (a damaged one removed).
  bool OpenEntry(const std::string& identity, bool trust_known, Entry* entry,
                 std::string* whole);
  // RemoveDamaged removes `path` if it is still the file (inode) found damaged.
  void RemoveDamaged(const std::string& path, uint64_t inode);
  // ForgetAndRemove drops a validated block entry found cut later, and removes it.
  void ForgetAndRemove(const std::string& identity, uint64_t inode);
  // Scan sums the entries' sizes and, when that is over `limit`, removes the least
  // recently used down to 90% of it; returns what remains. Under the lock.
  int64_t ScanAndEvict(int64_t limit);
  std::string EntryPath(const std::string& name) const;
  void CountWriteError(const std::string& what);

  const DiskCacheOptions options_;
  const std::string root_;
  const int lock_fd_;
  std::atomic<uint64_t> tmp_counter_{0};
  // Block entries validated in this process: name hash → inode (a replaced file is
  // validated again).
  std::mutex mu_;
  std::unordered_map<uint64_t, uint64_t> validated_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> hits_{0}, misses_{0}, hit_bytes_{0}, written_bytes_{0}, evicted_{0},
      corrupt_{0}, write_errors_{0};
  std::atomic<bool> write_error_logged_{false};
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_DISK_CACHE_H_
