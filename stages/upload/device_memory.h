// device_memory.h: batch buffers (pinned where CUDA is present) and the host→device copy.
//
// With a CUDA device, batch buffers are page-locked host memory (cudaHostAlloc) paired
// with a device buffer, and Upload copies one to the other asynchronously on a dedicated
// CUDA stream, then waits for that stream only. Without one (no toolkit at build time, no
// driver, or no device at run time), buffers are plain aligned host memory, Upload is a
// no-op, and Create says why in one log line (description()).
//
// Thread-safety: Allocate/Free are thread-safe. Upload must be called from one thread at
// a time (the pipeline's serial upload stage).
#ifndef FLOWLOADER_STAGES_UPLOAD_DEVICE_MEMORY_H_
#define FLOWLOADER_STAGES_UPLOAD_DEVICE_MEMORY_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/collate/batch.h"

namespace flowloader {

enum class DeviceChoice {
  kAuto,  // CUDA device if one is present, else host memory (with a log line).
  kCpu,   // Host memory only.
  kCuda,  // CUDA device required: Create fails without one.
};

struct DeviceOptions {
  DeviceChoice device = DeviceChoice::kAuto;
  // CUDA device ordinal; >= 0. Default 0.
  int cuda_device = 0;
  // Use page-locked host buffers when a device is used (faster DMA). Default true.
  bool pin_memory = true;
};

// BatchBuffer is one batch's memory: a host buffer, plus a device buffer when uploading.
struct BatchBuffer {
  void* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
};

class DeviceMemory {
 public:
  // Create picks the memory kind. It never fails under kAuto or kCpu.
  static absl::StatusOr<std::unique_ptr<DeviceMemory>> Create(const DeviceOptions& options);
  virtual ~DeviceMemory() = default;

  // Allocate returns a buffer of `bytes` (host memory 64-byte aligned).
  virtual absl::StatusOr<BatchBuffer> Allocate(size_t bytes) = 0;
  virtual void Free(BatchBuffer& buffer) = 0;
  // Upload copies the first `bytes` of buffer.host to buffer.device and waits for it.
  virtual absl::Status Upload(const BatchBuffer& buffer, size_t bytes) = 0;

  // location is where delivered batches live (kHost or kDevice).
  virtual MemoryLocation location() const = 0;
  // pinned reports whether host buffers are page-locked.
  virtual bool pinned() const = 0;
  // description says which memory is used, in words for every run's log: "no CUDA
  // device; batches stay in host memory" for the host fallback.
  virtual const std::string& description() const = 0;
  // detail is why, for the host fallback (the CUDA runtime's own words, which read as an
  // error: logged only under --verbose); empty otherwise.
  virtual const std::string& detail() const {
    static const std::string* const kNone = new std::string;
    return *kNone;
  }
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_UPLOAD_DEVICE_MEMORY_H_
