// shard_index_load.h: a tar shard's member table from the index beside it
// (tar_index_file.h) instead of a walk over its headers, when the index matches the shard.
//
// Opening a remote shard without an index reads practically all of it (its headers are
// spread through it); with one, opening costs two small reads: the index, and the shard's
// tail (`tail` to its end, a few KiB), which must be exactly the index's last member
// followed by the end of the archive at `bytes`. That catches a shard rewritten, grown,
// cut or replaced after its index was written (it would not end where and how the index
// says), and an index copied beside the wrong shard. What the index gives is what
// IndexTar would: the same members, offsets, sizes and wanted payloads (a wanted payload
// the index does not hold is read from the shard), so the samples and every checksum are
// the same either way.
//
// Outcomes: kUsed; kMissing (no index, or one that cannot be read: scanned silently, as
// shards without an index always were); kStale and kDamaged (scanned, and the caller
// names the shard and `why`).
//
// Thread-safety: a pure function of what `env` and `shard` return.
#ifndef FLOWLOADER_STAGES_READER_SHARD_INDEX_LOAD_H_
#define FLOWLOADER_STAGES_READER_SHARD_INDEX_LOAD_H_

#include <string>

#include "stages/reader/env.h"
#include "stages/reader/tar_index.h"

namespace flowloader {

enum class IndexOutcome { kUsed, kMissing, kStale, kDamaged };

// IndexOutcomeName: "used", "missing", "stale", "damaged".
const char* IndexOutcomeName(IndexOutcome outcome);

struct LoadedIndex {
  IndexOutcome outcome = IndexOutcome::kMissing;
  TarIndex index;   // With kUsed.
  std::string why;  // With kStale / kDamaged: what did not match.
};

// LoadTarIndexFile reads the index of the shard at `location` (TarIndexFileName) through
// `env`, checks it against `shard` (that shard, opened) and returns its members as
// IndexTar(…, options) would.
LoadedIndex LoadTarIndexFile(Env* env, RandomAccessFile* shard, const std::string& location,
                             const TarIndexOptions& options);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_SHARD_INDEX_LOAD_H_
