// disk_cache_env.h: an Env in front of a remote scheme's Env that keeps what it reads in
// the on-disk cache (cache_dir; internal/disk_cache.h), so that later epochs and later
// runs (and other ranks on the machine) read the disk instead of the store.
//
//   * ReadFile (an ImageFolder image, a list file): the whole object is one entry,
//     fetched once in this process however many readers miss it at once (read-ahead and
//     a worker asking for one image share one GET).
//   * ReadRange (a tar member) and NewRandomAccessFile (a shard's index): served from
//     aligned `block_bytes` blocks, each one entry, fetched with one ranged GET on a miss.
//     Indexing a shard thus caches its blocks, and the members read later come from the
//     disk: a warm run sends no GET at all for its shards. A block is fetched once in this
//     process however many readers want it at once.
//   * Listing (ListDirectory, IsDirectory) goes to the store every time.
//   * Errors of the store are not cached: a failed read is fetched again next time.
//
// StorageEnv puts one in front of each remote Env when cache_dir is set; the in-memory
// block cache (http_cache_mb) then admits nothing, as the disk cache (and the OS page
// cache above it) serves the same blocks.
//
// Thread-safety: thread-safe.
#ifndef FLOWLOADER_STAGES_READER_DISK_CACHE_ENV_H_
#define FLOWLOADER_STAGES_READER_DISK_CACHE_ENV_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "stages/reader/env.h"
#include "stages/reader/internal/disk_cache.h"

namespace flowloader {

class DiskCacheEnv : public ForwardingEnv {
 public:
  // `remote` reads the store; `cache` keeps the entries; `scope` names the store (an S3
  // endpoint: the same s3:// key on two stores is two objects). None is owned.
  DiskCacheEnv(Env* remote, internal::DiskCache* cache, std::string scope)
      : ForwardingEnv(remote), cache_(cache), scope_(std::move(scope)) {}

  absl::Status ReadFile(const std::string& path, int64_t max_bytes,
                        std::string* contents) override;
  absl::Status ReadRange(const std::string& path, int64_t offset, int64_t length,
                         std::string* contents) override;
  // Reads through ReadRange (so through the cached blocks).
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return Env::NewRandomAccessFile(path);
  }

 private:
  // Flight is one entry (an object or a block) being fetched, which other readers of it
  // wait for.
  struct Flight {
    bool done = false;
    int waiters = 0;  // Readers waiting: the bytes are copied for them only.
    absl::Status status;
    std::string bytes;
  };
  std::string Identity(const std::string& path) const;
  std::string BlockIdentity(const std::string& path, int64_t index) const;
  // FetchBlock reads block `index` of `path` from the store (once for all the readers
  // asking at the same time) and keeps it.
  absl::Status FetchBlock(const std::string& path, int64_t index, std::string* block);
  // Once runs `fetch` (which fills *out and keeps a good result in the cache) once for
  // every reader of `identity` asking at the same time: the first runs it, the others
  // wait and get its status and bytes (*joined true).
  absl::Status Once(const std::string& identity,
                    const std::function<absl::Status(std::string*)>& fetch, std::string* out,
                    bool* joined);

  internal::DiskCache* const cache_;
  const std::string scope_;
  std::mutex mu_;
  std::condition_variable fetched_;
  std::map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_DISK_CACHE_ENV_H_
