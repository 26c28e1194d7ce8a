#include "stages/upload/host_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "stages/core/huge_pages.h"

namespace flowloader {
namespace {

// Buffers this large (every real batch) are mapped with their pages populated up front
// rather than malloc'ed and faulted in by the first writes: the first epoch then pays no
// ~28 000 page-fault traps for a 116 MB pool (64 × 224² × 3 floats × 3 buffers), which
// were 4% of its CPU (perf), and the memory budget is committed when the pipeline is
// created, not mid-epoch. Smaller buffers (tests) stay on the heap.
constexpr size_t kMapThreshold = size_t{1} << 20;

// Mapped buffers are also backed by transparent huge pages where the kernel allows them
// (stages/core/huge_pages.h: on these VMs the first touch of each fresh 4 KiB page is a
// hypervisor fault, and the LSJ detection recipe's three 100 MB batch buffers spent most
// of their first batches' CPU in those touches).
bool Mapped(size_t bytes) { return bytes >= kMapThreshold; }

// MappedLength is what a mapped buffer of `bytes` spans: whole huge pages.
size_t MappedLength(size_t bytes) { return RoundUpToHugePages(bytes); }

// MapHuge maps `length` bytes (a multiple of kHugePageBytes) on huge pages and populates
// them writable; nullptr when the memory is not there.
void* MapHuge(size_t length) {
  void* p = MapHugeAligned(length);
  if (p == nullptr) return nullptr;
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
