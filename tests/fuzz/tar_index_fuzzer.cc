// tar_index_fuzzer: the libFuzzer entry point for tar_fuzz_body.h. Built with clang
// (-fsanitize=fuzzer,address,undefined) by run_tar_fuzz.sh, outside Bazel's gcc toolchain.
#include <cstddef>
#include <cstdint>

#include "stages/core/log.h"
#include "tests/fuzz/tar_fuzz_body.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  flowloader::SetMinLogLevel(flowloader::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flowloader::fuzz::RunTarIndexOne(data, size);
  return 0;
}
