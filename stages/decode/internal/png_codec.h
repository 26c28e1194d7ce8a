// png_codec.h: PNG header reading and full decoding to 8-bit RGB with libpng.
//
// Thread-safety: free functions; each call owns its libpng state.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// ReadPngInfo reads chunks up to the first IDAT; it allocates no pixel memory.
absl::StatusOr<ImageInfo> ReadPngInfo(absl::string_view bytes,
                                      const DecoderOptions& options);

// DecodePng decodes the whole image to RGB into `out` (covered = the image, scale 1).
absl::Status DecodePng(absl::string_view bytes, const DecoderOptions& options,
                       DecodedImage* out);

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_
