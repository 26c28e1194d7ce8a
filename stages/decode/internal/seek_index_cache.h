// seek_index_cache.h: files' Huffman seek indexes (huffman_scan.h SeekIndex), kept across
// decodes so that a later epoch's random crop of the same file starts decoding near the
// crop instead of at the top-left corner.
//
// Keyed by a 64-bit hash of the file's bytes (so a changed file is a new file, and no
// path is needed), bounded by a memory budget: once it is spent, files not yet indexed
// stay unindexed (nothing is evicted, so what a file costs to decode never flips back).
//
// Thread-safety: thread-safe (one mutex; each decode takes it twice, to copy its file's
// index in and to merge what it learned back, a few KB each way).
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_SEEK_INDEX_CACHE_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_SEEK_INDEX_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "stages/decode/internal/huffman_scan.h"

namespace flowloader::decode::internal {

class SeekIndexCache {
 public:
  explicit SeekIndexCache(size_t budget_bytes) : budget_(budget_bytes) {}

  // Load sets `index` to what is known of file `key` for this geometry (all unknown when
  // nothing is, or when the cached geometry differs).
  void Load(uint64_t key, int mcus_per_row, int mcu_rows, int step, SeekIndex* index);

  // Save merges the points `index` learned (index.grew) into file `key`'s entry; a new
  // entry is made only while the budget allows.
  void Save(uint64_t key, const SeekIndex& index);

  size_t bytes() const;
  size_t files() const;

 private:
  static size_t Cost(const SeekIndex& index);

  const size_t budget_;
  mutable std::mutex mu_;
  absl::flat_hash_map<uint64_t, SeekIndex> files_;  // Guarded by mu_.
  size_t bytes_ = 0;                                 // Guarded by mu_.
};

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_SEEK_INDEX_CACHE_H_
