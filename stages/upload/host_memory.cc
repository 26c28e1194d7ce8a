#include "stages/upload/host_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
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

// Mapped buffers are also backed by transparent huge pages (2 MiB) where the kernel
// allows them (THP "always" or "madvise"): one page-table entry per 2 MiB instead of 512.
// Measured on the 2-core VMs here, where the hypervisor builds its own (shadow) entry on
// the first touch of every page, populated or not: writing 100 MB of fresh 4 KiB pages
// took 460-840 ms, the same 100 MB on huge pages 15-30 ms, and the LSJ detection recipe
// (three 100 MB batch buffers) spent most of its first batches' CPU in those touches.
// Elsewhere huge pages only save TLB misses.
constexpr size_t kHugePage = size_t{2} << 20;

bool Mapped(size_t bytes) { return bytes >= kMapThreshold; }

// MappedLength is what a mapped buffer of `bytes` spans: whole huge pages.
size_t MappedLength(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// MapHuge maps `length` bytes (a multiple of kHugePage) at a 2 MiB-aligned address, asks
// for huge pages and populates them writable; nullptr when the memory is not there.
void* MapHuge(size_t length) {
  // Over-map by one huge page, then unmap the unaligned head and the tail.
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + length + kHugePage;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  void* p = reinterpret_cast<void*>(aligned);
  (void)madvise(p, length, MADV_HUGEPAGE);  // EINVAL where THP is off: 4 KiB pages then.
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, length, MADV_POPULATE_WRITE) == 0) return p;
  if (errno == ENOMEM || errno == EFAULT || errno == EHWPOISON) {
    munmap(p, length);
    return nullptr;
  }
#endif
  // A kernel before 5.14 (EINVAL): populate by touching each page.
  volatile uint8_t* bytes = static_cast<volatile uint8_t*>(p);
  for (size_t at = 0; at < length; at += 4096) bytes[at] = 0;
  return p;
}

}  // namespace

absl::StatusOr<BatchBuffer> HostMemory::Allocate(size_t bytes) {
  if (Mapped(bytes)) {
    // 2 MiB-aligned, hence aligned for any SIMD store into a slot.
    void* p = MapHuge(MappedLength(bytes));
    if (p == nullptr) {
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
    munmap(buffer.host, MappedLength(buffer.bytes));
  } else {
    std::free(buffer.host);
  }
  buffer = BatchBuffer{};
}

}  // namespace flowloader
