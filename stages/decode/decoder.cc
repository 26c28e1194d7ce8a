// decoder.cc: Decoder (see decoder.h): format sniffing and dispatch to the codecs.
//
// The format comes from the first bytes only, never from a file name: ImageNet ships PNG
// and CMYK files named .JPEG, and text with an image extension is simply not an image.
//
// Thread-safety: a Decoder is immutable; all per-call state lives in the codec calls.
#include "stages/decode/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/jpeg_codec.h"
#include "stages/decode/internal/more_codecs.h"
#include "stages/decode/internal/png_codec.h"
#include "stages/decode/internal/region_rows.h"
#include "stages/decode/internal/seek_index_cache.h"

namespace flowloader::decode {
namespace {

bool HasPrefix(absl::string_view bytes, absl::string_view magic) {
  // A file shorter than its magic still counts when what is there matches, so that a
  // cut-off image is reported as truncated rather than as not an image.
  const size_t n = std::min(bytes.size(), magic.size());
  return bytes.substr(0, n) == magic.substr(0, n);
}

bool IsPnmMagic(absl::string_view bytes) {
  if (bytes[0] != 'P' || bytes[1] < '1' || bytes[1] > '6') return false;
  if (bytes.size() == 2) return true;
  const char c = bytes[2];
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '#';
}

// Sniff names the format from magic bytes: JPEG SOI + a marker (FF D8 FF), PNG's
// 8-byte signature, RIFF + WEBP, TIFF's II*\0 / MM\0* (and BigTIFF's +), GIF8, BM,
// and P1..P6 + whitespace (Netpbm). At least two bytes must match.
Format Sniff(absl::string_view bytes) {
  if (bytes.size() < 2) return Format::kUnknown;
  if (HasPrefix(bytes, "\xFF\xD8\xFF")) return Format::kJpeg;
  if (HasPrefix(bytes, "\x89PNG\r\n\x1A\n")) return Format::kPng;
  if (HasPrefix(bytes, "RIFF") && (bytes.size() < 12 || bytes.substr(8, 4) == "WEBP")) {
    return Format::kWebp;
  }
  if (HasPrefix(bytes, absl::string_view("II*\0", 4)) ||
      HasPrefix(bytes, absl::string_view("MM\0*", 4)) ||
      HasPrefix(bytes, absl::string_view("II+\0", 4)) ||
      HasPrefix(bytes, absl::string_view("MM\0+", 4))) {
    return Format::kTiff;
  }
  if (HasPrefix(bytes, "GIF8")) return Format::kGif;
  if (HasPrefix(bytes, "BM")) return Format::kBmp;
  if (IsPnmMagic(bytes)) return Format::kPnm;
  return Format::kUnknown;
}

absl::Status SniffError(absl::string_view bytes) {
  if (bytes.empty()) return internal::DecodeError(reason::kEmptyFile, "file is empty");
  const auto byte = [&](size_t i) {
    return i < bytes.size() ? static_cast<unsigned>(static_cast<uint8_t>(bytes[i])) : 0u;
  };
  return internal::DecodeError(
      reason::kUnknownFormat,
      absl::StrFormat("not an image format flowloader reads (JPEG, PNG, WebP, TIFF, GIF, BMP, "
                      "PPM/PGM/PBM): starts with %02x %02x %02x %02x, %d bytes",
                      byte(0), byte(1), byte(2), byte(3), bytes.size()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> Decoder::Create(const DecoderOptions& options) {
  if (options.max_pixels <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_pixels must be > 0, got %d", options.max_pixels));
  }
  if (options.max_decode_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_decode_bytes must be > 0, got %d", options.max_decode_bytes));
  }
  if (options.seek_index_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "seek_index_bytes must be >= 0, got %d", options.seek_index_bytes));
  }
  return std::unique_ptr<Decoder>(new Decoder(options));
}

Decoder::Decoder(const DecoderOptions& options) : options_(options) {
  if (options.fast_huffman && options.seek_index_bytes > 0) {
    seek_index_ = std::make_unique<internal::SeekIndexCache>(
        static_cast<size_t>(options.seek_index_bytes));
  }
}

Decoder::~Decoder() = default;

size_t Decoder::seek_index_bytes() const {
  return seek_index_ != nullptr ? seek_index_->bytes() : 0;
}

size_t Decoder::seek_indexed_files() const {
  return seek_index_ != nullptr ? seek_index_->files() : 0;
}

absl::StatusOr<ImageInfo> Decoder::ReadInfo(absl::string_view bytes) const {
  switch (Sniff(bytes)) {
    case Format::kJpeg:
      return internal::ReadJpegInfo(bytes, options_);
    case Format::kPng:
      return internal::ReadPngInfo(bytes, options_);
    case Format::kWebp:
      return internal::ReadWebpInfo(bytes, options_);
    case Format::kTiff:
      return internal::ReadTiffInfo(bytes, options_);
    case Format::kGif:
      return internal::ReadGifInfo(bytes, options_);
    case Format::kBmp:
      return internal::ReadBmpInfo(bytes, options_);
    case Format::kPnm:
      return internal::ReadPnmInfo(bytes, options_);
    case Format::kUnknown:
      break;
  }
  return SniffError(bytes);
}

DecodedSize Decoder::OutputBound(const ImageInfo& info, const RegionRequest* request) const {
  const int64_t width = std::max(info.width, 0), height = std::max(info.height, 0);
  if (request == nullptr || !(request->region.w > 0 && request->region.h > 0)) {
    return DecodedSize{width, height};
  }
  // The region clamped to the image, widened to whole pixels (a NaN box counts as all).
  const double x0 = std::max(0.0, request->region.x), y0 = std::max(0.0, request->region.y);
  const double x1 = std::min<double>(width, request->region.x + request->region.w);
  const double y1 = std::min<double>(height, request->region.y + request->region.h);
  if (!(x1 > x0 && y1 > y0)) return DecodedSize{width, height};
  const double rw = std::ceil(x1) - std::floor(x0), rh = std::ceil(y1) - std::floor(y0);
  const int tw = request->target_width, th = request->target_height;
  if (info.format == Format::kJpeg) {
    // k/8 of the region, which the decoder widens to whole iMCUs (up to 16 pixels a side
    // at full scale) and one spare column each side.
    const int k = options_.dct_scaling ? internal::ChooseDctScale(x1 - x0, y1 - y0, tw, th) : 8;
    const auto side = [k](double extent, int64_t limit) {
      return std::min<int64_t>(limit, static_cast<int64_t>(std::ceil((extent + 34) * k / 8.0)));
    };
    return DecodedSize{side(rw, width), side(rh, height)};
  }
  // The row-decoded formats and WebP: blocks of 2^shift pixels, aligned to the region.
  const bool blocks = options_.png_box_scaling && tw > 0 && th > 0;
  const auto side = [](double extent, int shift, int64_t limit) {
    const int64_t block = int64_t{1} << shift;
    return std::min<int64_t>(limit, static_cast<int64_t>(std::ceil(extent + 2)) / block + 2);
  };
  return DecodedSize{side(rw, blocks ? internal::BoxShift(x1 - x0, tw) : 0, width),
                     side(rh, blocks ? internal::BoxShift(y1 - y0, th) : 0, height)};
}

absl::Status Decoder::Decode(absl::string_view bytes, const ImageInfo& info,
                             const RegionRequest* request, DecodedImage* out) const {
  // The codecs re-read the header from `bytes` rather than trusting `info`, so a stale
  // or hand-made info can never make them allocate more than max_pixels allows.
  const Format format = Sniff(bytes);
  if (info.format != Format::kUnknown && format != Format::kUnknown && info.format != format) {
    return absl::InvalidArgumentError("ImageInfo describes a different format than bytes");
  }
  switch (format) {
    case Format::kJpeg:
      return internal::DecodeJpeg(bytes, options_, request, seek_index_.get(), out);
    case Format::kPng:
      return internal::DecodePng(bytes, options_, request, out);
    case Format::kWebp:
      return internal::DecodeWebp(bytes, options_, request, out);
    case Format::kTiff:
      return internal::DecodeTiff(bytes, options_, request, out);
    case Format::kGif:
      return internal::DecodeGif(bytes, options_, request, out);
    case Format::kBmp:
      return internal::DecodeBmp(bytes, options_, request, out);
    case Format::kPnm:
      return internal::DecodePnm(bytes, options_, request, out);
    case Format::kUnknown:
      break;
  }
  return SniffError(bytes);
}

}  // namespace flowloader::decode
