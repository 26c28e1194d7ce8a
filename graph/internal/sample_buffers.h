// sample_buffers.h: per-thread spare working buffers the built-in stages lend to samples.
//
// Thread-safety: each thread has its own spare (thread_local); a sample's buffers belong
// to the thread running its stage.
#ifndef FLOWLOADER_GRAPH_INTERNAL_SAMPLE_BUFFERS_H_
#define FLOWLOADER_GRAPH_INTERNAL_SAMPLE_BUFFERS_H_

#include <cstddef>

namespace flowloader {
namespace graph_internal {

// Working buffers move between samples through one spare per thread: a sample borrows a
// buffer when a stage needs one and gives it back when the next stage is done with it.
// Samples in flight (prefetch_batches × batch_size of them) then hold no file bytes or
// decoded pixels between batches, and memory stays at about one buffer of each kind per
// worker instead of one per slot (measured: 138 MB of decoded pixels at 4 × 64 slots).
template <typename Buffer>
Buffer& ThreadSpare() {
  thread_local Buffer spare;
  return spare;
}

// Borrow swaps in the thread's spare when `buffer` holds no block of its own. An empty
// std::string is not capacity 0 (libstdc++ keeps 15 bytes inline), so "no block" is "no
// more than a new Buffer holds": with `== 0` the file bytes never borrowed, and every read
// (an s3:// GET, a file) grew a fresh block.
template <typename Buffer>
void Borrow(Buffer& buffer) {
  if (buffer.capacity() <= Buffer().capacity()) buffer.swap(ThreadSpare<Buffer>());
}

// kKeptSpareBytes is the largest spare a thread keeps: a buffer grown for one unusually
// large image (a whole decode of a photo of hundreds of megapixels, within what a worker
// may hold for one sample) is freed when the sample is done with it rather than kept by
// the thread for good.
inline constexpr size_t kKeptSpareBytes = size_t{64} << 20;

// GiveBack keeps `buffer`'s block as the thread's spare when it is larger than the spare
// and at most `max_kept` bytes, and frees it otherwise.
template <typename Buffer>
void GiveBack(Buffer& buffer, size_t max_kept = kKeptSpareBytes) {
  Buffer& spare = ThreadSpare<Buffer>();
  if (spare.capacity() < buffer.capacity() && buffer.capacity() <= max_kept) {
    spare.swap(buffer);
  }
  Buffer().swap(buffer);  // Frees whatever the sample still holds.
}

}  // namespace graph_internal
}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_SAMPLE_BUFFERS_H_
