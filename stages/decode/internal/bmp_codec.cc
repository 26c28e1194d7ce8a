// bmp_codec.cc: ReadBmpInfo and DecodeBmp (see more_codecs.h).
//
// Hand-written because BMP is a fixed header, an optional palette or channel masks, and
// uncompressed rows at a stated offset; every read below is checked against the file's
// size, so a lying header costs nothing. Covered: the 12-byte core header and the 40-,
// 52-, 56-, 64-, 108- and 124-byte info headers, 1/2/4/8-bit palettes, 16-bit (5-5-5 or
// masks), 24-bit, 32-bit (BGRX or masks), bottom-up and top-down rows, RLE8 and RLE4.
// Embedded JPEG/PNG is refused as unsupported. Pixels match PIL's BmpImagePlugin: mask
// fields are scaled to 8 bits as v * 255 / max, palette indices past the palette read as
// gray level `index`, RLE codes are replayed as PIL's BmpRleDecoder does (RleRows).
//
// Uncompressed rows are handed to the RowSink top to bottom, each read in place from the
// file at its offset (bottom-up files too); RLE rows as they complete (bottom-up: in any
// order). A decode holds one row of indices and one RGB row besides its output.
//
// Thread-safety: no shared state.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/region_rows.h"

namespace flowloader::decode::internal {
namespace {

constexpr size_t kFileHeaderBytes = 14;
constexpr uint32_t kBiRgb = 0;
constexpr uint32_t kBiRle8 = 1;
constexpr uint32_t kBiRle4 = 2;
constexpr uint32_t kBiBitfields = 3;
constexpr uint32_t kBiAlphaBitfields = 6;

uint32_t Le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t Le32(const uint8_t* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Channel is one colour's bit field in a 16- or 32-bit pixel.
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;  // mask >> shift; 0 for an absent channel (reads as 0).

  static Channel FromMask(uint32_t mask) {
    Channel c;
    c.mask = mask;
    if (mask == 0) return c;
    while (((mask >> c.shift) & 1) == 0) ++c.shift;
    c.max = mask >> c.shift;
    return c;
  }
  uint8_t Get(uint32_t pixel) const {
    if (max == 0) return 0;
    return static_cast<uint8_t>(uint64_t{(pixel & mask) >> shift} * 255 / max);
  }
};

// BmpHeader is what the rows need, parsed and checked against the file size.
struct BmpHeader {
  int width = 0;
  int height = 0;
  bool top_down = false;
  int bits = 0;
  uint32_t compression = kBiRgb;
  size_t pixel_offset = 0;
  size_t row_bytes = 0;          // Padded to 4 bytes.
  std::vector<uint8_t> palette;  // RGB triplets (bits <= 8).
  Channel red, green, blue;      // bits 16 / 32.
};

absl::Status Corrupt(const std::string& what) {
  return DecodeError(reason::kCorrupt, "BMP: " + what);
}

absl::Status Truncated(const std::string& what) {
  return DecodeError(reason::kTruncated, "BMP: " + what);
}

// ReadMasks sets the channels for 16/32-bit files: BI_RGB's fixed layouts, or the masks
// after a 40-byte header (BI_BITFIELDS) or inside a longer one.
absl::Status ReadMasks(absl::string_view bytes, BmpHeader* h) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (h->compression == kBiRgb) {
    if (h->bits == 16) {
      h->red = Channel::FromMask(0x7C00);
      h->green = Channel::FromMask(0x03E0);
      h->blue = Channel::FromMask(0x001F);
    } else {
      h->red = Channel::FromMask(0xFF0000);
      h->green = Channel::FromMask(0xFF00);
      h->blue = Channel::FromMask(0xFF);
    }
    return absl::OkStatus();
  }
  const size_t at = kFileHeaderBytes + 40;  // Inside a long header, or after a 40-byte one.
  if (bytes.size() < at + 12) return Truncated("file ends inside its channel masks");
  h->red = Channel::FromMask(Le32(p + at));
  h->green = Channel::FromMask(Le32(p + at + 4));
  h->blue = Channel::FromMask(Le32(p + at + 8));
  return absl::OkStatus();
}

// ReadPalette reads `colors` entries of 3 (core header) or 4 bytes, stored BGR(X).
absl::Status ReadPalette(absl::string_view bytes, size_t start, size_t entry_bytes, uint32_t colors,
                         BmpHeader* h) {
  if (colors == 0 || colors > (1u << h->bits)) colors = 1u << h->bits;
  if (start + colors * entry_bytes > bytes.size()) {
    return Truncated("file ends inside its palette");
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + start;
  // Indices past the palette read as gray level `index`, as PIL's palette starts as a
  // gray ramp.
  h->palette.resize(3 * (size_t{1} << h->bits));
  for (size_t i = 0; i < h->palette.size(); ++i) h->palette[i] = static_cast<uint8_t>(i / 3);
  for (uint32_t i = 0; i < colors; ++i, p += entry_bytes) {
    h->palette[3 * i] = p[2];
    h->palette[3 * i + 1] = p[1];
    h->palette[3 * i + 2] = p[0];
  }
  return absl::OkStatus();
}

absl::Status ParseHeader(absl::string_view bytes, const DecoderOptions& options, bool with_palette,
                         BmpHeader* h) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < kFileHeaderBytes + 16) return Truncated("file ends inside its header");
  h->pixel_offset = Le32(p + 10);
  const size_t header_size = Le32(p + 14);
  int64_t width = 0, height = 0;
  uint32_t colors = 0;
  if (header_size == 12) {
    width = Le16(p + 18);
    height = Le16(p + 20);
    h->bits = static_cast<int>(Le16(p + 24));
  } else if (header_size == 40 || header_size == 52 || header_size == 56 || header_size == 64 ||
             header_size == 108 || header_size == 124) {
    if (bytes.size() < kFileHeaderBytes + 40) return Truncated("file ends inside its header");
    width = static_cast<int32_t>(Le32(p + 18));
    height = static_cast<int32_t>(Le32(p + 22));
    h->bits = static_cast<int>(Le16(p + 28));
    h->compression = Le32(p + 30);
    colors = Le32(p + 46);
  } else {
    return Corrupt(absl::StrFormat("unknown header size %d", header_size));
  }
  h->top_down = height < 0;
  if (height < 0) height = -height;
  char message[160];
  const absl::string_view problem = SizeProblem(width, height, options, message, sizeof(message));
  if (!problem.empty()) return DecodeError(problem, absl::StrCat("BMP: ", message));
  h->width = static_cast<int>(width);
  h->height = static_cast<int>(height);
  const int b = h->bits;
  if (b != 1 && b != 2 && b != 4 && b != 8 && b != 16 && b != 24 && b != 32) {
    return Corrupt(absl::StrFormat("%d bits per pixel", b));
  }
  const bool masks = h->compression == kBiBitfields || h->compression == kBiAlphaBitfields;
  if (!(h->compression == kBiRgb || (masks && (b == 16 || b == 32)) ||
        (h->compression == kBiRle8 && b == 8) || (h->compression == kBiRle4 && b == 4))) {
    return DecodeError(reason::kUnsupported,
                       absl::StrFormat("BMP: compression %d with %d bits per pixel is not "
                                       "supported (embedded JPEG/PNG is not read)",
                                       h->compression, b));
  }
  h->row_bytes = ((static_cast<size_t>(h->width) * b + 31) / 32) * 4;
  if (!with_palette) return absl::OkStatus();
  if (b >= 16) return ReadMasks(bytes, h);
  return ReadPalette(bytes, kFileHeaderBytes + header_size, header_size == 12 ? 3 : 4, colors, h);
}

// PixelRow converts file row `src` to RGB.
void PixelRow(const BmpHeader& h, const uint8_t* src, uint8_t* rgb) {
  const int b = h.bits;
  for (int x = 0; x < h.width; ++x, rgb += 3) {
    if (b <= 8) {
      const int per_byte = 8 / b;
      const int shift = 8 - b * (1 + x % per_byte);
      const uint32_t index = (src[x / per_byte] >> shift) & ((1u << b) - 1);
      std::memcpy(rgb, h.palette.data() + 3 * index, 3);
    } else if (b == 24) {
      const uint8_t* s = src + 3 * static_cast<size_t>(x);
      rgb[0] = s[2];
      rgb[1] = s[1];
      rgb[2] = s[0];
    } else {
      const uint32_t v =
          b == 16 ? Le16(src + 2 * static_cast<size_t>(x)) : Le32(src + 4 * static_cast<size_t>(x));
      rgb[0] = h.red.Get(v);
      rgb[1] = h.green.Get(v);
      rgb[2] = h.blue.Get(v);
    }
  }
}

// RleRows replays PIL's BmpRleDecoder: the codes fill a linear run of palette indices,
// row after row in file order, with PIL's quirks kept (so its pixels are ours): an
// encoded run is clipped at the row's end while an absolute run is not and spills into
// the next row, a delta adds right + up × width zero indices (PIL 9.4 reads its two
// bytes twice over, a bug not copied: tests compare those files to the image they encode),
// an RLE4 absolute run of n
// pixels reads n / 2 bytes, and an absolute run ends on an even file offset. Each row is
// converted and put as soon as its last index arrives.
class RleRows {
 public:
  RleRows(const BmpHeader& h, RowSink* sink)
      : h_(h),
        sink_(sink),
        total_(static_cast<uint64_t>(h.width) * h.height),
        indices_(static_cast<size_t>(h.width), 0),
        rgb_(3 * static_cast<size_t>(h.width)) {}

  bool full() const { return pos_ >= total_; }
  uint64_t pos() const { return pos_; }

  void Push(uint8_t index) {
    if (full()) return;
    indices_[pos_ % h_.width] = index;
    if (++pos_ % h_.width == 0) PutRow();
  }
  void Zeros(uint64_t n) {
    for (; n > 0 && !full(); --n) Push(0);
  }

 private:
  void PutRow() {
    const int file_row = static_cast<int>(pos_ / h_.width) - 1;
    const int y = h_.top_down ? file_row : h_.height - 1 - file_row;
    for (int x = 0; x < h_.width; ++x) {
      std::memcpy(&rgb_[3 * static_cast<size_t>(x)], h_.palette.data() + 3 * indices_[x], 3);
    }
    sink_->Put(y, rgb_.data());
    std::fill(indices_.begin(), indices_.end(), 0);
  }

  const BmpHeader& h_;
  RowSink* sink_;
  const uint64_t total_;
  uint64_t pos_ = 0;
  std::vector<uint8_t> indices_;
  std::vector<uint8_t> rgb_;
};

// DecodeRle runs the RLE8/RLE4 codes from the pixel offset until the image is full.
absl::Status DecodeRle(absl::string_view bytes, const BmpHeader& h, RowSink* sink) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  const bool rle4 = h.compression == kBiRle4;
  RleRows rows(h, sink);
  size_t p = h.pixel_offset;
  int64_t x = 0;  // PIL's column counter, not clamped by absolute runs.
  bool ended = false;
  while (!rows.full() && !ended && p + 2 <= size) {
    const unsigned n = b[p], code = b[p + 1];
    p += 2;
    if (n > 0) {  // Encoded: n copies of `code` (RLE4: its two nibbles in turn).
      const int64_t count = std::min<int64_t>(n, std::max<int64_t>(0, h.width - x));
      for (int64_t i = 0; i < count; ++i) {
        rows.Push(static_cast<uint8_t>(!rle4 ? code : (i % 2 == 0 ? code >> 4 : code & 15)));
      }
      x += count;
    } else if (code == 0) {  // End of line.
      while (rows.pos() % h.width != 0) rows.Push(0);
      x = 0;
    } else if (code == 1) {  // End of bitmap.
      ended = true;
    } else if (code == 2) {  // Delta.
      if (p + 2 > size) break;
      rows.Zeros(b[p] + uint64_t{b[p + 1]} * h.width);
      p += 2;
      x = static_cast<int64_t>(rows.pos() % h.width);
    } else {  // Absolute: `code` literal indices.
      const size_t want = rle4 ? code / 2 : code;
      const size_t have = std::min(want, size - p);
      for (size_t i = 0; i < have; ++i) {
        if (rle4) {
          rows.Push(b[p + i] >> 4);
          rows.Push(b[p + i] & 15);
        } else {
          rows.Push(b[p + i]);
        }
      }
      p += have;
      if (have < want) break;
      x += code;
      if (p % 2 != 0) ++p;
    }
  }
  if (rows.full()) return absl::OkStatus();
  if (ended) return Corrupt("RLE data ends (end of bitmap) before the image is complete");
  return Truncated("file ends inside its RLE data");
}

}  // namespace

absl::StatusOr<ImageInfo> ReadBmpInfo(absl::string_view bytes, const DecoderOptions& options) {
  BmpHeader h;
  if (absl::Status s = ParseHeader(bytes, options, /*with_palette=*/false, &h); !s.ok()) {
    return s;
  }
  return ImageInfo{Format::kBmp, h.width, h.height, h.bits == 32 ? 4 : 3};
}

absl::Status DecodeBmp(absl::string_view bytes, const DecoderOptions& options,
                       const RegionRequest* request, DecodedImage* out) {
  BmpHeader h;
  if (absl::Status s = ParseHeader(bytes, options, /*with_palette=*/true, &h); !s.ok()) {
    return s;
  }
  const bool rle = h.compression == kBiRle8 || h.compression == kBiRle4;
  if (rle) {
    RowSink sink;
    // Bottom-up RLE rows complete bottom first: out of order for the sink.
    if (absl::Status s = sink.Start(options, request, h.width, h.height, !h.top_down, out);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = DecodeRle(bytes, h, &sink); !s.ok()) return s;
    sink.Finish();
    return absl::OkStatus();
  }
  const size_t rows_bytes = h.row_bytes * static_cast<size_t>(h.height);
  if (h.pixel_offset > bytes.size() || rows_bytes > bytes.size() - h.pixel_offset) {
    return Truncated(absl::StrFormat("%d bytes of rows at offset %d, file has %d", rows_bytes,
                                     h.pixel_offset, bytes.size()));
  }
  RowSink sink;
  if (absl::Status s = sink.Start(options, request, h.width, h.height, false, out); !s.ok()) {
    return s;
  }
  std::vector<uint8_t> rgb(3 * static_cast<size_t>(h.width));
  const auto* rows = reinterpret_cast<const uint8_t*>(bytes.data()) + h.pixel_offset;
  for (int y = 0; y < h.height; ++y) {
    const int file_row = h.top_down ? y : h.height - 1 - y;
    PixelRow(h, rows + h.row_bytes * static_cast<size_t>(file_row), rgb.data());
    sink.Put(y, rgb.data());
  }
  sink.Finish();
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
