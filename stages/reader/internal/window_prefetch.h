// window_prefetch.h: a remote shard's index windows read ahead of the tar index's walk,
// and kept for the block cache.
//
// Indexing a tar shard over HTTP / S3 reads its headers in aligned windows (IndexTar's
// read_ahead_bytes), one after the other: with members much smaller than a window that
// is every byte of the shard, one round trip per window, in sequence. WindowPrefetcher
// serves those window reads and, each time one is asked for, starts the next `depth`
// windows on threads of their own, so a shard's round trips overlap instead of adding up
// (16 windows through a 20 ms link: ~0.35 s alone, ~0.1 s with 4 ahead).
//   * Only whole aligned windows are read ahead; any other read (a long name crossing a
//     window's end) goes to the file as it is. A window shorter than `window` is the end
//     of the file: nothing is started past it.
//   * Each window read (asked for, or read ahead and passed over because a large member
//     was skipped) is handed to `keep` once, in the order they are asked for or dropped,
//     so the caller may put the bytes in the block cache instead of fetching them again.
//   * Errors are the file's: a window whose read failed returns that error when asked for
//     (after the file's own retries), and is not kept.
//   * The destructor waits for the reads in flight (a cancelled Env ends them at once).
//
// Thread-safety: not thread-safe (one per shard, used by the indexing thread); the file's
// Read must be safe to call from several threads at once (HttpEnv's is).
#ifndef FLOWLOADER_STAGES_READER_INTERNAL_WINDOW_PREFETCH_H_
#define FLOWLOADER_STAGES_READER_INTERNAL_WINDOW_PREFETCH_H_

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "stages/reader/env.h"

namespace flowloader::internal {

class WindowPrefetcher {
 public:
  // Keep receives a window's offset and bytes (moved in).
  using Keep = std::function<void(int64_t offset, std::string bytes)>;

  // `file` must outlive this object; window > 0; depth >= 0 (0: no read-ahead); keep may
  // be empty.
  WindowPrefetcher(RandomAccessFile* file, int64_t window, int depth, Keep keep);
  ~WindowPrefetcher();
  WindowPrefetcher(const WindowPrefetcher&) = delete;
  WindowPrefetcher& operator=(const WindowPrefetcher&) = delete;

  // Read is RandomAccessFile::Read, from a window read ahead when there is one.
  absl::Status Read(int64_t offset, int64_t length, std::string* out);

 private:
  struct Window {
    absl::Status status;
    std::string bytes;
  };
  // Start begins reading the window at `offset` unless it is known already.
  void Start(int64_t offset);
  // Finish waits for the window at `it` and removes it, handing its bytes to keep_ (a
  // copy into *out first, when out is not null).
  absl::Status Finish(std::map<int64_t, std::future<Window>>::iterator it, std::string* out);

  RandomAccessFile* const file_;
  const int64_t window_;
  const int depth_;
  const Keep keep_;
  std::map<int64_t, std::future<Window>> pending_;  // By offset.
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_STAGES_READER_INTERNAL_WINDOW_PREFETCH_H_
