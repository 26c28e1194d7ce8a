// storage_env.h: the Env a dataset reads through. Local paths go to the wrapped Env
// (the process's file system, or a test's FaultEnv); a remote path (http://, https://,
// s3://, schemes.h) goes to its scheme family's Env, made from the scheme table on the
// first path of that family and kept: so S3 credentials are resolved (and refused) only
// when an s3:// path is used, once.
//
// The remote Envs' block caches share one budget (http.cache_bytes): AdmitShards admits
// shards of any scheme in the order given while their sizes fit it.
//
// With cache.dir set, every remote Env is read through a DiskCacheEnv (disk_cache_env.h)
// sharing one DiskCache: whole objects and shard blocks are kept on disk across epochs
// and runs, and the in-memory block cache admits nothing.
//
// Thread-safety: thread-safe; remote Envs are made under a lock and never destroyed
// before the StorageEnv.
#ifndef FLOWLOADER_STAGES_READER_STORAGE_ENV_H_
#define FLOWLOADER_STAGES_READER_STORAGE_ENV_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "stages/reader/disk_cache_env.h"
#include "stages/reader/env.h"
#include "stages/reader/http_env.h"
#include "stages/reader/internal/disk_cache.h"
#include "stages/reader/schemes.h"
#include "stages/reader/storage_stats.h"

namespace flowloader {

class StorageEnv : public Env {
 public:
  // Create checks the HTTP options (a bad http_ca_file is refused here, whatever the
  // data) and makes the http(s) Env; `base` (nullptr: Env::Default()) serves local paths
  // and must outlive the StorageEnv.
  static absl::StatusOr<std::unique_ptr<StorageEnv>> Create(Env* base,
                                                            const StorageOptions& options);

  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override;
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  absl::StatusOr<std::vector<DirEntry>> ListDirectory(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::StatusOr<std::string> CanonicalPath(const std::string& path) override;
  // NewWritableFile writes a local file, or uploads an s3:// object (never through the
  // disk cache).
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;

  // EnvFor is the Env that reads `path`: the base for a local path, else its scheme's
  // (made now if it is the first of its family; its Create's refusal otherwise), behind
  // the disk cache when there is one.
  absl::StatusOr<Env*> EnvFor(const std::string& path);

  // AdmitShards admits remote `shards` to their Envs' block caches in the order given,
  // while the admitted total fits http.cache_bytes (stops at the first that does not);
  // returns the admitted bytes. See HttpEnv::AdmitShards. Nothing with a disk cache.
  int64_t AdmitShards(const std::vector<HttpEnv::ShardSize>& shards);
  // SeedBlock hands bytes read at `offset` of the remote shard `url` to its Env's block
  // cache (HttpEnv::SeedBlock); returns the bytes kept (0 with a disk cache).
  int64_t SeedBlock(const std::string& url, int64_t offset, std::string bytes);
  // ClaimBlocks and FetchBlocks read ahead by blocks for a remote shard admitted to its
  // Env's block cache (HttpEnv::ClaimBlocks, FetchBlocks); ClaimBlocks is false for
  // anything else (a local path, a shard not admitted, a disk cache).
  // Const (as Cancel) so the read stage may call them through a const Dataset.
  bool ClaimBlocks(const std::string& url, int64_t offset, int64_t length) const;
  // FetchBlocks returns whether it sent a request (false: the blocks were cached, or
  // being fetched by another run, or not admitted).
  absl::StatusOr<bool> FetchBlocks(const std::string& url, int64_t offset,
                                   int64_t length) const;
  // BlocksCached and ReadMember are HttpEnv's for a remote shard admitted to its Env's
  // block cache (false, and a plain ReadRange, for anything else).
  bool BlocksCached(const std::string& url, int64_t offset, int64_t length) const;
  absl::Status ReadMember(const std::string& url, int64_t offset, int64_t length,
                          std::string* contents) const;
  // block_fetches and member_reads sum up every remote Env's (HttpEnv's).
  int64_t block_fetches() const;
  int64_t member_reads() const;
  // BlockCached reports whether the reads of `url` are served by a block cache (a
  // remote shard admitted to it).
  bool BlockCached(const std::string& url) const;
  std::vector<HttpEnv::ShardSize> admitted() const;
  int64_t admitted_bytes() const;
  int admitted_shards() const;
  int64_t cache_budget_bytes() const { return options_.http.cache_bytes; }
  // options are the settings the StorageEnv was made with (the read stage's read_ahead).
  const StorageOptions& options() const { return options_; }

  // Cancel cancels every remote read in flight and later (HttpEnv::Cancel), including
  // those of Envs made after the call. Const so a const Dataset can cancel on Stop.
  void Cancel() const;

  // disk_cache is the on-disk cache (cache.dir), or nullptr when there is none.
  const internal::DiskCache* disk_cache() const { return disk_cache_.get(); }

  // remote_envs are the remote Envs made so far, by family ("http", "s3").
  std::map<std::string, const HttpEnv*> remote_envs() const;
  // requests and retries sum up every remote Env's (HttpEnv::requests, retries).
  int64_t requests() const;
  int64_t retries() const;
  // storage_stats are every remote Env's requests, bytes, retries, errors by code and
  // latency, by scheme (storage_stats.h); shared so a PipelineStats may hold them too.
  std::shared_ptr<const StorageStats> storage_stats() const { return stats_; }
  // Describe says, per remote Env made, where it sends requests and where its credentials
  // came from ("s3: endpoint http://127.0.0.1:7480 (s3_endpoint), credentials from
  // environment (AWS_ACCESS_KEY_ID)"), never a secret; empty when there is none.
  std::vector<std::string> Describe() const;

 private:
  // RemoteEnv is the scheme Env made for `path`'s family (not the disk cache in front of
  // it), or nullptr.
  HttpEnv* RemoteEnv(const std::string& path) const;
  // DescribeEnv is Describe's line for one remote Env ("" for plain HTTP).
  static std::string DescribeEnv(const HttpEnv& env);
  StorageEnv(Env* base, const StorageOptions& options) : base_(base), options_(options) {}

  Env* const base_;
  const StorageOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<HttpEnv>> envs_ ABSL_GUARDED_BY(mu_);  // By family.
  std::unique_ptr<internal::DiskCache> disk_cache_;  // Set at Create; null without cache.dir.
  // The disk cache's Env in front of each of envs_, by family (with a disk cache only).
  std::map<std::string, std::unique_ptr<DiskCacheEnv>> cached_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<bool> cancelled_{false};
  // Counted into by every remote Env made (HttpEnv::set_storage_stats).
  const std::shared_ptr<StorageStats> stats_ = std::make_shared<StorageStats>();
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_STORAGE_ENV_H_
