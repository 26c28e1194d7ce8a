// host_memory.h: DeviceMemory on plain aligned host memory (the no-CUDA path).
//
// Thread-safety: all methods are thread-safe.
#ifndef FLOWLOADER_STAGES_UPLOAD_HOST_MEMORY_H_
#define FLOWLOADER_STAGES_UPLOAD_HOST_MEMORY_H_

#include <string>

#include "stages/upload/device_memory.h"

namespace flowloader {

class HostMemory : public DeviceMemory {
 public:
  explicit HostMemory(std::string description, std::string detail = "")
      : description_(std::move(description)), detail_(std::move(detail)) {}

  absl::StatusOr<BatchBuffer> Allocate(size_t bytes) override;
  void Free(BatchBuffer& buffer) override;
  absl::Status Upload(const BatchBuffer&, size_t) override { return absl::OkStatus(); }
  MemoryLocation location() const override { return MemoryLocation::kHost; }
  bool pinned() const override { return false; }
  const std::string& description() const override { return description_; }
  const std::string& detail() const override { return detail_; }

 private:
  const std::string description_;
  const std::string detail_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_UPLOAD_HOST_MEMORY_H_
