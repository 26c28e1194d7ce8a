// more_codecs.h: the formats torchvision's ImageFolder reads besides JPEG and PNG: WebP
// (libwebp), TIFF (libtiff), GIF (giflib, first frame), BMP and PPM/PGM/PBM (our own
// parsers: both are uncompressed rows behind a fixed header; Debian's libnetpbm reads
// only through a FILE* and reports bad input through pm_error, which exits the process
// unless a jump buffer is set, and Debian has no BMP library for C++; a small parser
// whose every read is bounded by the file's size is the safer choice here).
//
// Each format has ReadXInfo (the header only; no pixel memory; the same max_pixels and
// side checks as JPEG/PNG, internal/common.h) and DecodeX (to 8-bit RGB, into the
// request's region as PNG does, internal/region_rows.h). Pixels follow PIL's
// Image.open(...).convert('RGB'): palette and gray expanded, alpha dropped, not
// composited. Where 16-bit gray would clip to white in PIL (its "I" mode), the high byte
// is kept instead, as for PNG.
//
// Memory one decode holds besides its output (whose size region_rows.h bounds):
//   TIFF  one scanline of the file's width (a band of one tile row for tiled files,
//         at most kMaxTiffBandBytes) plus libtiff's codec state; strips are read from
//         the caller's bytes in place (libtiff's mapped-file path), never copied.
//   GIF   one frame row of indices and one RGB row of the canvas width, plus giflib's
//         fixed LZW tables (about 25 KB).
//   BMP, PPM/PGM/PBM  one RGB row of the file's width (rows are read in place).
//   WebP  libwebp decodes straight into the output (cropped, and rescaled to the
//         target like PNG's blocks); lossy files add a few macroblock rows of the
//         file's width, lossless files (VP8L) hold the whole image as 4 bytes per pixel
//         while decoding, because their back-references may reach any earlier pixel
//         (under max_pixels, as the header check guarantees).
//
// Thread-safety: free functions; each call owns its library state.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_MORE_CODECS_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_MORE_CODECS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// kMaxTiffBandBytes bounds a tiled TIFF's band (one row of tiles, decoded): a file whose
// tiles need more is refused as unsupported rather than allowed to allocate it.
inline constexpr size_t kMaxTiffBandBytes = size_t{64} << 20;

absl::StatusOr<ImageInfo> ReadWebpInfo(absl::string_view bytes, const DecoderOptions& options);
absl::Status DecodeWebp(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, DecodedImage* out);

absl::StatusOr<ImageInfo> ReadTiffInfo(absl::string_view bytes, const DecoderOptions& options);
absl::Status DecodeTiff(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, DecodedImage* out);

absl::StatusOr<ImageInfo> ReadGifInfo(absl::string_view bytes, const DecoderOptions& options);
absl::Status DecodeGif(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out);

absl::StatusOr<ImageInfo> ReadBmpInfo(absl::string_view bytes, const DecoderOptions& options);
absl::Status DecodeBmp(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out);

absl::StatusOr<ImageInfo> ReadPnmInfo(absl::string_view bytes, const DecoderOptions& options);
absl::Status DecodePnm(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out);

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_MORE_CODECS_H_
