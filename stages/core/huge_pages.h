// huge_pages.h: memory mapped at a 2 MiB boundary and marked for transparent huge pages.
//
// On the 2-core VMs here the hypervisor builds its own page-table entry on the first touch
// of every fresh page: writing 100 MB of fresh 4 KiB pages took 460-840 ms, the same 100 MB
// on huge pages 15-30 ms. Long-lived buffers that are written once per batch or block
// (batch buffers, the shard block cache) are therefore mapped here rather than malloc'ed.
// Elsewhere huge pages only save TLB misses.
#ifndef FLOWLOADER_STAGES_CORE_HUGE_PAGES_H_
#define FLOWLOADER_STAGES_CORE_HUGE_PAGES_H_

#include <cstddef>

namespace flowloader {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// RoundUpToHugePages is `bytes` rounded up to whole huge pages.
inline size_t RoundUpToHugePages(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

// MapHugeAligned maps `length` bytes (a multiple of kHugePageBytes), private and
// anonymous, at a 2 MiB-aligned address, and asks for transparent huge pages (4 KiB pages
// where THP is off). Pages are not populated. nullptr when the kernel refuses the mapping;
// release with munmap(p, length).
void* MapHugeAligned(size_t length);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_HUGE_PAGES_H_
