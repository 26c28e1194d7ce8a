// common.h: what the JPEG and PNG decoders share: error codes and header size checks.
//
// Thread-safety: free functions on values.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_COMMON_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// kMaxSide bounds either side on its own (PNG allows 2^31 - 1), so that row sizes and
// 1 × N images stay sane even when max_pixels is large.
inline constexpr int64_t kMaxSide = int64_t{1} << 24;

// DecodeError builds a SampleError whose code follows from `reason`, so callers of the
// decoder can branch on either.
inline absl::Status DecodeError(absl::string_view reason, absl::string_view message) {
  absl::StatusCode code = absl::StatusCode::kDataLoss;  // truncated, corrupt
  if (reason == flowloader::reason::kEmptyFile || reason == flowloader::reason::kUnknownFormat) {
    code = absl::StatusCode::kInvalidArgument;
  } else if (reason == flowloader::reason::kTooManyPixels) {
    code = absl::StatusCode::kResourceExhausted;
  } else if (reason == flowloader::reason::kUnsupported) {
    code = absl::StatusCode::kUnimplemented;
  } else if (reason == flowloader::reason::kStageError) {
    code = absl::StatusCode::kInternal;
  }
  return SampleError(code, reason, message);
}

// SizeProblem returns the reason to refuse a width × height header (empty when it is
// acceptable) and then writes the explanation to `message`. It is plain C on purpose:
// it runs inside setjmp frames, which must not hold objects with destructors.
inline absl::string_view SizeProblem(int64_t width, int64_t height,
                                     const DecoderOptions& options, char* message,
                                     size_t capacity) {
  if (width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide &&
      width * height <= options.max_pixels) {
    return absl::string_view();
  }
  std::snprintf(message, capacity, "header declares %lldx%lld pixels (limit %lld)",
                static_cast<long long>(width), static_cast<long long>(height),
                static_cast<long long>(options.max_pixels));
  return width <= 0 || height <= 0 ? flowloader::reason::kCorrupt
                                   : flowloader::reason::kTooManyPixels;
}

// MemoryProblem returns reason::kDecodeMemory when a codec's working memory `need` (bytes,
// from the header) is over options.max_decode_bytes, and then writes to `message` what
// needs it and the knob; else empty. Plain C, like SizeProblem.
inline absl::string_view MemoryProblem(int64_t need, const char* what, int64_t width,
                                       int64_t height, const DecoderOptions& options,
                                       char* message, size_t capacity) {
  if (need <= options.max_decode_bytes) return absl::string_view();
  std::snprintf(message, capacity,
                "%s of %lldx%lld needs %lld MiB to decode, over decode max_decode_mb %lld",
                what, static_cast<long long>(width), static_cast<long long>(height),
                static_cast<long long>((need + (1 << 20) - 1) >> 20),
                static_cast<long long>(options.max_decode_bytes >> 20));
  return flowloader::reason::kDecodeMemory;
}

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_COMMON_H_
