// index_command.h: `flowloader index`: writes the index file (tar_index_file.h) beside
// tar shards that have none, such as shards written by webdataset's ShardWriter, GNU
// tar or another tool (`flowloader pack` writes its own), so that opening them costs two
// small reads instead of a walk over every header: over HTTP or S3 that walk reads
// practically the whole shard before the first sample.
//
// `data` names the shards as `run --data` does (a brace pattern, a directory or a list
// of .tar; local or s3://). Each shard is scanned once (IndexTar, the reader's own
// walk) and its SHARD.tar.idx written beside it (an s3:// object through S3Env); a
// shard whose index is already good (LoadTarIndexFile: used) is left alone unless
// `force`. A shard whose scan finds damage (cut short, a bad header) or a member it
// skips gets no index and is named: a run reads it as before, skipping what it skips.
// http(s):// shards cannot be written beside: their indexes go to `out` (a local
// directory, SHARD-NAME.tar.idx each) to be uploaded next to the shards.
//
// Thread-safety: IndexShardFiles runs on the calling thread (and `threads` of its own);
// call it from one thread.
#ifndef FLOWLOADER_RUNTIME_INDEX_COMMAND_H_
#define FLOWLOADER_RUNTIME_INDEX_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/schemes.h"

namespace flowloader {

struct IndexCommandOptions {
  // The shards: a brace pattern, directory or list file of .tar; local, http(s):// or
  // s3://. Required.
  std::string data;
  // Where the index files go: "" (default) beside each shard; a local directory instead
  // (required for http(s):// shards, which cannot be written).
  std::string out;
  // Rewrite indexes that are already good.
  bool force = false;
  // Shards scanned at a time (remote shards' requests overlap); >= 1.
  int threads = 8;
  // Endpoint, credentials and retries for s3:// and http(s):// shards (the run's keys).
  StorageOptions storage;
};

struct IndexCommandResult {
  int64_t shards = 0;   // Named by data.
  int64_t written = 0;  // Indexes written.
  int64_t current = 0;  // Left alone: their index was already good.
  int64_t members = 0;  // Members in the indexes written.
  // Shards left without an index, each "SHARD: why" (damage, skipped members, a failed
  // write).
  std::vector<std::string> failed;
  // Shards not tried: the command stops after 64 shards failed in a row before any was
  // indexed, or 1000 after one was (a pattern naming shards that do not exist).
  int64_t not_tried = 0;
};

// IndexShardFiles indexes the shards; an error only for what stops them all (no shard
// named, bad options).
absl::StatusOr<IndexCommandResult> IndexShardFiles(const IndexCommandOptions& options);

// IndexCommand runs IndexShardFiles and prints what it did: at most 5 failures a line
// each, then their count; nothing indexed is one line. The process exit code: 0, or 1
// when a shard failed, 2 on an error or when no shard could be indexed.
int IndexCommand(const IndexCommandOptions& options);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INDEX_COMMAND_H_
