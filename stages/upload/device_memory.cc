#include "stages/upload/device_memory.h"

#include "absl/strings/str_cat.h"
#include "stages/upload/host_memory.h"

#ifdef FLOWLOADER_HAVE_CUDA
#include "stages/upload/cuda_memory.h"
#endif

namespace flowloader {

absl::StatusOr<std::unique_ptr<DeviceMemory>> DeviceMemory::Create(
    const DeviceOptions& options) {
  if (options.cuda_device < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda_device must be >= 0, got ", options.cuda_device));
  }
  if (options.device == DeviceChoice::kCpu) {
    return std::unique_ptr<DeviceMemory>(
        new HostMemory("host memory (device=cpu requested)"));
  }
#ifdef FLOWLOADER_HAVE_CUDA
  std::string why_not;
  std::unique_ptr<DeviceMemory> cuda = CudaMemory::Create(options, &why_not);
  if (cuda != nullptr) return cuda;
#else
  const std::string why_not = "flowloader was built without the CUDA toolkit";
#endif
  if (options.device == DeviceChoice::kCuda) {
    return absl::FailedPreconditionError(
        absl::StrCat("device=cuda requested but no CUDA device is usable: ", why_not));
  }
  return std::unique_ptr<DeviceMemory>(
      new HostMemory("no CUDA device; batches stay in host memory", why_not));
}

}  // namespace flowloader
