// The CUDA upload end to end: a real pipeline with device=auto, every tensor of each
// delivered batch read back from the device with cudaMemcpy and compared byte for byte
// with its host buffer; for the default graph and for one of several views per sample.
//
// Without a device the test skips, visibly; on a machine that has one, run it with
// FLOWLOADER_EXPECT_CUDA=1 so that falling back to host memory is a failure instead.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "graph/graph_builder.h"
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

// ThreeViews is read → decode → augment [view0, view1] (float) + augment `small` (uint8).
std::vector<StageSpec> ThreeViews() {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("augment").Outputs({"view0", "view1"}).Option("image_size", "48");
  graph.Add("augment").Name("small").Outputs({"small"}).Option("image_size", "16").Option(
      "layout", "uint8_hwc");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  EXPECT_TRUE(stages.ok()) << stages.status();
  return stages.ok() ? *stages : std::vector<StageSpec>{};
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

// DrainComparingDeviceCopies reads the whole run and checks every tensor's device copy.
void DrainComparingDeviceCopies(Pipeline& pipeline, size_t tensors, int64_t expected_samples) {
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
    ASSERT_EQ(batch->tensors.size(), tensors);
    EXPECT_EQ(batch->device_data(), batch->tensors.front().device_data);
    for (const BatchTensor& tensor : batch->tensors) {
      ASSERT_NE(tensor.device_data, nullptr) << tensor.name;
      std::vector<uint8_t> device = DeviceBytes(tensor.device_data, tensor.bytes());
      ASSERT_EQ(std::memcmp(device.data(), tensor.host_data, tensor.bytes()), 0)
          << "epoch " << batch->epoch << " batch " << batch->index << " tensor " << tensor.name
          << ": the device copy differs from the host buffer";
    }
    samples += batch->size();
  }
  EXPECT_EQ(samples, expected_samples);
}

// The parameter: pinned host buffers (true) or pageable ones.
class CudaUploadTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(testing::MakeImageFolder(testing::TempDir("cuda_upload"),
                                                     /*classes=*/3, /*per_class=*/10));
  }
  static void TearDownTestSuite() { delete data_; }

  // CreateOnDevice is the pipeline, or nullptr after a skip (no device, not expected).
  static std::unique_ptr<Pipeline> CreateOnDevice(const PipelineOptions& options) {
    auto pipeline = Pipeline::Create(options);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    if (!pipeline.ok()) return nullptr;
    const std::string& where = (*pipeline)->memory_description();
    if (where.find("cuda:") != std::string::npos) return std::move(*pipeline);
    EXPECT_FALSE(ExpectCuda()) << "a CUDA device was expected: " << where;
    return nullptr;
  }

  static std::string* data_;
};
std::string* CudaUploadTest::data_ = nullptr;

TEST_P(CudaUploadTest, EveryBatchOnTheDeviceEqualsItsHostBuffer) {
  std::unique_ptr<Pipeline> pipeline = CreateOnDevice(DeviceOptionsFor(*data_, GetParam()));
  if (pipeline == nullptr) GTEST_SKIP() << "no CUDA device";
  DrainComparingDeviceCopies(*pipeline, /*tensors=*/1, /*expected_samples=*/2 * 30);
}

TEST_P(CudaUploadTest, EveryViewOnTheDeviceEqualsItsHostBuffer) {
  PipelineOptions options = DeviceOptionsFor(*data_, GetParam());
  options.stages = ThreeViews();
  std::unique_ptr<Pipeline> pipeline = CreateOnDevice(options);
  if (pipeline == nullptr) GTEST_SKIP() << "no CUDA device";
  DrainComparingDeviceCopies(*pipeline, /*tensors=*/3, /*expected_samples=*/2 * 30);
}

INSTANTIATE_TEST_SUITE_P(PinnedAndPageable, CudaUploadTest, ::testing::Bool());

}  // namespace
}  // namespace flowloader
