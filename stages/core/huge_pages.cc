// huge_pages.cc: MapHugeAligned (see huge_pages.h).
#include "stages/core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace flowloader {

void* MapHugeAligned(size_t length) {
  // Over-map by one huge page, then unmap the unaligned head and the tail.
  void* raw = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + length + kHugePageBytes;
  if (end > aligned + length) {
    munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
  }
  void* p = reinterpret_cast<void*>(aligned);
  (void)madvise(p, length, MADV_HUGEPAGE);  // EINVAL where THP is off: 4 KiB pages then.
  return p;
}

}  // namespace flowloader
