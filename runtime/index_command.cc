// index_command.cc: `flowloader index` (see index_command.h).
#include "runtime/index_command.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/one_line.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env_util.h"
#include "stages/reader/shard_index_load.h"
#include "stages/reader/storage_env.h"
#include "stages/reader/tar_index.h"
#include "stages/reader/tar_index_file.h"

namespace flowloader {
namespace {

// Remote shards are scanned in windows of this size (the block cache's block): one
// request serves the headers of many small members.
constexpr int64_t kRemoteWindowBytes = int64_t{1} << 20;

// Shards failing one after another stop the command (the rest are not tried): this many
// before any shard was indexed (a pattern naming shards that do not exist, missing
// credentials: a million-shard brace range took seconds to minutes, one line a shard),
// and kMaxFailuresInARow after one was (a range that runs past the shards that exist).
constexpr int64_t kMaxFailuresBeforeAny = 64;
constexpr int64_t kMaxFailuresInARow = 1000;
// Failures named one a line; the rest are counted on one more.
constexpr size_t kFailuresShown = 5;

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsHttp(const std::string& path) {
  return path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0;
}

// ShardBytes is the shard's size: `end` (where its end-of-archive blocks start) plus
// whatever follows (those blocks and a tar writer's padding to its record size).
absl::StatusOr<int64_t> ShardBytes(RandomAccessFile* file, int64_t end) {
  int64_t bytes = end;
  std::string chunk;
  while (true) {
    if (absl::Status s = file->Read(bytes, kRemoteWindowBytes, &chunk); !s.ok()) return s;
    bytes += static_cast<int64_t>(chunk.size());
    if (static_cast<int64_t>(chunk.size()) < kRemoteWindowBytes) return bytes;
  }
}

// ScanToIndexFile walks the shard's headers and returns its index file: small members
// that are not images keep their bytes, as pack's indexes do (TarWriter::Add).
absl::StatusOr<TarIndexFile> ScanToIndexFile(RandomAccessFile* file, const std::string& shard) {
  TarIndexOptions o;
  o.read_ahead_bytes = IsRemotePath(shard) ? kRemoteWindowBytes : 0;
  o.want_payload = [](const std::string& name) { return !HasImageExtension(name); };
  o.inline_max_bytes = kIndexPayloadBytes;
  const TarIndex scanned = IndexTar(
      [file](int64_t offset, int64_t length, std::string* out) {
        return file->Read(offset, length, out);
      },
      shard, o);
  if (!scanned.damage.ok()) return scanned.damage;
  if (!scanned.skipped.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        scanned.skipped.size(), " member(s) a run skips (", scanned.skipped[0].message(),
        "): left to the scan"));
  }
  if (scanned.members.empty()) return absl::FailedPreconditionError("no member to index");
  TarIndexFile index;
  index.end = scanned.indexed_bytes;
  index.tail = scanned.last_member_record;
  absl::StatusOr<int64_t> bytes = ShardBytes(file, index.end);
  if (!bytes.ok()) return bytes.status();
  index.bytes = *bytes;
  index.members.reserve(scanned.members.size());
  for (const TarMember& m : scanned.members) {
    IndexedMember member;
    member.name = m.name;
    member.offset = m.offset;
    member.size = m.size;
    member.has_payload = m.size <= kIndexPayloadBytes && !HasImageExtension(m.name);
    if (member.has_payload) member.payload = m.inline_payload;
    index.members.push_back(std::move(member));
  }
  return index;
}

// Outcome of one shard.
struct ShardOutcome {
  bool written = false;
  bool current = false;
  int64_t members = 0;
  std::string failure;  // Why it has no index; empty when written or current.
};

ShardOutcome IndexOneShard(StorageEnv* env, const std::string& shard,
                           const IndexCommandOptions& o) {
  ShardOutcome out;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> file = env->NewRandomAccessFile(shard);
  if (!file.ok()) {
    out.failure = std::string(file.status().message());
    return out;
  }
  if (!o.force && o.out.empty() &&
      LoadTarIndexFile(env, file->get(), shard, TarIndexOptions()).outcome == IndexOutcome::kUsed) {
    out.current = true;
    return out;
  }
  absl::StatusOr<TarIndexFile> index = ScanToIndexFile(file->get(), shard);
  if (!index.ok()) {
    out.failure = std::string(index.status().message());
    return out;
  }
  const std::string path = o.out.empty() ? TarIndexFileName(shard)
                                         : absl::StrCat(o.out, "/", BaseName(TarIndexFileName(shard)));
  if (absl::Status s = WriteWholeFile(env, path, FormatTarIndexFile(*index)); !s.ok()) {
    out.failure = absl::StrCat("writing ", path, ": ", s.message());
    return out;
  }
  // Beside the shard, the index must be one a run uses (the reader's own check).
  if (o.out.empty()) {
    const LoadedIndex check = LoadTarIndexFile(env, file->get(), shard, TarIndexOptions());
    if (check.outcome != IndexOutcome::kUsed) {
      out.failure = absl::StrCat("the index written to ", path, " does not check (",
                                 IndexOutcomeName(check.outcome), ": ", check.why, ")");
      return out;
    }
  }
  out.written = true;
  out.members = static_cast<int64_t>(index->members.size());
  return out;
}

}  // namespace

absl::StatusOr<IndexCommandResult> IndexShardFiles(const IndexCommandOptions& options) {
  IndexCommandOptions o = options;
  if (o.data.empty()) return absl::InvalidArgumentError("index needs --data (the shards)");
  if (o.threads < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--threads must be >= 1, got ", o.threads));
  }
  o.out = o.out.empty() ? "" : StripTrailingSlashes(o.out);
  if (!o.out.empty() && IsRemotePath(o.out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out ", o.out, " must be a local directory (without --out the indexes go beside "
        "the shards, s3:// ones included)"));
  }
  absl::StatusOr<std::unique_ptr<StorageEnv>> storage = StorageEnv::Create(nullptr, o.storage);
  if (!storage.ok()) return storage.status();
  StorageEnv* env = storage->get();
  const std::string path = StripTrailingSlashes(o.data);
  const bool pattern = !IsListablePath(path) || path.find('{') != std::string::npos;
  absl::StatusOr<bool> is_dir = pattern ? false : env->IsDirectory(path);
  if (!is_dir.ok()) {
    return absl::NotFoundError(absl::StrCat("--data ", path, ": ", is_dir.status().message()));
  }
  absl::StatusOr<std::vector<std::string>> shards = Dataset::ShardPaths(env, path, *is_dir);
  if (!shards.ok()) return shards.status();
  if (shards->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data ", path, " names no .tar shard (a brace pattern, a directory or a list of .tar)"));
  }
  if (o.out.empty() && IsHttp(shards->front())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http(s):// shards (", shards->front(), ") cannot be written beside: give "
        "--out=DIR, then upload DIR's .tar.idx files next to the shards"));
  }
  if (!o.out.empty()) {
    absl::StatusOr<bool> out_dir = Env::Default()->IsDirectory(o.out);
    if (!out_dir.ok() || !*out_dir) {
      return absl::InvalidArgumentError(absl::StrCat("--out ", o.out, " is not a directory"));
    }
  }

  std::vector<ShardOutcome> outcomes(shards->size());
  std::vector<bool> tried(shards->size(), false);
  std::atomic<size_t> next{0};
  std::mutex mu;
  int64_t indexed = 0;         // Guarded by mu: shards written or already current.
  int64_t failed_in_a_row = 0;  // Guarded by mu: failures since the last indexed shard.
  bool stop = false;           // Guarded by mu.
  auto work = [&] {
    for (size_t i = next++; i < shards->size(); i = next++) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop) return;
        tried[i] = true;
      }
      ShardOutcome outcome = IndexOneShard(env, (*shards)[i], o);
      std::lock_guard<std::mutex> lock(mu);
      if (outcome.failure.empty()) {
        ++indexed;
        failed_in_a_row = 0;
      } else if (++failed_in_a_row >= (indexed == 0 ? kMaxFailuresBeforeAny
                                                      : kMaxFailuresInARow)) {
        stop = true;
      }
      outcomes[i] = std::move(outcome);
    }
  };
  std::vector<std::thread> pool;
  const size_t threads = std::min<size_t>(static_cast<size_t>(o.threads), shards->size());
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  IndexCommandResult result;
  result.shards = static_cast<int64_t>(shards->size());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (!tried[i]) {
      ++result.not_tried;
      continue;
    }
    result.written += outcomes[i].written ? 1 : 0;
    result.current += outcomes[i].current ? 1 : 0;
    result.members += outcomes[i].members;
    if (!outcomes[i].failure.empty()) {
      result.failed.push_back(absl::StrCat((*shards)[i], ": ", outcomes[i].failure));
    }
  }
  return result;
}

int IndexCommand(const IndexCommandOptions& options) {
  absl::StatusOr<IndexCommandResult> r = IndexShardFiles(options);
  if (!r.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(r.status().message()).c_str());
    return 2;
  }
  const std::string stopped =
      r->not_tried == 0
          ? std::string()
          : absl::StrCat("; stopped after ",
                         r->written + r->current == 0 ? kMaxFailuresBeforeAny
                                                      : kMaxFailuresInARow,
                         " failed in a row, ", r->not_tried, " not tried");
  if (r->written == 0 && r->current == 0 && !r->failed.empty()) {
    // Nothing indexed: one line, the first shard's failure for all.
    std::fprintf(stderr, "flowloader: %s\n",
                 OneLine(absl::StrCat("no index written: ", r->failed.size(), " of ", r->shards,
                                      " shard(s) of --data ", options.data, " failed",
                                      stopped, " (the first: ", r->failed[0],
                                      "); check --data names existing .tar shards"))
                     .c_str());
    return 2;
  }
  for (size_t i = 0; i < r->failed.size() && i < kFailuresShown; ++i) {
    std::fprintf(stderr, "flowloader: no index for %s\n", OneLine(r->failed[i]).c_str());
  }
  if (r->failed.size() > kFailuresShown || r->not_tried > 0) {
    std::fprintf(stderr, "flowloader: %s\n",
                 absl::StrCat("and ", r->failed.size() - std::min(r->failed.size(), kFailuresShown),
                              " more shard(s) without an index", stopped)
                     .c_str());
  }
  std::printf("%lld shard(s): %lld index(es) written %s (%lld members), %lld already indexed, "
              "%zu left without one%s\n",
              static_cast<long long>(r->shards), static_cast<long long>(r->written),  // NOLINT
              options.out.empty() ? "beside them" : ("to " + OneLine(options.out)).c_str(),
              static_cast<long long>(r->members), static_cast<long long>(r->current),  // NOLINT
              r->failed.size(),
              r->not_tried > 0 ? absl::StrCat(", ", r->not_tried, " not tried").c_str() : "");
  return r->failed.empty() && r->not_tried == 0 ? 0 : 1;
}

}  // namespace flowloader
