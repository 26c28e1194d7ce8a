// png_codec.h: PNG header reading and row-by-row region decoding to 8-bit RGB (libpng).
//
// A decode holds only what its output needs: rows are read one at a time (png_read_row,
// Adam7 passes placed by hand, never de-interlaced into a full image) and only the
// requested region's pixels are kept, averaged over power-of-two blocks where the
// request's target size allows it. Held memory is the output, one row of the file's
// width, and libpng's own two rows and inflate window.
//
// Thread-safety: free functions; each call owns its libpng state.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// ReadPngInfo reads chunks up to the first IDAT; it allocates no pixel memory.
absl::StatusOr<ImageInfo> ReadPngInfo(absl::string_view bytes,
                                      const DecoderOptions& options);

// PngMemory is what one DecodePng call allocated besides `out`'s pixel buffer (whose
// capacity the caller can read): the evidence behind the memory bound, for tests and tools.
struct PngMemory {
  size_t libpng_peak_bytes = 0;  // libpng's and zlib's allocations, at their peak.
  size_t scratch_bytes = 0;      // Our decoded-row and block-sum buffers.
};

// DecodePng decodes `request`'s region (the whole image without one) to RGB into `out`.
// Every row of the file is decoded even when the region ends above it, so whether a
// damaged file decodes never depends on the crop. `memory` may be null.
absl::Status DecodePng(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out,
                       PngMemory* memory = nullptr);

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_PNG_CODEC_H_
