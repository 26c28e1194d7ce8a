// decode_augment_fuzzer: the libFuzzer entry point for fuzz_body.h. Built with clang
// (-fsanitize=fuzzer,address,undefined) by run_fuzz.sh, outside Bazel's gcc toolchain.
#include <cstddef>
#include <cstdint>

#include "stages/core/log.h"
#include "tests/fuzz/fuzz_body.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  flowloader::SetMinLogLevel(flowloader::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flowloader::fuzz::RunOne(data, size);
  return 0;
}
