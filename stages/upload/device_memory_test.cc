#include "stages/upload/device_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

// Where the machine has a CUDA device, FLOWLOADER_EXPECT_CUDA=1 makes the fallback a
// failure instead of an accepted outcome, so a GPU run cannot pass vacuously.
bool ExpectCuda() {
  const char* v = std::getenv("FLOWLOADER_EXPECT_CUDA");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

TEST(DeviceMemoryTest, CpuChoiceGivesAlignedHostBuffers) {
  DeviceOptions o;
  o.device = DeviceChoice::kCpu;
  auto mem = DeviceMemory::Create(o);
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ((*mem)->location(), MemoryLocation::kHost);
  auto buf = (*mem)->Allocate(1000);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->host) % 64, 0u);
  std::memset(buf->host, 7, 1000);
  EXPECT_TRUE((*mem)->Upload(*buf, 1000).ok());
  (*mem)->Free(*buf);
}

TEST(DeviceMemoryTest, LargeHostBuffersAreWholeHugePagesWritableToTheEnd) {
  // A batch-sized buffer (>= 1 MiB) is mapped 2 MiB-aligned over whole huge pages
  // (host_memory.cc: the first touch of 4 KiB pages is what costs on these VMs), and
  // every byte of it, to the last, is usable; Free unmaps all of it.
  DeviceOptions o;
  o.device = DeviceChoice::kCpu;
  auto mem = DeviceMemory::Create(o);
  ASSERT_TRUE(mem.ok());
  for (size_t n : {size_t{1} << 20, (size_t{3} << 20) + 12345}) {
    auto buf = (*mem)->Allocate(n);
    ASSERT_TRUE(buf.ok()) << buf.status();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->host) % (size_t{2} << 20), 0u);
    EXPECT_EQ(buf->bytes, n);
    auto* bytes = static_cast<uint8_t*>(buf->host);
    EXPECT_EQ(bytes[0], 0);  // Fresh anonymous memory reads as zeros.
    EXPECT_EQ(bytes[n - 1], 0);
    std::memset(bytes, 0x5a, n);
    EXPECT_EQ(bytes[n - 1], 0x5a);
    (*mem)->Free(*buf);
    EXPECT_EQ(buf->host, nullptr);
  }
}

TEST(DeviceMemoryTest, AutoUsesDeviceOrSaysWhyNot) {
  auto mem = DeviceMemory::Create(DeviceOptions{});
  ASSERT_TRUE(mem.ok());
  const std::string& d = (*mem)->description();
  if ((*mem)->location() == MemoryLocation::kHost) {
    EXPECT_FALSE(ExpectCuda()) << "a CUDA device was expected: " << d;
    // Every run logs it: words that do not read as an error; the runtime's own reason
    // ("CUDA driver version is insufficient ...") is the detail, for --verbose.
    EXPECT_EQ(d, "no CUDA device; batches stay in host memory");
    EXPECT_FALSE((*mem)->detail().empty());
    return;
  }
  // A device: round-trip real data through it.
  EXPECT_NE(d.find("cuda:0"), std::string::npos) << d;
  const size_t n = 1 << 20;
  auto buf = (*mem)->Allocate(n);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_NE(buf->device, nullptr);
  std::memset(buf->host, 0x5a, n);
  ASSERT_TRUE((*mem)->Upload(*buf, n).ok());
  (*mem)->Free(*buf);
}

TEST(DeviceMemoryTest, CudaChoiceFailsClearlyWithoutDevice) {
  DeviceOptions o;
  o.device = DeviceChoice::kCuda;
  auto mem = DeviceMemory::Create(o);
  if (mem.ok()) {
    EXPECT_EQ((*mem)->location(), MemoryLocation::kDevice);
  } else {
    EXPECT_FALSE(ExpectCuda()) << mem.status();
    EXPECT_EQ(mem.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(mem.status().message().find("no CUDA device"), std::string::npos);
  }
}

}  // namespace
}  // namespace flowloader
