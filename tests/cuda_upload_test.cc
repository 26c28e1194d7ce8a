// The CUDA upload end to end: a real pipeline with device=auto, each delivered batch's
// device copy read back with cudaMemcpy and compared byte for byte with its host buffer.
//
// Without a device the test skips, visibly; on a machine that has one, run it with
// FLOWLOADER_EXPECT_CUDA=1 so that falling back to host memory is a failure instead.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

bool ExpectCuda() {
  const char* v = std::getenv("FLOWLOADER_EXPECT_CUDA");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// DeviceBytes copies `bytes` from device memory back to the host.
std::vector<uint8_t> DeviceBytes(const void* device, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  cudaError_t e = cudaMemcpy(out.data(), device, bytes, cudaMemcpyDeviceToHost);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  return out;
}

PipelineOptions DeviceOptionsFor(const std::string& data, bool pinned) {
  PipelineOptions o;
  o.data = data;
  o.image_size = 48;
  o.batch_size = 8;
  o.num_workers = 2;
  o.prefetch_batches = 3;
  o.epochs = 2;
  o.device = DeviceChoice::kAuto;
  o.pin_memory = pinned;
  return o;
}

// DrainComparingDeviceCopies reads the whole run and checks every batch's device copy.
void DrainComparingDeviceCopies(Pipeline& pipeline, int64_t expected_samples) {
  int64_t samples = 0;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    absl::Status s = pipeline.Next(&batch, &end);
    ASSERT_TRUE(s.ok()) << s;
    if (end) {
      if (pipeline.done()) break;
      continue;
    }
    ASSERT_EQ(batch->location, MemoryLocation::kDevice);
    ASSERT_NE(batch->device_data, nullptr);
    std::vector<uint8_t> device = DeviceBytes(batch->device_data, batch->bytes());
    ASSERT_EQ(std::memcmp(device.data(), batch->host_data, batch->bytes()), 0)
        << "epoch " << batch->epoch << " batch " << batch->index
        << ": the device copy differs from the host buffer";
    samples += batch->size();
  }
  EXPECT_EQ(samples, expected_samples);
}

class CudaUploadTest : public ::testing::TestWithParam<bool> {};

TEST_P(CudaUploadTest, EveryBatchOnTheDeviceEqualsItsHostBuffer) {
  SetMinLogLevel(LogLevel::kWarning);
  const std::string data = testing::MakeImageFolder(
      testing::TempDir(GetParam() ? "cuda_upload_pinned" : "cuda_upload_pageable"), /*classes=*/3, /*per_class=*/10);
  auto pipeline = Pipeline::Create(DeviceOptionsFor(data, /*pinned=*/GetParam()));
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  if ((*pipeline)->memory_description().find("cuda:") == std::string::npos) {
    ASSERT_FALSE(ExpectCuda()) << "a CUDA device was expected: "
                               << (*pipeline)->memory_description();
    GTEST_SKIP() << "no CUDA device: " << (*pipeline)->memory_description();
  }
  DrainComparingDeviceCopies(**pipeline, /*expected_samples=*/2 * 30);
}

INSTANTIATE_TEST_SUITE_P(PinnedAndPageable, CudaUploadTest, ::testing::Bool());

}  // namespace
}  // namespace flowloader
