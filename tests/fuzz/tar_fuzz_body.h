// tar_fuzz_body.h: one fuzz input through the tar shard index (stages/reader/tar_index.h)
// and webdataset's naming rules, with the index's contract checked.
//
// The input is the bytes of a `.tar`. RunTarIndexOne indexes it in memory (with and
// without read-ahead windows, asking for every member's payload), then checks what every
// shard reader relies on, aborting if broken: each member's data lies inside the input,
// after its header, 512-byte aligned, in increasing order; an inline payload equals the
// bytes at its offset; both window sizes give the same index; damage has a reason. Each
// member name goes through SplitKey and each payload through JsonIntField.
//
// Thread-safety: a pure function of its input.
#ifndef FLOWLOADER_TESTS_FUZZ_TAR_FUZZ_BODY_H_
#define FLOWLOADER_TESTS_FUZZ_TAR_FUZZ_BODY_H_

#include <cstddef>
#include <cstdint>

namespace flowloader::fuzz {

void RunTarIndexOne(const uint8_t* data, size_t size);

}  // namespace flowloader::fuzz

#endif  // FLOWLOADER_TESTS_FUZZ_TAR_FUZZ_BODY_H_
