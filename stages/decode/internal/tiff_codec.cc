// tiff_codec.cc: ReadTiffInfo and DecodeTiff (see more_codecs.h), through libtiff: the
// first directory (page), as PIL opens it.
//
// Read: 8- and 16-bit RGB (any extra samples, e.g. alpha, dropped), 1/2/4/8/16-bit gray
// (min-is-black or min-is-white, an alpha sample dropped), 1/2/4/8-bit palette, 8-bit
// CMYK (converted as PIL converts it), and JPEG-compressed YCbCr (libtiff converts it to
// RGB); any compression libtiff was built with; strips or tiles; interleaved samples.
// Refused as unsupported: separate sample planes, float or signed samples, Lab, YCbCr
// without JPEG, old-style JPEG. Pixels
// are the samples themselves scaled to 8 bits the way PIL's unpackers do (v * 255 /
// (2^bits - 1) for 1/2/4 bits, the high byte for 16 bits, colour maps >> 8), which for
// PIL's own gray "I;16" mode means we keep the high byte where PIL would clip.
//
// Rows come from TIFFReadScanline one at a time (tiles: one row of tiles at a time,
// bounded by kMaxTiffBandBytes). libtiff reads the caller's bytes as a mapped file, so
// strip data is decoded in place, not copied; every row is decoded even below the crop,
// so whether a damaged file decodes never depends on the crop. libtiff reports errors
// through a per-handle handler (TIFFOpenOptions), never the process-wide one.
//
// Thread-safety: no shared state; each call owns its TIFF handle and handlers.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/region_rows.h"
#include "tiffio.h"

namespace flowloader::decode::internal {
namespace {

// kMaxSingleAlloc caps any one libtiff allocation (its own default is 256 MiB): a
// declared strip or tag array larger than any real file's fails as corrupt instead.
constexpr tmsize_t kMaxSingleAlloc = tmsize_t{64} << 20;

// TiffSource is the file libtiff reads: the caller's bytes, plus the last error text.
struct TiffSource {
  const uint8_t* data = nullptr;
  toff_t size = 0;
  toff_t pos = 0;
  char message[256] = "";
};

tmsize_t ReadProc(thandle_t h, void* dst, tmsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  if (n <= 0 || s->pos >= s->size) return 0;
  const toff_t take = std::min<toff_t>(static_cast<toff_t>(n), s->size - s->pos);
  std::memcpy(dst, s->data + s->pos, take);
  s->pos += take;
  return static_cast<tmsize_t>(take);
}
tmsize_t WriteProc(thandle_t, void*, tmsize_t) { return -1; }
toff_t SeekProc(thandle_t h, toff_t offset, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  toff_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
  s->pos = base + offset;  // Past the end is allowed; reads there return 0 bytes.
  return s->pos;
}
int CloseProc(thandle_t) { return 0; }
toff_t SizeProc(thandle_t h) { return static_cast<TiffSource*>(h)->size; }
int MapProc(thandle_t h, void** base, toff_t* size) {
  auto* s = static_cast<TiffSource*>(h);
  *base = const_cast<uint8_t*>(s->data);  // libtiff only reads a read-only mapping.
  *size = s->size;
  return 1;
}
void UnmapProc(thandle_t, void*, toff_t) {}

int ErrorHandler(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffSource*>(user);
  if (s->message[0] == '\0') {  // The first error is the cause; later ones follow from it.
    char text[200];
    std::vsnprintf(text, sizeof(text), fmt, ap);
    std::snprintf(s->message, sizeof(s->message), "%s: %s", module != nullptr ? module : "", text);
  }
  return 1;
}
int WarningHandler(TIFF*, void*, const char*, const char*, va_list) { return 1; }

// TiffFile opens libtiff on bytes and closes it on destruction.
class TiffFile {
 public:
  explicit TiffFile(absl::string_view bytes) {
    source_.data = reinterpret_cast<const uint8_t*>(bytes.data());
    source_.size = bytes.size();
    TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, kMaxSingleAlloc);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, ErrorHandler, &source_);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, WarningHandler, &source_);
    tif_ = TIFFClientOpenExt("image", "r", &source_, ReadProc, WriteProc, SeekProc, CloseProc,
                             SizeProc, MapProc, UnmapProc, opts);
    TIFFOpenOptionsFree(opts);
  }
  ~TiffFile() {
    if (tif_ != nullptr) TIFFClose(tif_);
  }
  TiffFile(const TiffFile&) = delete;
  TiffFile& operator=(const TiffFile&) = delete;

  TIFF* get() const { return tif_; }

  // Error is the status for a failed libtiff call: truncated when the data it needs
  // lies past the end of the file, corrupt otherwise.
  absl::Status Error() const {
    const bool truncated = tif_ != nullptr ? DataPastEnd() : HeaderPastEnd();
    return DecodeError(
        truncated ? reason::kTruncated : reason::kCorrupt,
        absl::StrCat("TIFF: ", source_.message[0] != '\0' ? source_.message : "decode error"));
  }

 private:
  // HeaderPastEnd: the file is shorter than its header or its first directory's offset.
  bool HeaderPastEnd() const {
    if (source_.size < 8) return true;
    const uint8_t* p = source_.data;
    const bool le = p[0] == 'I';
    const unsigned version = le ? (p[2] | p[3] << 8) : (p[2] << 8 | p[3]);
    if (version == 43) return source_.size < 16;  // BigTIFF: an 8-byte offset follows.
    const uint32_t offset = le ? (p[4] | p[5] << 8 | p[6] << 16 | uint32_t{p[7]} << 24)
                               : (uint32_t{p[4]} << 24 | p[5] << 16 | p[6] << 8 | p[7]);
    return offset >= source_.size;
  }
  // DataPastEnd: a strip or tile of the directory ends past the end of the file.
  bool DataPastEnd() const {
    const uint32_t n = TIFFIsTiled(tif_) ? TIFFNumberOfTiles(tif_) : TIFFNumberOfStrips(tif_);
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t offset = TIFFGetStrileOffset(tif_, i);
      const uint64_t count = TIFFGetStrileByteCount(tif_, i);
      if (offset > source_.size || count > source_.size - offset) return true;
    }
    return false;
  }

  TiffSource source_;
  TIFF* tif_ = nullptr;
};

// Layout is what the row conversion needs from the directory.
struct Layout {
  uint32_t width = 0, height = 0;
  uint16_t bits = 1, samples = 1, photometric = 0;
  bool tiled = false;
  uint32_t tile_width = 0, tile_height = 0;
  const uint16_t* colormap[3] = {nullptr, nullptr, nullptr};
};

absl::Status Unsupported(const std::string& what) {
  return DecodeError(reason::kUnsupported, absl::StrCat("TIFF: ", what));
}

// ReadLayout reads and checks the directory's fields; `for_decode` also prepares
// JPEG-compressed YCbCr for RGB output.
absl::Status ReadLayout(const TiffFile& file, const DecoderOptions& options, bool for_decode,
                        Layout* l) {
  TIFF* tif = file.get();
  if (tif == nullptr) return file.Error();
  uint16_t planar = PLANARCONFIG_CONTIG, format = SAMPLEFORMAT_UINT, compression = 1;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &l->width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &l->height);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &l->bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &l->samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  if (!TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &l->photometric)) {
    l->photometric = l->samples >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  }
  char message[160];
  const absl::string_view problem =
      SizeProblem(l->width, l->height, options, message, sizeof(message));
  if (!problem.empty()) return DecodeError(problem, absl::StrCat("TIFF: ", message));
  if (format != SAMPLEFORMAT_UINT) return Unsupported(absl::StrFormat("sample format %d", format));
  if (planar != PLANARCONFIG_CONTIG && l->samples > 1) {
    return Unsupported("separate sample planes (PlanarConfiguration 2)");
  }
  if (!TIFFIsCODECConfigured(compression) || compression == COMPRESSION_OJPEG) {
    return Unsupported(absl::StrFormat("compression %d", compression));
  }
  if (l->photometric == PHOTOMETRIC_YCBCR && compression == COMPRESSION_JPEG) {
    if (for_decode) TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
    l->photometric = PHOTOMETRIC_RGB;
  }
  const int b = l->bits;
  const bool gray =
      l->photometric == PHOTOMETRIC_MINISBLACK || l->photometric == PHOTOMETRIC_MINISWHITE;
  uint16_t inkset = INKSET_CMYK;
  TIFFGetFieldDefaulted(tif, TIFFTAG_INKSET, &inkset);
  const bool ok =
      (gray && (b == 1 || b == 2 || b == 4 || b == 8 || b == 16) && l->samples <= 2) ||
      (l->photometric == PHOTOMETRIC_SEPARATED && inkset == INKSET_CMYK && b == 8 &&
       l->samples >= 4) ||
      (l->photometric == PHOTOMETRIC_RGB && (b == 8 || b == 16) && l->samples >= 3) ||
      (l->photometric == PHOTOMETRIC_PALETTE && b <= 8 && (b & (b - 1)) == 0 && l->samples == 1);
  if (!ok) {
    return Unsupported(absl::StrFormat("photometric %d with %d samples of %d bits", l->photometric,
                                       l->samples, b));
  }
  if (l->photometric == PHOTOMETRIC_PALETTE &&
      !TIFFGetField(tif, TIFFTAG_COLORMAP, &l->colormap[0], &l->colormap[1], &l->colormap[2])) {
    return DecodeError(reason::kCorrupt, "TIFF: palette image without a colour map");
  }
  l->tiled = TIFFIsTiled(tif) != 0;
  if (l->tiled) {
    TIFFGetField(tif, TIFFTAG_TILEWIDTH, &l->tile_width);
    TIFFGetField(tif, TIFFTAG_TILELENGTH, &l->tile_height);
    if (l->tile_width == 0 || l->tile_height == 0) {
      return DecodeError(reason::kCorrupt, "TIFF: tile size is 0");
    }
    // Tiles are placed side by side in whole bytes (TIFF wants widths in 16s anyway).
    if (uint64_t{l->tile_width} * l->samples * l->bits % 8 != 0) {
      return Unsupported(
          absl::StrFormat("tile width %d with %d-bit samples", l->tile_width, l->bits));
    }
  }
  return absl::OkStatus();
}

// Sample reads sample `i` of a row of `bits`-bit samples (MSB first below 8 bits, host
// order for 16, as libtiff hands them over), scaled to 8 bits.
uint8_t Sample(const uint8_t* row, size_t i, int bits) {
  switch (bits) {
    case 8:
      return row[i];
    case 16: {
      uint16_t v;
      std::memcpy(&v, row + 2 * i, 2);
      return static_cast<uint8_t>(v >> 8);
    }
    default: {
      const size_t bit = i * bits;
      const unsigned v = (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
      return static_cast<uint8_t>(v * 255 / ((1u << bits) - 1));
    }
  }
}

// MulDiv255 is a·b/255 rounded, as PIL computes it.
uint8_t MulDiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

// RowToRgb converts one stored row to RGB.
void RowToRgb(const Layout& l, const uint8_t* row, uint8_t* rgb) {
  const size_t spp = l.samples;
  if (l.photometric == PHOTOMETRIC_RGB && l.bits == 8 && spp == 3) {  // Already RGB.
    std::memcpy(rgb, row, 3 * static_cast<size_t>(l.width));
    return;
  }
  for (uint32_t x = 0; x < l.width; ++x, rgb += 3) {
    const size_t first = x * spp;
    if (l.photometric == PHOTOMETRIC_RGB) {
      for (int c = 0; c < 3; ++c) rgb[c] = Sample(row, first + c, l.bits);
    } else if (l.photometric == PHOTOMETRIC_SEPARATED) {
      // PIL's convert('RGB') of CMYK: R = (255 - K) - C·(255 - K)/255, rounded.
      const int not_k = 255 - row[first + 3];
      for (int c = 0; c < 3; ++c)
        rgb[c] = static_cast<uint8_t>(not_k - MulDiv255(row[first + c], not_k));
    } else if (l.photometric == PHOTOMETRIC_PALETTE) {
      const size_t bit = first * l.bits;
      const unsigned index = l.bits == 8
                                 ? row[first]
                                 : (row[bit / 8] >> (8 - l.bits - bit % 8)) & ((1u << l.bits) - 1);
      for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>(l.colormap[c][index] >> 8);
    } else {
      uint8_t v = Sample(row, first, l.bits);
      if (l.photometric == PHOTOMETRIC_MINISWHITE) v = 255 - v;
      rgb[0] = rgb[1] = rgb[2] = v;
    }
  }
}

absl::Status DecodeStrips(const TiffFile& file, const Layout& l, RowSink* sink) {
  TIFF* tif = file.get();
  const tmsize_t line_bytes = TIFFScanlineSize(tif);
  const uint64_t need = (uint64_t{l.width} * l.samples * l.bits + 7) / 8;
  if (line_bytes <= 0 || static_cast<uint64_t>(line_bytes) < need) return file.Error();
  std::vector<uint8_t> line(static_cast<size_t>(line_bytes));
  std::vector<uint8_t> rgb(3 * static_cast<size_t>(l.width));
  for (uint32_t y = 0; y < l.height; ++y) {
    if (TIFFReadScanline(tif, line.data(), y, 0) < 0) return file.Error();
    RowToRgb(l, line.data(), rgb.data());
    sink->Put(static_cast<int>(y), rgb.data());
  }
  return absl::OkStatus();
}

// DecodeTiles decodes one row of tiles at a time into a band of tile_height rows.
absl::Status DecodeTiles(const TiffFile& file, const Layout& l, RowSink* sink) {
  TIFF* tif = file.get();
  const tmsize_t tile_bytes = TIFFTileSize(tif);
  const tmsize_t tile_row_bytes = TIFFTileRowSize(tif);
  if (tile_bytes <= 0 || tile_row_bytes <= 0) return file.Error();
  if (static_cast<uint64_t>(tile_bytes) < uint64_t{l.tile_height} * tile_row_bytes) {
    return Unsupported("tiles smaller than their rows (subsampled tiles)");
  }
  const uint64_t across = (uint64_t{l.width} + l.tile_width - 1) / l.tile_width;
  const uint64_t band_stride = across * static_cast<uint64_t>(tile_row_bytes);
  const uint64_t band_bytes = band_stride * l.tile_height;
  if (band_bytes > kMaxTiffBandBytes || static_cast<uint64_t>(tile_bytes) > kMaxTiffBandBytes) {
    return Unsupported(absl::StrFormat("%dx%d tiles need a %d-byte band (limit %d)", l.tile_width,
                                       l.tile_height, band_bytes, kMaxTiffBandBytes));
  }
  std::vector<uint8_t> tile(static_cast<size_t>(tile_bytes));
  std::vector<uint8_t> band(static_cast<size_t>(band_bytes));
  std::vector<uint8_t> rgb(3 * static_cast<size_t>(l.width));
  for (uint32_t ty = 0; ty < l.height; ty += l.tile_height) {
    for (uint64_t i = 0; i < across; ++i) {
      const uint32_t tx = static_cast<uint32_t>(i * l.tile_width);
      if (TIFFReadTile(tif, tile.data(), tx, ty, 0, 0) < 0) return file.Error();
      for (uint32_t r = 0; r < l.tile_height; ++r) {
        std::memcpy(band.data() + r * band_stride + i * tile_row_bytes,
                    tile.data() + r * static_cast<size_t>(tile_row_bytes),
                    static_cast<size_t>(tile_row_bytes));
      }
    }
    const uint32_t rows = std::min(l.tile_height, l.height - ty);
    for (uint32_t r = 0; r < rows; ++r) {
      RowToRgb(l, band.data() + r * band_stride, rgb.data());
      sink->Put(static_cast<int>(ty + r), rgb.data());
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageInfo> ReadTiffInfo(absl::string_view bytes, const DecoderOptions& options) {
  TiffFile file(bytes);
  Layout l;
  if (absl::Status s = ReadLayout(file, options, /*for_decode=*/false, &l); !s.ok()) return s;
  return ImageInfo{Format::kTiff, static_cast<int>(l.width), static_cast<int>(l.height),
                   std::clamp<int>(l.samples, 1, 4)};
}

absl::Status DecodeTiff(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, DecodedImage* out) {
  TiffFile file(bytes);
  Layout l;
  if (absl::Status s = ReadLayout(file, options, /*for_decode=*/true, &l); !s.ok()) return s;
  RowSink sink;
  if (absl::Status s = sink.Start(options, request, static_cast<int>(l.width),
                                  static_cast<int>(l.height), /*any_order=*/false, out);
      !s.ok()) {
    return s;
  }
  absl::Status s = l.tiled ? DecodeTiles(file, l, &sink) : DecodeStrips(file, l, &sink);
  if (!s.ok()) return s;
  sink.Finish();
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
