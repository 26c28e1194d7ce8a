// disk_cache_env.cc: DiskCacheEnv, remote reads through the disk cache (see
// disk_cache_env.h).
#include "stages/reader/disk_cache_env.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace flowloader {

std::string DiskCacheEnv::Identity(const std::string& path) const {
  return absl::StrCat(scope_, "\n", path);
}

std::string DiskCacheEnv::BlockIdentity(const std::string& path, int64_t index) const {
  return absl::StrCat(scope_, "\n", path, "\nblock ", index, " of ",
                      cache_->options().block_bytes);
}

absl::Status DiskCacheEnv::ReadFile(const std::string& path, int64_t max_bytes,
                                    std::string* contents) {
  const std::string identity = Identity(path);
  if (cache_->Get(identity, contents)) {
    const auto size = static_cast<int64_t>(contents->size());
    return size > max_bytes ? TooLarge(path, size, max_bytes) : absl::OkStatus();
  }
  auto fetch = [&](std::string* out) {
    absl::Status status = base()->ReadFile(path, max_bytes, out);
    if (status.ok()) cache_->Put(identity, *out);
    return status;
  };
  bool joined = false;
  absl::Status status = Once(identity, fetch, contents, &joined);
  if (!joined) return status;
  // Another reader's fetch, under its own max_bytes: hold this reader to its own.
  if (status.code() == absl::StatusCode::kResourceExhausted) return fetch(contents);
  const auto size = static_cast<int64_t>(contents->size());
  if (status.ok() && size > max_bytes) return TooLarge(path, size, max_bytes);
  return status;
}

absl::Status DiskCacheEnv::ReadRange(const std::string& path, int64_t offset, int64_t length,
                                     std::string* contents) {
  if (offset < 0 || length < 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": bad range ", offset, "+", length));
  }
  contents->clear();
  const int64_t block_bytes = cache_->options().block_bytes;
  const int64_t end = offset + length;
  for (int64_t at = offset; at < end;) {
    const int64_t index = at / block_bytes;
    const int64_t in_block = at - index * block_bytes;
    const int64_t want = std::min(end - at, block_bytes - in_block);
    const size_t before = contents->size();
    if (!cache_->GetRange(BlockIdentity(path, index), in_block, want, contents)) {
      std::string block;
      if (absl::Status s = FetchBlock(path, index, &block); !s.ok()) return s;
      const auto first = static_cast<size_t>(std::min<int64_t>(in_block, block.size()));
      contents->append(block, first, static_cast<size_t>(want));
    }
    // A block shorter than asked for is the object's last: the range ends there.
    if (static_cast<int64_t>(contents->size() - before) < want) break;
    at += want;
  }
  return absl::OkStatus();
}

absl::Status DiskCacheEnv::FetchBlock(const std::string& path, int64_t index,
                                      std::string* block) {
  const std::string identity = BlockIdentity(path, index);
  const int64_t block_bytes = cache_->options().block_bytes;
  bool joined = false;
  return Once(
      identity,
      [&](std::string* out) {
        absl::Status status = base()->ReadRange(path, index * block_bytes, block_bytes, out);
        if (status.ok() && !out->empty()) cache_->Put(identity, *out);
        return status;
      },
      block, &joined);
}

absl::Status DiskCacheEnv::Once(const std::string& identity,
                                const std::function<absl::Status(std::string*)>& fetch,
                                std::string* out, bool* joined) {
  std::shared_ptr<Flight> flight;
  {
    std::unique_lock<std::mutex> lock(mu_);
    std::shared_ptr<Flight>& slot = flights_[identity];
    *joined = slot != nullptr;
    if (slot == nullptr) slot = std::make_shared<Flight>();
    flight = slot;
    if (*joined) {
      ++flight->waiters;
      fetched_.wait(lock, [&flight] { return flight->done; });
      *out = flight->bytes;
      return flight->status;
    }
  }
  absl::Status status = fetch(out);
  {
    std::lock_guard<std::mutex> lock(mu_);
    flight->status = status;
    if (flight->waiters > 0) flight->bytes = *out;
    flight->done = true;
    flights_.erase(identity);
  }
  fetched_.notify_all();
  return status;
}

}  // namespace flowloader
