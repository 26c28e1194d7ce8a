#include "stages/upload/host_memory.h"

#include <sys/mman.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace flowloader {
namespace {

// Buffers this large (every real batch) are mapped with their pages populated up front
// rather than malloc'ed and faulted in by the first writes: the first epoch then pays no
// ~28 000 page-fault traps for a 116 MB pool (64 × 224² × 3 floats × 3 buffers), which
// were 4% of its CPU (perf), and the memory budget is committed when the pipeline is
// created, not mid-epoch. Smaller buffers (tests) stay on the heap.
constexpr size_t kMapThreshold = size_t{1} << 20;

bool Mapped(size_t bytes) { return bytes >= kMapThreshold; }

}  // namespace

absl::StatusOr<BatchBuffer> HostMemory::Allocate(size_t bytes) {
  if (Mapped(bytes)) {
    // Page-aligned, hence aligned for any SIMD store into a slot.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat("cannot map ", bytes, " bytes"));
    }
    return BatchBuffer{p, nullptr, bytes};
  }
  // 64-byte alignment: a cache line, and enough for any SIMD store into a slot.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  return BatchBuffer{p, nullptr, bytes};
}

void HostMemory::Free(BatchBuffer& buffer) {
  if (buffer.host != nullptr && Mapped(buffer.bytes)) {
    munmap(buffer.host, buffer.bytes);
  } else {
    std::free(buffer.host);
  }
  buffer = BatchBuffer{};
}

}  // namespace flowloader
