// storage_env.cc: StorageEnv, routing paths by scheme (see storage_env.h).
#include "stages/reader/storage_env.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/core/log.h"
#include "stages/reader/s3_env.h"

namespace flowloader {
namespace {

// SumOver adds up one of HttpEnv's counts over `envs` (remote_envs(): every remote Env
// made so far), for the StorageEnv's totals of them.
template <typename T>
T SumOver(const std::map<std::string, const HttpEnv*>& envs, T (HttpEnv::*count)() const) {
  T total = 0;
  for (const auto& [family, env] : envs) total += (env->*count)();
  return total;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StorageEnv>> StorageEnv::Create(Env* base,
                                                               const StorageOptions& options) {
  std::unique_ptr<StorageEnv> env(
      new StorageEnv(base != nullptr ? base : Env::Default(), options));
  if (!options.cache.dir.empty()) {
    absl::StatusOr<std::unique_ptr<internal::DiskCache>> cache =
        internal::DiskCache::Create(options.cache);
    if (!cache.ok()) return cache.status();
    env->disk_cache_ = std::move(*cache);
  }
  // The http(s) Env is made now: its options are checked at Create, as they always were.
  absl::StatusOr<Env*> http = env->EnvFor("http://");
  if (!http.ok()) return http.status();
  return env;
}

absl::StatusOr<Env*> StorageEnv::EnvFor(const std::string& path) {
  const Scheme* scheme = SchemeOf(path);
  if (scheme == nullptr) return base_;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto cached = cached_.find(scheme->family); cached != cached_.end()) {
    return cached->second.get();
  }
  auto it = envs_.find(scheme->family);
  if (it != envs_.end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<HttpEnv>> made = scheme->create(base_, options_);
  if (!made.ok()) return made.status();
  if (cancelled_.load()) (*made)->Cancel();
  (*made)->set_storage_stats(stats_);
  HttpEnv* env = made->get();
  envs_.emplace(scheme->family, std::move(*made));
  // Where requests go and whose credentials sign them, said once (never the secret).
  if (const std::string line = DescribeEnv(*env); !line.empty()) LogInfo(line);
  if (disk_cache_ == nullptr) return env;
  // The cache's entries are named by store: an S3 endpoint (one key on two stores is two
  // objects), or the URL itself for http(s).
  const auto* s3 = dynamic_cast<const S3Env*>(env);
  auto front = std::make_unique<DiskCacheEnv>(
      env, disk_cache_.get(), s3 != nullptr ? absl::StrCat("s3 ", s3->endpoint()) : "http");
  DiskCacheEnv* cached = front.get();
  cached_.emplace(scheme->family, std::move(front));
  return cached;
}

absl::Status StorageEnv::ReadFile(const std::string& path, int64_t max_bytes,
                                  std::string* contents) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->ReadFile(path, max_bytes, contents);
}

absl::Status StorageEnv::ReadRange(const std::string& path, int64_t offset, int64_t length,
                                   std::string* contents) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->ReadRange(path, offset, length, contents);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> StorageEnv::NewRandomAccessFile(
    const std::string& path) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->NewRandomAccessFile(path);
}

absl::StatusOr<std::vector<DirEntry>> StorageEnv::ListDirectory(const std::string& path) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->ListDirectory(path);
}

absl::StatusOr<bool> StorageEnv::IsDirectory(const std::string& path) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->IsDirectory(path);
}

absl::StatusOr<std::string> StorageEnv::CanonicalPath(const std::string& path) {
  absl::StatusOr<Env*> env = EnvFor(path);
  if (!env.ok()) return env.status();
  return (*env)->CanonicalPath(path);
}

absl::StatusOr<std::unique_ptr<WritableFile>> StorageEnv::NewWritableFile(
    const std::string& path) {
  if (!IsRemotePath(path)) return base_->NewWritableFile(path);
  if (absl::StatusOr<Env*> env = EnvFor(path); !env.ok()) return env.status();
  return RemoteEnv(path)->NewWritableFile(path);
}

int64_t StorageEnv::AdmitShards(const std::vector<HttpEnv::ShardSize>& shards) {
  int64_t total = admitted_bytes();
  if (disk_cache_ != nullptr) return total;  // The disk cache keeps the blocks instead.
  for (const HttpEnv::ShardSize& shard : shards) {
    if (!IsRemotePath(shard.url)) continue;
    absl::StatusOr<Env*> env = EnvFor(shard.url);
    if (!env.ok()) continue;  // Its reads fail with that refusal; nothing to cache.
    HttpEnv* http = RemoteEnv(shard.url);
    if (http == nullptr) continue;
    if (total + shard.bytes > options_.http.cache_bytes) break;
    const int64_t before = http->admitted_bytes();
    total += http->AdmitShards({shard}) - before;
  }
  return total;
}

int64_t StorageEnv::SeedBlock(const std::string& url, int64_t offset, std::string bytes) {
  if (disk_cache_ != nullptr) return 0;  // Nothing is admitted (see AdmitShards).
  HttpEnv* http = RemoteEnv(url);
  return http == nullptr ? 0 : http->SeedBlock(url, offset, std::move(bytes));
}

bool StorageEnv::ClaimBlocks(const std::string& url, int64_t offset, int64_t length) const {
  if (disk_cache_ != nullptr) return false;  // Nothing is admitted (see AdmitShards).
  HttpEnv* http = RemoteEnv(url);
  return http != nullptr && http->ClaimBlocks(url, offset, length);
}

absl::StatusOr<bool> StorageEnv::FetchBlocks(const std::string& url, int64_t offset,
                                             int64_t length) const {
  if (disk_cache_ != nullptr) return false;
  HttpEnv* http = RemoteEnv(url);
  if (http == nullptr) return false;
  return http->FetchBlocks(url, offset, length);
}

bool StorageEnv::BlocksCached(const std::string& url, int64_t offset, int64_t length) const {
  if (disk_cache_ != nullptr) return false;
  HttpEnv* http = RemoteEnv(url);
  return http != nullptr && http->BlocksCached(url, offset, length);
}

absl::Status StorageEnv::ReadMember(const std::string& url, int64_t offset, int64_t length,
                                    std::string* contents) const {
  HttpEnv* http = disk_cache_ != nullptr ? nullptr : RemoteEnv(url);
  if (http == nullptr) return base_->ReadRange(url, offset, length, contents);
  return http->ReadMember(url, offset, length, contents);
}

int64_t StorageEnv::block_fetches() const {
  return SumOver(remote_envs(), &HttpEnv::block_fetches);
}

int64_t StorageEnv::member_reads() const {
  return SumOver(remote_envs(), &HttpEnv::member_reads);
}

bool StorageEnv::BlockCached(const std::string& url) const {
  if (disk_cache_ != nullptr) return false;
  HttpEnv* http = RemoteEnv(url);
  return http != nullptr && http->IsAdmitted(url);
}

HttpEnv* StorageEnv::RemoteEnv(const std::string& path) const {
  const Scheme* scheme = SchemeOf(path);
  if (scheme == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = envs_.find(scheme->family);
  return it == envs_.end() ? nullptr : it->second.get();
}

std::vector<HttpEnv::ShardSize> StorageEnv::admitted() const {
  std::vector<HttpEnv::ShardSize> out;
  for (const auto& [family, env] : remote_envs()) {
    for (HttpEnv::ShardSize& shard : env->admitted()) out.push_back(std::move(shard));
  }
  return out;
}

int64_t StorageEnv::admitted_bytes() const {
  return SumOver(remote_envs(), &HttpEnv::admitted_bytes);
}

int StorageEnv::admitted_shards() const {
  return SumOver(remote_envs(), &HttpEnv::admitted_shards);
}

void StorageEnv::Cancel() const {
  cancelled_.store(true);
  for (const auto& [family, env] : remote_envs()) env->Cancel();
}

std::map<std::string, const HttpEnv*> StorageEnv::remote_envs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, const HttpEnv*> out;
  for (const auto& [family, env] : envs_) out.emplace(family, env.get());
  return out;
}

int64_t StorageEnv::requests() const {
  return SumOver(remote_envs(), &HttpEnv::requests);
}

int64_t StorageEnv::retries() const {
  return SumOver(remote_envs(), &HttpEnv::retries);
}

std::vector<std::string> StorageEnv::Describe() const {
  std::vector<std::string> out;
  for (const auto& [family, env] : remote_envs()) {
    if (std::string line = DescribeEnv(*env); !line.empty()) out.push_back(std::move(line));
  }
  return out;
}

std::string StorageEnv::DescribeEnv(const HttpEnv& env) {
  const auto* s3 = dynamic_cast<const S3Env*>(&env);
  if (s3 == nullptr) return "";  // Plain HTTP has nothing to say beyond its URLs.
  return absl::StrCat("s3: endpoint ", s3->endpoint(), " (", s3->endpoint_source(),
                      "), region ", s3->region(), ", ", s3->path_style() ? "path" : "virtual",
                      "-style, credentials from ", s3->credential_source());
}

}  // namespace flowloader
