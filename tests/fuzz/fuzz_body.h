// fuzz_body.h: the decode + augment fuzz body, shared by the libFuzzer target
// (decode_augment_fuzzer.cc, built with clang by run_fuzz.sh) and the Bazel regression
// test (regression_test.cc), so a reproducer saved under regressions/ runs exactly the
// code that crashed, under gcc's normal, asan and tsan configs too.
//
// Input format: an 8-byte header, then the image file bytes.
//   byte 0     option bits: bit 0 fast_idct, bit 1 no DCT scaling, bit 2 uint8_hwc
//              layout, bits 3-5 an image_size from kImageSizes, bits 6-7 a crop-parameter
//              variant (default, extreme scale/ratio, fixed full crop, always flip).
//   bytes 1-7  seed of the per-sample RNG (SampleRng), so the fuzzer drives the crops.
// Inputs shorter than the header are used whole as the image with a zero header.
//
// What one input exercises (everything the decode and augment stages do to a sample):
//   Decoder::ReadInfo (default limits: the bomb check) → for train and eval:
//   Transform::Plan → Decoder::Decode(region request) → Transform::Apply into a buffer;
//   a full Decode (no request) → Plan/Apply on the full image (the no-plan path of the
//   augment stage); and a Decode with a hostile request drawn from the RNG.
//
// Every successful JPEG decode is also made with libjpeg-turbo's own Huffman decoder
// (DecoderOptions::fast_huffman = false): where that succeeds too, the pixels must be
// identical (flowloader's decoder and its seek indexes are lossless replacements).
// Besides memory errors (the sanitizers), RunOne aborts on broken contracts: a decode
// that succeeds where ReadInfo failed, a full decode whose size differs from the header,
// an error without a known reason, a decoded box that does not cover the requested
// region, an Apply that fails on what the decoder returned for the planner's own request
// (a good image the pipeline would drop), or a non-finite normalized output.
//
// Thread-safety: RunOne may be called from several threads at once.
#ifndef FLOWLOADER_TESTS_FUZZ_FUZZ_BODY_H_
#define FLOWLOADER_TESTS_FUZZ_FUZZ_BODY_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace flowloader::fuzz {

inline constexpr size_t kHeaderBytes = 8;
inline constexpr int kImageSizes[8] = {1, 2, 3, 8, 16, 33, 64, 224};

// kFuzzMaxPixels is the pixel limit of the decoder used for the decodes (4 Mpx, 12 MB of
// RGB): far below the production default, so that a crafted 13000×13000 header costs
// milliseconds, not a gigabyte, per execution. The production limit is exercised by
// ReadInfo with default options on every input.
inline constexpr int64_t kFuzzMaxPixels = int64_t{1} << 22;

// RunOne runs one input through the body; aborts (after printing why) on a broken
// contract. Returns normally otherwise, whatever the bytes.
void RunOne(const uint8_t* data, size_t size);

// WithHeader builds an input from option bits, an RNG seed and the image bytes.
std::string WithHeader(uint8_t options, uint64_t seed, const std::string& image);

}  // namespace flowloader::fuzz

#endif  // FLOWLOADER_TESTS_FUZZ_FUZZ_BODY_H_
