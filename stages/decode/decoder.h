// decoder.h: JPEG (libjpeg-turbo), PNG (libpng), WebP (libwebp), TIFF (libtiff), GIF
// (giflib, first frame), BMP and PPM/PGM/PBM decoding to 8-bit RGB: the formats
// torchvision's ImageFolder reads (internal/more_codecs.h says what each one covers).
//
// The decoder can decode only part of an image, at reduced scale: given the region that a
// downstream crop needs and the size it will be resized to, a JPEG is decoded with DCT
// scaling (scale_num/8, never below what the target size needs), horizontal cropping
// (jpeg_crop_scanline) and skipped rows (jpeg_skip_scanlines), the way DALI's fused
// decode-and-crop does. A PNG is read row by row and only the region is kept, averaged
// over power-of-two blocks where the target size allows (internal/png_codec.h); TIFF,
// GIF, BMP and PPM/PGM are read the same way (internal/region_rows.h), and a WebP is
// cropped and rescaled by libwebp to the same box. Without a request, everything is
// decoded at full scale.
// The scale is k/8 for k in {1, 2, 4, 8} only: libjpeg-turbo's other IDCT sizes are
// plain C and decode about twice slower than k = 8 (measured; see jpeg_codec.cc).
// Pixels inside the requested region are identical to a full decode at the same scale
// (for WebP, at full scale: its rescaled output is libwebp's own area average);
// a full decode is identical to PIL's Image.open(...).convert('RGB') (the exceptions,
// such as 16-bit gray, are listed where each codec is implemented).
//
// A region decode whose consumer accepts it (RegionRequest::accept_ycc, as the augment
// stage's resize does where it is faster) comes back as the JPEG's own Y, Cb and Cr
// planes instead (PixelFormat::kYcc): the samples libjpeg's raw-data mode would give,
// still cropped and with rows skipped, before chroma upsampling and colour conversion,
// which then happen once at the resize's output size (internal/planar_ycc.h).
//
// Sizes are checked against max_pixels from the header alone, before any pixel buffer is
// allocated, so a decompression bomb costs nothing. Beyond that a decode's memory follows
// its output, not its header: the region's decoded pixels (for a PNG, TIFF, GIF, BMP,
// PPM or WebP with a target size, under 2 × target per side), a few rows of the file's
// width and the codec's fixed state. The exceptions, a progressive or multi-scan JPEG
// (libjpeg holds every coefficient of the file) and a lossless WebP (libwebp decodes
// through a 4-byte-per-pixel image of the whole file), are sized from the header and
// refused as decode_memory over max_decode_bytes before anything is allocated
// (internal/more_codecs.h states each format's bound).
//
// Thread-safety: a Decoder is immutable after Create; its methods may be called from any
// number of threads at once.
#ifndef FLOWLOADER_STAGES_DECODE_DECODER_H_
#define FLOWLOADER_STAGES_DECODE_DECODER_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "stages/core/image.h"

namespace flowloader::decode {

// Format is sniffed from a file's first bytes, never its name.
enum class Format { kUnknown, kJpeg, kPng, kWebp, kTiff, kGif, kBmp, kPnm };

// ImageInfo is what the header says, read without decoding pixels.
struct ImageInfo {
  Format format = Format::kUnknown;
  int width = 0;
  int height = 0;
  int channels = 0;  // In the file: 1 gray, 3 RGB/YCbCr, 4 CMYK/YCCK or RGBA.
};

// kKeptScanBytes is the largest copy of a JPEG's entropy-coded data (about the file's
// size, unstuffed for the fast Huffman decoder) a decode thread keeps for its next decode;
// a larger one is freed when its decode ends. The memory plan counts it once per worker,
// so it is small: 1 MiB holds the scans of nearly all web photos (ImageNet's average
// file is 110 KB), and 8 MiB a worker put the plan 24 MiB above a 64 MiB run's peak.
inline constexpr int64_t kKeptScanBytes = int64_t{1} << 20;

struct DecoderOptions {
  // Images with more than this many pixels (width × height) are refused before any pixel
  // buffer is allocated. Default: PIL's DecompressionBombError threshold (2 × 89478485).
  // Must be > 0.
  int64_t max_pixels = 178956970;
  // Working memory a codec may hold beyond the output, read from the header before
  // anything is allocated: a progressive (or multi-scan) JPEG's coefficients (128 B per
  // 8×8 block of each component: ~3 B a pixel at 4:2:0, 6 at 4:4:4, 2 for gray), a
  // lossless WebP's ARGB image (4 B a pixel). A file over it is refused as
  // decode_memory. Counted per worker in the memory plan: glibc keeps a freed block of
  // this size in the freeing thread's arena (its mmap threshold rises to it), so each
  // worker may hold one. > 0. Default 8 MiB: a progressive 4:2:0 photo up to ~2.7 Mpx,
  // 4:4:4 ~1.4 Mpx, gray ~4 Mpx, a lossless WebP ~2 Mpx (web-sized images; larger ones
  // need the knob, and the plan then says what that costs per worker).
  int64_t max_decode_bytes = int64_t{8} << 20;
  // Use libjpeg's fast integer IDCT (JDCT_IFAST) instead of the accurate one (JDCT_ISLOW).
  // Faster, slightly less exact. Default false.
  bool fast_idct = false;
  // Triangle-filtered chroma upsampling (libjpeg's default, what PIL does). false uses
  // libjpeg-turbo's faster merged upsampling (nearest chroma): slightly blockier colour
  // edges, no change to luma. Default true.
  bool fancy_upsampling = true;
  // Allow DCT-domain downscaling of JPEGs when a RegionRequest permits it. Default true.
  bool dct_scaling = true;
  // Its PNG counterpart (and TIFF's, GIF's, BMP's and PPM's; for WebP, libwebp's
  // rescaler to the same size): average a region over 2^i x 2^j pixel blocks (each axis on
  // its own), the largest that still leave the RegionRequest's target size, while the
  // rows are read. It is what keeps a large crop of a large PNG from costing the crop's
  // full-size pixels. Pixels are each block's rounded mean. Default true.
  bool png_box_scaling = true;
  // Decode baseline JPEGs' Huffman data with flowloader's own entropy decoder
  // (internal/huffman_scan.h; the same coefficients as libjpeg-turbo's, faster) instead of
  // libjpeg-turbo's. Other JPEG kinds always use libjpeg-turbo's. Default true.
  bool fast_huffman = true;
  // Memory for seek indexes (with fast_huffman): where each MCU row's Huffman data starts,
  // learned while decoding a file and used by later region decodes of the same file (the
  // next epoch's random crop) to start decoding near the crop rather than at the top-left
  // corner. About 2.3 KB per 500×375 file; once spent, further files are not indexed.
  // 0 turns it off. Default 256 MiB (about 110 000 such files).
  int64_t seek_index_bytes = int64_t{256} << 20;
  // Hand a JPEG region decode over as the file's own Y, Cb and Cr planes (chroma at its
  // stored resolution, no colour conversion; DecodedImage::format kYcc) when the request
  // accepts that (RegionRequest::accept_ycc). A resize to a smaller output then filters
  // chroma at its own resolution and converts colour at the output's size, instead of
  // libjpeg upsampling chroma and converting every decoded pixel. Needs
  // fancy_upsampling and libjpeg-turbo 2.x; YCbCr 3-component files only (gray, CMYK,
  // RGB-coded JPEGs and PNGs stay kRgb). Default true.
  bool planar_ycc = true;
};

// RegionRequest says which part of the original image downstream needs and how large it
// will be after resizing, so the decoder may decode less. `region` is in original-image
// pixels and is clamped to the image.
struct RegionRequest {
  RectF region;
  int target_width = 0;   // The region is resized to this many columns downstream.
  int target_height = 0;  // ... and this many rows.
  // The consumer can take DecodedImage::format kYcc (DecoderOptions::planar_ycc).
  bool accept_ycc = false;
};

// DecodedImage holds RGB pixels covering `covered`, a box of the original image (integer
// pixel edges, containing the requested region) decoded at `scale_x` × `scale_y` decoded
// pixels per original pixel (1 for a full-scale decode, k/8 under DCT scaling, 1/2^i
// for a PNG's block averaging). Original point (x, y) is decoded point
// ((x - covered.x) * scale_x, (y - covered.y) * scale_y). image.width is
// ceil(covered.w * scale_x) (same for height): where `covered` ends at the image edge,
// the last decoded column/row also spans JPEG edge padding (for a PNG: averages the
// pixels its block has). `covered` may exceed the region by a few pixels (iMCU or block
// alignment, one spare column each side).
//
// format kRgb: `image` is 3 channels (RGB). format kYcc: `image` is the 1-channel Y
// plane (the geometry above is its own), and `image.pixels` holds after it the Cb and
// then the Cr plane (ChromaPlanes), each chroma_width x chroma_height bytes, tightly
// packed: JPEG's stored samples, before any upsampling or colour conversion (JFIF
// YCbCr, full range). Chroma sample (i, j) covers decoded luma pixels
// [i * step_x, (i + 1) * step_x) x [j * step_y - phase_y, (j + 1) * step_y - phase_y).
enum class PixelFormat { kRgb, kYcc };

struct ChromaPlanes {
  int width = 0;
  int height = 0;
  int step_x = 1;   // Decoded luma pixels per chroma sample: 1 or 2.
  int step_y = 1;
  int phase_y = 0;  // Luma rows of the first chroma row above the decoded image's row 0.
  ImageView cb(const Image& image) const { return Plane(image, 0); }
  ImageView cr(const Image& image) const { return Plane(image, 1); }

 private:
  ImageView Plane(const Image& image, int which) const {
    const size_t luma = static_cast<size_t>(image.width) * image.height;
    const size_t size = static_cast<size_t>(width) * height;
    return ImageView{image.pixels.data() + luma + which * size, width, height, 1,
                     static_cast<size_t>(width)};
  }
};

struct DecodedImage {
  Image image;
  PixelFormat format = PixelFormat::kRgb;
  ChromaPlanes chroma;  // format kYcc only.
  RectF covered;
  double scale_x = 1.0;
  double scale_y = 1.0;
};

// DecodedSize is a bound on the pixels a decode hands over: width × height RGB pixels
// (a kYcc decode of the same box takes no more), so bytes() is what the output buffer
// may need before it is allocated.
struct DecodedSize {
  int64_t width = 0;
  int64_t height = 0;
  int64_t bytes() const { return width * height * 3; }
};

namespace internal {
class SeekIndexCache;
}  // namespace internal

class Decoder {
 public:
  // Create validates `options` (max_pixels > 0).
  static absl::StatusOr<std::unique_ptr<Decoder>> Create(const DecoderOptions& options);

  // ReadInfo parses only the header. Errors carry a reason from stages/core/sample_error.h:
  // empty_file, unknown_format, truncated, corrupt or too_many_pixels.
  absl::StatusOr<ImageInfo> ReadInfo(absl::string_view bytes) const;

  // Decode decodes `bytes` (whose header is `info`) to RGB into `out`. With a `request`,
  // only the requested region (possibly DCT-scaled) is decoded; without one, everything
  // at full scale. Errors carry a reason (truncated, corrupt, unsupported, ...). A JPEG
  // whose data ends early is an error (truncated), never a silently grey image; corrupt-
  // data warnings from libjpeg are errors too (corrupt). The header is re-read from
  // `bytes` (so `info` may be default-constructed); a request whose region is empty once
  // clamped to the image is InvalidArgument. `out`'s buffer is reused when large enough.
  absl::Status Decode(absl::string_view bytes, const ImageInfo& info,
                      const RegionRequest* request, DecodedImage* out) const;

  // OutputBound is, from the header alone, at least the size Decode's output will have
  // for `info` and `request` (null: the whole image): the region clamped to the image, at
  // the DCT scale or block averaging the decoder will choose, plus its alignment margin.
  // Callers check it against a memory budget before decoding (decode_memory).
  DecodedSize OutputBound(const ImageInfo& info, const RegionRequest* request) const;

  const DecoderOptions& options() const { return options_; }

  // Bytes and files the seek indexes hold now.
  size_t seek_index_bytes() const;
  size_t seek_indexed_files() const;

  ~Decoder();

 private:
  explicit Decoder(const DecoderOptions& options);
  DecoderOptions options_;
  std::unique_ptr<internal::SeekIndexCache> seek_index_;  // Null when off.
};

}  // namespace flowloader::decode

#endif  // FLOWLOADER_STAGES_DECODE_DECODER_H_
