// cuda_memory.h: DeviceMemory on a CUDA device: pinned host buffers + device buffers,
// copied on a dedicated stream. Compiled only when the CUDA toolkit was found at build
// time (FLOWLOADER_HAVE_CUDA); whether a device exists is decided in Create, at run time.
//
// Thread-safety: Allocate/Free are thread-safe (CUDA's allocation calls are); Upload is
// called from one thread at a time.
#ifndef FLOWLOADER_STAGES_UPLOAD_CUDA_MEMORY_H_
#define FLOWLOADER_STAGES_UPLOAD_CUDA_MEMORY_H_

#include <memory>
#include <string>

#include "stages/upload/device_memory.h"

namespace flowloader {

class CudaMemory : public DeviceMemory {
 public:
  // Create returns nullptr and sets *why_not when no device is usable.
  static std::unique_ptr<DeviceMemory> Create(const DeviceOptions& options,
                                              std::string* why_not);
  ~CudaMemory() override;

  absl::StatusOr<BatchBuffer> Allocate(size_t bytes) override;
  void Free(BatchBuffer& buffer) override;
  absl::Status Upload(const BatchBuffer& buffer, size_t bytes) override;
  MemoryLocation location() const override { return MemoryLocation::kDevice; }
  bool pinned() const override { return pinned_; }
  const std::string& description() const override { return description_; }

 private:
  CudaMemory(int device, bool pinned, void* stream, void* copied, std::string description)
      : device_(device),
        pinned_(pinned),
        stream_(stream),
        copied_(copied),
        description_(std::move(description)) {}
  const int device_;
  const bool pinned_;
  // cudaStream_t and cudaEvent_t, kept opaque so this header needs no CUDA headers.
  void* const stream_;
  void* const copied_;  // Recorded after each copy; a blocking-sync event (see Create).
  const std::string description_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_UPLOAD_CUDA_MEMORY_H_
