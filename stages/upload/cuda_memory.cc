#include "stages/upload/cuda_memory.h"

#include <cuda_runtime.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace flowloader {
namespace {

absl::Status CudaError(cudaError_t error, const char* what) {
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
}

}  // namespace

std::unique_ptr<DeviceMemory> CudaMemory::Create(const DeviceOptions& options,
                                                 std::string* why_not) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *why_not = absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(error));
    return nullptr;
  }
  if (options.cuda_device >= count) {
    *why_not = absl::StrCat("device ", options.cuda_device, " requested, ", count, " present");
    return nullptr;
  }
  if ((error = cudaSetDevice(options.cuda_device)) != cudaSuccess) {
    *why_not = absl::StrCat("cudaSetDevice: ", cudaGetErrorString(error));
    return nullptr;
  }
  cudaStream_t stream = nullptr;
  // A non-blocking stream does not serialize with the training step's default stream.
  if ((error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
    *why_not = absl::StrCat("cudaStreamCreate: ", cudaGetErrorString(error));
    return nullptr;
  }
  cudaDeviceProp prop;
  std::string name = "unknown";
  if (cudaGetDeviceProperties(&prop, options.cuda_device) == cudaSuccess) name = prop.name;
  return std::unique_ptr<DeviceMemory>(new CudaMemory(
      options.cuda_device, options.pin_memory, stream,
      absl::StrCat("cuda:", options.cuda_device, " (", name, "), ",
                   options.pin_memory ? "pinned" : "pageable", " host buffers")));
}

CudaMemory::~CudaMemory() { cudaStreamDestroy(static_cast<cudaStream_t>(stream_)); }

absl::StatusOr<BatchBuffer> CudaMemory::Allocate(size_t bytes) {
  cudaSetDevice(device_);
  BatchBuffer buffer;
  buffer.bytes = bytes;
  if (pinned_) {
    if (cudaError_t e = cudaHostAlloc(&buffer.host, bytes, cudaHostAllocDefault); e != cudaSuccess) {
      return CudaError(e, "cudaHostAlloc");
    }
  } else {
    buffer.host = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (buffer.host == nullptr) return absl::ResourceExhaustedError("host allocation failed");
  }
  if (cudaError_t e = cudaMalloc(&buffer.device, bytes); e != cudaSuccess) {
    Free(buffer);
    return CudaError(e, "cudaMalloc");
  }
  return buffer;
}

void CudaMemory::Free(BatchBuffer& buffer) {
  if (buffer.host != nullptr) {
    if (pinned_) {
      cudaFreeHost(buffer.host);
    } else {
      std::free(buffer.host);
    }
  }
  if (buffer.device != nullptr) cudaFree(buffer.device);
  buffer = BatchBuffer{};
}

absl::Status CudaMemory::Upload(const BatchBuffer& buffer, size_t bytes) {
  auto stream = static_cast<cudaStream_t>(stream_);
  if (cudaError_t e = cudaMemcpyAsync(buffer.device, buffer.host, bytes,
                                      cudaMemcpyHostToDevice, stream);
      e != cudaSuccess) {
    return CudaError(e, "cudaMemcpyAsync");
  }
  // Wait for this stream only: the batch is complete on the device when handed out.
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) {
    return CudaError(e, "cudaStreamSynchronize");
  }
  return absl::OkStatus();
}

}  // namespace flowloader
