// window_prefetch.cc: WindowPrefetcher (see window_prefetch.h).
#include "stages/reader/internal/window_prefetch.h"

#include <utility>

namespace flowloader::internal {

WindowPrefetcher::WindowPrefetcher(RandomAccessFile* file, int64_t window, int depth, Keep keep)
    : file_(file), window_(window), depth_(depth), keep_(std::move(keep)) {}

WindowPrefetcher::~WindowPrefetcher() {
  // Windows read ahead and never asked for (the archive ended before them): their bytes
  // are still the file's, worth keeping.
  while (!pending_.empty()) Finish(pending_.begin(), nullptr).IgnoreError();
}

void WindowPrefetcher::Start(int64_t offset) {
  if (pending_.count(offset) != 0) return;
  pending_.emplace(offset, std::async(std::launch::async, [file = file_, offset,
                                                           length = window_] {
                     Window w;
                     w.status = file->Read(offset, length, &w.bytes);
                     return w;
                   }));
}

absl::Status WindowPrefetcher::Finish(std::map<int64_t, std::future<Window>>::iterator it,
                                      std::string* out) {
  const int64_t offset = it->first;
  Window w = it->second.get();
  pending_.erase(it);
  if (!w.status.ok()) return w.status;
  if (out != nullptr) *out = w.bytes;
  if (keep_) keep_(offset, std::move(w.bytes));
  return absl::OkStatus();
}

absl::Status WindowPrefetcher::Read(int64_t offset, int64_t length, std::string* out) {
  if (offset % window_ != 0 || length != window_) return file_->Read(offset, length, out);
  // Windows before this one were passed over (a member larger than a window): done with.
  while (!pending_.empty() && pending_.begin()->first < offset) {
    Finish(pending_.begin(), nullptr).IgnoreError();
  }
  Start(offset);
  absl::Status status = Finish(pending_.find(offset), out);
  // A whole window: the file goes on, so its next windows are read while this is parsed.
  if (status.ok() && static_cast<int64_t>(out->size()) == window_) {
    for (int i = 1; i <= depth_; ++i) Start(offset + i * window_);
  }
  return status;
}

}  // namespace flowloader::internal
