#include "stages/upload/host_memory.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace flowloader {

absl::StatusOr<BatchBuffer> HostMemory::Allocate(size_t bytes) {
  // 64-byte alignment: a cache line, and enough for any SIMD store into a slot.
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  return BatchBuffer{p, nullptr, bytes};
}

void HostMemory::Free(BatchBuffer& buffer) {
  std::free(buffer.host);
  buffer = BatchBuffer{};
}

}  // namespace flowloader
