// jpeg_codec.h: JPEG header reading and (region, DCT-scaled) decoding with libjpeg-turbo.
//
// Thread-safety: free functions; each call owns its libjpeg state. The only shared state
// is a thread_local scratch row for CMYK/YCCK conversion.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_JPEG_CODEC_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_JPEG_CODEC_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/decode/decoder.h"
#include "stages/decode/internal/seek_index_cache.h"

namespace flowloader::decode::internal {

// ReadJpegInfo parses markers up to the first SOS; it allocates no pixel memory.
absl::StatusOr<ImageInfo> ReadJpegInfo(absl::string_view bytes,
                                       const DecoderOptions& options);

// DecodeJpeg decodes to RGB into `out` (see Decoder::Decode). `request` may be null;
// `index_cache` (may be null) keeps seek indexes for region decodes.
absl::Status DecodeJpeg(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, SeekIndexCache* index_cache,
                        DecodedImage* out);

// ChooseDctScale returns the smallest k in {1, 2, 4, 8} such that a region_w × region_h
// box, scaled by k/8, still has at least target_w × target_h pixels (8 when none does, or
// when a target is <= 0). Other k are valid libjpeg scales but decode slower than k = 8.
int ChooseDctScale(double region_w, double region_h, int target_w, int target_h);

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_JPEG_CODEC_H_
