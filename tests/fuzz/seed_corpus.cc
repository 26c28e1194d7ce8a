// seed_corpus.cc: SeedImages / SeedCorpus (see seed_corpus.h).
#include "tests/fuzz/seed_corpus.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"
#include "stages/decode/encoder.h"
#include "tests/fuzz/fuzz_body.h"

namespace flowloader::fuzz {
namespace {

using decode::ChromaSubsampling;
using decode::JpegColor;
using decode::JpegEncodeOptions;
using decode::PngEncodeOptions;

// Picture is a small photo-like image: gradients, a hard edge and noise, so every DCT
// band and both chroma planes carry data. `levels` > 0 quantizes (for palettes).
Image Picture(int w, int h, int channels, uint64_t seed, int levels = 0) {
  Image img;
  img.Resize(w, h, channels);
  SampleRng rng(seed, 0, 0);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        int v = (x * 255 / std::max(1, w - 1) * (c + 1) + y * 255 / std::max(1, h - 1)) / (c + 2);
        if (x > w / 2 && y > h / 3) v = 255 - v;  // An edge.
        v += static_cast<int>(rng.UniformInt(-12, 13));
        if (c == 3) v = 255 - (x * 4) % 256;      // An alpha ramp.
        v = std::min(255, std::max(0, v));
        if (levels > 0) v = v * (levels - 1) / 255 * 255 / (levels - 1);
        img.Row(y)[x * channels + c] = static_cast<uint8_t>(v);
      }
    }
  }
  return img;
}

std::string Jpeg(int w, int h, int channels, const JpegEncodeOptions& o, uint64_t seed = 1) {
  const Image img = Picture(w, h, channels, seed);
  absl::StatusOr<std::string> out = decode::EncodeJpeg(img.view(), o);
  if (!out.ok()) std::abort();
  return *out;
}

std::string Png(int w, int h, int channels, const PngEncodeOptions& o, int levels = 0) {
  const Image img = Picture(w, h, channels, 5, levels);
  absl::StatusOr<std::string> out = decode::EncodePng(img.view(), o);
  if (!out.ok()) std::abort();
  return *out;
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void Put32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

// JpegWithSize rewrites the SOF marker's height and width (the file is otherwise intact).
std::string JpegWithSize(std::string jpeg, int width, int height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    const uint8_t m = static_cast<uint8_t>(jpeg[i + 1]);
    if (static_cast<uint8_t>(jpeg[i]) == 0xFF && (m == 0xC0 || m == 0xC1 || m == 0xC2)) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width);
      return jpeg;
    }
  }
  std::abort();
}

// PngWithSize rewrites IHDR's width and height and fixes its CRC.
std::string PngWithSize(std::string png, uint32_t width, uint32_t height) {
  // Signature (8), then the IHDR chunk: length (4), "IHDR", width, height, ..., CRC.
  Put32(&png, 16, width);
  Put32(&png, 20, height);
  Put32(&png, 29, Crc32(reinterpret_cast<const uint8_t*>(png.data()) + 12, 17));
  return png;
}

// FlipScanBits flips bits in the middle of the entropy-coded data: still a decodable
// file (entropy data has no checksum), with different pixels.
std::string FlipScanBits(std::string jpeg) {
  for (size_t i = jpeg.size() / 2; i < jpeg.size() / 2 + 24 && i + 2 < jpeg.size(); i += 3) {
    jpeg[i] = static_cast<char>(jpeg[i] ^ 0x5A);
  }
  return jpeg;
}

// StrayMarker puts a restart marker where none belongs, mid-scan: libjpeg warns
// (corrupt data), which the decoder turns into an error.
std::string StrayMarker(std::string jpeg) {
  jpeg[jpeg.size() / 2] = static_cast<char>(0xFF);
  jpeg[jpeg.size() / 2 + 1] = static_cast<char>(0xD3);
  return jpeg;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SeedImages() {
  std::vector<std::pair<std::string, std::string>> s;
  JpegEncodeOptions o;
  s.emplace_back("jpeg_baseline_420.jpg", Jpeg(96, 64, 3, o));
  o.progressive = true;
  s.emplace_back("jpeg_progressive_420.jpg", Jpeg(80, 72, 3, o));
  o = {};
  o.optimize_coding = true;
  o.subsampling = ChromaSubsampling::k422;
  s.emplace_back("jpeg_optimized_422.jpg", Jpeg(70, 50, 3, o));
  o = {};
  o.subsampling = ChromaSubsampling::k440;
  s.emplace_back("jpeg_440.jpg", Jpeg(48, 66, 3, o));
  o.subsampling = ChromaSubsampling::k411;
  s.emplace_back("jpeg_411.jpg", Jpeg(67, 33, 3, o));
  o.subsampling = ChromaSubsampling::k444;
  s.emplace_back("jpeg_444.jpg", Jpeg(64, 64, 3, o));
  o.progressive = true;
  s.emplace_back("jpeg_444_progressive.jpg", Jpeg(41, 77, 3, o));
  o = {};
  s.emplace_back("jpeg_gray.jpg", Jpeg(64, 40, 1, o));
  o.progressive = true;
  s.emplace_back("jpeg_gray_progressive.jpg", Jpeg(33, 33, 1, o));
  o = {};
  o.color = JpegColor::kCmyk;
  s.emplace_back("jpeg_cmyk.jpg", Jpeg(50, 40, 3, o));
  o.color = JpegColor::kYcck;
  s.emplace_back("jpeg_ycck.jpg", Jpeg(40, 50, 3, o));
  o.progressive = true;
  s.emplace_back("jpeg_ycck_progressive.jpg", Jpeg(24, 40, 3, o));
  o = {};
  o.restart_interval = 1;
  s.emplace_back("jpeg_restart_1.jpg", Jpeg(64, 48, 3, o));
  o.restart_interval = 3;
  o.subsampling = ChromaSubsampling::k444;
  s.emplace_back("jpeg_restart_3_444.jpg", Jpeg(72, 40, 3, o));
  o = {};
  o.quality = 5;
  s.emplace_back("jpeg_q5.jpg", Jpeg(120, 90, 3, o));
  o.quality = 100;
  s.emplace_back("jpeg_q100.jpg", Jpeg(30, 20, 3, o));
  o = {};
  s.emplace_back("jpeg_1x1.jpg", Jpeg(1, 1, 3, o));
  s.emplace_back("jpeg_4000x12.jpg", Jpeg(4000, 12, 3, o));
  s.emplace_back("jpeg_12x4000.jpg", Jpeg(12, 4000, 3, o));
  s.emplace_back("jpeg_17x9.jpg", Jpeg(17, 9, 3, o));
  s.emplace_back("jpeg_448x320.jpg", Jpeg(448, 320, 3, o));  // DCT scaling kicks in.

  const std::string base = Jpeg(96, 64, 3, {});
  s.emplace_back("jpeg_header_only.jpg", base.substr(0, 200));
  s.emplace_back("jpeg_half.jpg", base.substr(0, base.size() / 2));
  s.emplace_back("jpeg_no_eoi.jpg", base.substr(0, base.size() - 2));
  s.emplace_back("jpeg_soi_only.jpg", base.substr(0, 3));
  s.emplace_back("jpeg_bitflip_scan.jpg", FlipScanBits(base));
  s.emplace_back("jpeg_corrupt_marker.jpg", StrayMarker(base));
  JpegEncodeOptions p;
  p.progressive = true;
  const std::string prog = Jpeg(96, 64, 3, p);
  s.emplace_back("jpeg_progressive_half.jpg", prog.substr(0, prog.size() / 2));
  s.emplace_back("jpeg_bomb_65000.jpg", JpegWithSize(base, 65000, 65000));
  s.emplace_back("jpeg_bomb_progressive_65000.jpg", JpegWithSize(prog, 65000, 65000));
  s.emplace_back("jpeg_just_under_fuzz_limit.jpg", JpegWithSize(base, 2048, 2047));
  s.emplace_back("jpeg_zero_width.jpg", JpegWithSize(base, 0, 64));

  PngEncodeOptions q;
  s.emplace_back("png_rgb.png", Png(40, 30, 3, q));
  s.emplace_back("png_rgba.png", Png(31, 17, 4, q));
  s.emplace_back("png_gray.png", Png(20, 20, 1, q));
  s.emplace_back("png_gray_alpha.png", Png(9, 21, 2, q));
  q.bit_depth = 16;
  s.emplace_back("png_rgb16.png", Png(16, 12, 3, q));
  s.emplace_back("png_gray16.png", Png(12, 16, 1, q));
  q.bit_depth = 1;
  s.emplace_back("png_gray1.png", Png(33, 7, 1, q));
  q.bit_depth = 4;
  s.emplace_back("png_gray4.png", Png(13, 5, 1, q));
  q = {};
  q.palette = true;
  s.emplace_back("png_palette.png", Png(25, 25, 3, q, /*levels=*/4));
  s.emplace_back("png_palette_trns.png", Png(25, 9, 4, q, /*levels=*/3));
  q = {};
  q.interlace = true;
  s.emplace_back("png_adam7.png", Png(37, 29, 3, q));
  q = {};
  s.emplace_back("png_1x1.png", Png(1, 1, 3, q));
  const std::string png = Png(40, 30, 3, {});
  s.emplace_back("png_truncated.png", png.substr(0, png.size() / 2));
  s.emplace_back("png_signature_only.png", png.substr(0, 8));
  s.emplace_back("png_bomb_65000.png", PngWithSize(png, 65000, 65000));
  s.emplace_back("png_wide_1e7.png", PngWithSize(png, 10000000, 1));

  s.emplace_back("empty.jpg", "");
  s.emplace_back("text.jpg", "this is not an image\n");
  s.emplace_back("ff_d8.jpg", "\xFF\xD8");
  return s;
}

std::vector<std::pair<std::string, std::string>> SeedCorpus() {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::pair<std::string, std::string>> images = SeedImages();
  // A few option/seed combinations per image: both layouts, several output sizes, every
  // crop-parameter variant, DCT scaling on and off.
  const uint8_t kOptions[] = {0x30, 0x3D, 0x5A | 0x40, 0xB3, 0xF8, 0x06};
  for (size_t i = 0; i < images.size(); ++i) {
    for (size_t k = 0; k < sizeof(kOptions); ++k) {
      if (k >= 2 && (i + k) % 3 != 0) continue;  // Keep the corpus small.
      out.emplace_back(absl::StrCat(images[i].first, ".", k),
                       WithHeader(kOptions[k], i * 1000003 + k, images[i].second));
    }
  }
  return out;
}

}  // namespace flowloader::fuzz
