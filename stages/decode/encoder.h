// encoder.h: JPEG (libjpeg-turbo) and PNG (libpng) encoding of in-memory images.
//
// Used to build test inputs and sample datasets with exactly known properties (chroma
// subsampling, progressive scans, restart markers, CMYK/YCCK, palette, 16-bit, Adam7),
// so tests and the dataset generator never depend on checked-in binary files. Not on the
// loader's hot path.
//
// Thread-safety: free functions without shared state; call from any number of threads.
#ifndef FLOWLOADER_STAGES_DECODE_ENCODER_H_
#define FLOWLOADER_STAGES_DECODE_ENCODER_H_

#include <string>

#include "absl/status/statusor.h"
#include "stages/core/image.h"

namespace flowloader::decode {

// ChromaSubsampling names the luma sampling factors (h × v) relative to chroma (1 × 1).
enum class ChromaSubsampling {
  k444,  // 1×1: full-resolution chroma.
  k422,  // 2×1: chroma halved horizontally.
  k420,  // 2×2: chroma halved both ways (libjpeg's default).
  k440,  // 1×2: chroma halved vertically.
  k411,  // 4×1: chroma quartered horizontally.
};

// JpegColor is the colour space written to the file.
enum class JpegColor {
  kDefault,  // 1-channel input → grayscale file; 3-channel input → YCbCr file.
  kCmyk,     // Adobe-inverted CMYK (as Photoshop writes it) with an Adobe APP14 marker.
  kYcck,     // The same CMYK, stored as YCCK (Adobe transform 2).
};

struct JpegEncodeOptions {
  // libjpeg quality, 1..100. Default 90.
  int quality = 90;
  // Luma sampling factors for YCbCr and YCCK files (ignored for gray and CMYK, which are
  // always 1×1). Default 4:2:0.
  ChromaSubsampling subsampling = ChromaSubsampling::k420;
  // Write a progressive JPEG (jpeg_simple_progression). Default false (baseline).
  bool progressive = false;
  // Write a sequential JPEG with one scan per component (non-interleaved), which a
  // decoder, as for a progressive file, decodes through the whole image's coefficients.
  // Ignored when progressive. Default false (one interleaved scan).
  bool multi_scan = false;
  // Compute optimal Huffman tables (a second pass). Default false.
  bool optimize_coding = false;
  // Restart marker every this many MCUs; 0 writes none. 0..65535. Default 0.
  int restart_interval = 0;
  // Colour space of the file. kCmyk/kYcck accept 1- or 3-channel input. Default kDefault.
  JpegColor color = JpegColor::kDefault;
};

// EncodeJpeg encodes `image` (1-channel gray or 3-channel RGB, 1..65500 px per side).
// A CMYK or YCCK file stores, per pixel, inverted inks C' = R·255/max, M', Y' likewise and
// K' = max(R, G, B), so PIL's convert('RGB') (R = C'·K'/255) gives back the input colours
// to within rounding. Returns InvalidArgument for bad options or input.
absl::StatusOr<std::string> EncodeJpeg(const ImageView& image,
                                       const JpegEncodeOptions& options = {});

struct PngEncodeOptions {
  // Bits per sample: 8 or 16 for any colour type; 1, 2 or 4 also for gray and palette
  // files. 16-bit samples are the 8-bit value × 257. Gray samples below 8 bits keep the
  // high bits. Default 8.
  int bit_depth = 8;
  // Write a palette (colour type 3) built from the image's distinct colours (at most
  // 256, and at most 2^bit_depth; else InvalidArgument). RGBA input puts alpha in tRNS.
  // Not with bit_depth 16. Default false.
  bool palette = false;
  // Adam7 interlacing. Default false.
  bool interlace = false;
  // zlib level, 0..9. Default 6.
  int compression_level = 6;
};

// EncodePng encodes `image` with 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA)
// channels. Returns InvalidArgument for bad options or input.
absl::StatusOr<std::string> EncodePng(const ImageView& image,
                                      const PngEncodeOptions& options = {});

}  // namespace flowloader::decode

#endif  // FLOWLOADER_STAGES_DECODE_ENCODER_H_
