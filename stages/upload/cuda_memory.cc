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
  // Waiting on a blocking-sync event sleeps the upload thread instead of letting CUDA spin
  // on a core the decode workers need (a stream sync spins when cores are few).
  cudaEvent_t copied = nullptr;
  if ((error = cudaEventCreateWithFlags(&copied, cudaEventBlockingSync | cudaEventDisableTiming)) !=
      cudaSuccess) {
    cudaStreamDestroy(stream);
    *why_not = absl::StrCat("cudaEventCreate: ", cudaGetErrorString(error));
    return nullptr;
  }
  cudaDeviceProp prop;
  std::string name = "unknown";
  if (cudaGetDeviceProperties(&prop, options.cuda_device) == cudaSuccess) name = prop.name;
  return std::unique_ptr<DeviceMemory>(new CudaMemory(
      options.cuda_device, options.pin_memory, stream, copied,
      absl::StrCat("cuda:", options.cuda_device, " (", name, "), ",
                   options.pin_memory ? "pinned" : "pageable", " host buffers")));
}

CudaMemory::~CudaMemory() {
  cudaEventDestroy(static_cast<cudaEvent_t>(copied_));
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

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
  auto copied = static_cast<cudaEvent_t>(copied_);
  if (cudaError_t e = cudaEventRecord(copied, stream); e != cudaSuccess) {
    return CudaError(e, "cudaEventRecord");
  }
  if (cudaError_t e = cudaEventSynchronize(copied); e != cudaSuccess) {
    return CudaError(e, "cudaEventSynchronize");
  }
  return absl::OkStatus();
}

}  // namespace flowloader
