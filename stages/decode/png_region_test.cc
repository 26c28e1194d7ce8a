// png_region_test.cc: PNG region decode (rows read one by one, only the region kept,
// power-of-two block averaging) against a full decode, and the memory bound on hostile
// PNGs whose header declares far more pixels than their data holds.
//
// Memory is asserted on the decoder's own accounting (internal::PngMemory: libpng's
// allocations counted by its allocator, our scratch buffers) and on the output buffer's
// capacity, not on process RSS, which other threads and the allocator make noisy.
#include <zlib.h>  // Comes with @libpng (its linkopts carry -lz).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stages/core/rng.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/png_codec.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

using testing::Crop;
using testing::MaxAbsDiff;
using testing::PhotoLike;
using testing::ToRgb;

constexpr int kW = 97;  // Odd, not a multiple of 8: partial Adam7 tiles and blocks.
constexpr int kH = 83;

// ---- Hand-built PNGs ----------------------------------------------------------------

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string Chunk(const std::string& type, const std::string& data) {
  const std::string body = type + data;
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size())));
  return Be32(static_cast<uint32_t>(data.size())) + body + Be32(crc);
}

std::string Ihdr(uint32_t width, uint32_t height) {  // 8-bit RGB, not interlaced.
  return Chunk("IHDR", Be32(width) + Be32(height) + std::string("\x08\x02\x00\x00\x00", 5));
}

const std::string kSignature("\x89PNG\r\n\x1A\n", 8);

// Deflate compresses `rows` rows: the first is `first`, every later one is `rest`. An
// unfinished stream ends with a sync flush instead: every row is there, then no end.
std::string Deflate(const std::string& first, const std::string& rest, int rows,
                    bool finish) {
  z_stream z{};
  EXPECT_EQ(deflateInit(&z, 9), Z_OK);
  std::string out;
  char buffer[1 << 16];
  auto feed = [&](const std::string& data, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof(buffer);
      deflate(&z, flush);
      out.append(buffer, sizeof(buffer) - z.avail_out);
    } while (z.avail_out == 0);
  };
  for (int r = 0; r < rows; ++r) feed(r == 0 ? first : rest, Z_NO_FLUSH);
  feed(std::string(), finish ? Z_FINISH : Z_SYNC_FLUSH);
  deflateEnd(&z);
  return out;
}

// SolidRowsIdat is zlib data for `rows` rows of one colour: a plain first row, then rows
// filtered "Up" (all zero), which deflate to almost nothing.
std::string SolidRowsIdat(int width, int rows, const uint8_t rgb[3], bool finish = true) {
  std::string first(1 + 3 * static_cast<size_t>(width), '\0');  // Filter byte 0.
  for (int x = 0; x < width; ++x) first.replace(1 + 3 * x, 3, reinterpret_cast<const char*>(rgb), 3);
  std::string up(first.size(), '\0');
  up[0] = 2;  // Filter type Up: every sample equals the one above.
  return Deflate(first, up, rows, finish);
}

// SolidPng is a valid width x height RGB PNG of one colour.
std::string SolidPng(int width, int height, const uint8_t rgb[3]) {
  return kSignature + Ihdr(width, height) + Chunk("IDAT", SolidRowsIdat(width, height, rgb)) +
         Chunk("IEND", "");
}

// ---- Helpers -------------------------------------------------------------------------

std::unique_ptr<Decoder> MakeDecoder(DecoderOptions options = {}) {
  auto decoder = Decoder::Create(options);
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  return *std::move(decoder);
}

// BoxMean is the reference for block averaging: output pixel (i, j) is the rounded mean
// of `full`'s pixels in [x0 + i·fx, x0 + (i+1)·fx) × [y0 + j·fy, ...) within the image.
Image BoxMean(const Image& full, int x0, int y0, int out_w, int out_h, int fx, int fy) {
  Image out;
  out.Resize(out_w, out_h, 3);
  for (int j = 0; j < out_h; ++j) {
    for (int i = 0; i < out_w; ++i) {
      for (int c = 0; c < 3; ++c) {
        uint32_t sum = 0, n = 0;
        for (int y = y0 + j * fy; y < std::min(full.height, y0 + (j + 1) * fy); ++y) {
          for (int x = x0 + i * fx; x < std::min(full.width, x0 + (i + 1) * fx); ++x) {
            sum += full.pixels[(static_cast<size_t>(y) * full.width + x) * 3 + c];
            ++n;
          }
        }
        out.Row(j)[i * 3 + c] = static_cast<uint8_t>((sum + n / 2) / n);
      }
    }
  }
  return out;
}

// Log2 of a scale 1/2^s, or -1 when it is not one.
int ShiftOf(double scale) {
  for (int s = 0; s <= 12; ++s) {
    if (scale == 1.0 / (1 << s)) return s;
  }
  return -1;
}

// ---- Every PNG kind: a region decode is the full decode, cropped or block-averaged ----

struct KindCase {
  const char* name;
  int channels;
  int depth;
  bool palette;
  bool interlace;
};

class PngRegionTest : public ::testing::TestWithParam<KindCase> {
 protected:
  void SetUp() override {
    const KindCase& c = GetParam();
    Image src = PhotoLike(kW, kH, c.channels, 5);
    if (c.palette) {
      for (auto& p : src.pixels) p &= 0xC0;  // At most 256 distinct colours.
    }
    PngEncodeOptions options;
    options.bit_depth = c.depth;
    options.palette = c.palette;
    options.interlace = c.interlace;
    auto bytes = EncodePng(src.view(), options);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    bytes_ = *bytes;
    decoder_ = MakeDecoder();
    DecodedImage full;
    ASSERT_TRUE(decoder_->Decode(bytes_, ImageInfo{}, nullptr, &full).ok());
    full_ = full.image;
    if (c.depth >= 8) {  // Sub-byte depths keep only the high bits; PngKindTest covers them.
      ASSERT_EQ(MaxAbsDiff(full_.view(), ToRgb(src).view()), 0);
    }
  }

  // DecodeRegion decodes `region` for a target size, checks the geometry contract of
  // DecodedImage and that the pixels are the full decode's, box-averaged at the scale.
  void ExpectRegionMatchesFullDecode(const RectF& region, int target_w, int target_h) {
    SCOPED_TRACE(::testing::Message() << "region " << region.x << "," << region.y << " "
                                      << region.w << "x" << region.h << " target "
                                      << target_w << "x" << target_h);
    RegionRequest request{region, target_w, target_h};
    DecodedImage out;
    ASSERT_TRUE(decoder_->Decode(bytes_, ImageInfo{}, &request, &out).ok());
    const RectF& c = out.covered;
    EXPECT_EQ(out.format, PixelFormat::kRgb);
    EXPECT_EQ(c.x, std::floor(region.x));
    EXPECT_EQ(c.y, std::floor(region.y));
    EXPECT_GE(c.x + c.w, std::min<double>(kW, region.x + region.w));
    EXPECT_GE(c.y + c.h, std::min<double>(kH, region.y + region.h));
    EXPECT_LE(c.x + c.w, kW);
    EXPECT_LE(c.y + c.h, kH);
    const int sx = ShiftOf(out.scale_x), sy = ShiftOf(out.scale_y);
    ASSERT_GE(sx, 0) << out.scale_x;
    ASSERT_GE(sy, 0) << out.scale_y;
    ASSERT_EQ(out.image.width, std::ceil(c.w * out.scale_x));
    ASSERT_EQ(out.image.height, std::ceil(c.h * out.scale_y));
    // The largest power-of-two block that still leaves the target's size.
    const auto check_shift = [](int shift, double extent, int target) {
      if (shift > 0) {
        EXPECT_GE(extent / (1 << shift), target);
      }
      EXPECT_LT(extent / (2 << shift), target);
    };
    check_shift(sx, region.w, target_w);
    check_shift(sy, region.h, target_h);
    const Image expected = BoxMean(full_, static_cast<int>(c.x), static_cast<int>(c.y),
                                   out.image.width, out.image.height, 1 << sx, 1 << sy);
    EXPECT_EQ(MaxAbsDiff(out.image.view(), expected.view()), 0);
  }

  std::string bytes_;
  std::unique_ptr<Decoder> decoder_;
  Image full_;
};

RectF RandomRegion(SampleRng& rng) {
  const double w = rng.Uniform(1, kW), h = rng.Uniform(1, kH);
  return RectF{rng.Uniform(0, kW - w), rng.Uniform(0, kH - h), w, h};
}

TEST_P(PngRegionTest, FullScaleRegionIsTheFullDecodeCropped) {
  SampleRng rng(21, 0, 0);
  for (int i = 0; i < 30; ++i) {
    const RectF region = RandomRegion(rng);
    ExpectRegionMatchesFullDecode(region, static_cast<int>(region.w) + 1,
                                  static_cast<int>(region.h) + 1);
  }
  // The whole image, and a 1x1 region in the last corner.
  ExpectRegionMatchesFullDecode(RectF{0, 0, kW, kH}, kW, kH);
  ExpectRegionMatchesFullDecode(RectF{kW - 1, kH - 1, 1, 1}, 1, 1);
}

TEST_P(PngRegionTest, SmallTargetAveragesPowerOfTwoBlocksOfTheFullDecode) {
  SampleRng rng(22, 0, 0);
  for (int i = 0; i < 30; ++i) {
    const RectF region = RandomRegion(rng);
    const int target_w = 1 + static_cast<int>(rng.Uniform(0, region.w / 2));
    const int target_h = 1 + static_cast<int>(rng.Uniform(0, region.h / 2));
    ExpectRegionMatchesFullDecode(region, target_w, target_h);
  }
  ExpectRegionMatchesFullDecode(RectF{0, 0, kW, kH}, 1, 1);  // 64x64 blocks, edge ones partial.
  ExpectRegionMatchesFullDecode(RectF{0, 0, kW, kH}, 24, 80);  // Different per axis.
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, PngRegionTest,
    ::testing::Values(KindCase{"gray8", 1, 8, false, false},
                      KindCase{"gray1", 1, 1, false, false},
                      KindCase{"gray16", 1, 16, false, false},
                      KindCase{"gray_alpha", 2, 8, false, false},
                      KindCase{"rgb", 3, 8, false, false}, KindCase{"rgb16", 3, 16, false, false},
                      KindCase{"rgba", 4, 8, false, false},
                      KindCase{"palette", 3, 8, true, false},
                      KindCase{"palette4", 1, 4, true, false},
                      KindCase{"palette_trns", 4, 8, true, false},
                      KindCase{"interlaced_rgb", 3, 8, false, true},
                      KindCase{"interlaced_rgba16", 4, 16, false, true},
                      KindCase{"interlaced_palette", 3, 8, true, true},
                      KindCase{"interlaced_gray1", 1, 1, false, true},
                      KindCase{"interlaced_gray_alpha", 2, 8, false, true}),
    [](const ::testing::TestParamInfo<KindCase>& p) { return p.param.name; });

TEST(PngRegionRequestTest, BoxScalingOffDecodesTheRegionAtFullScale) {
  const std::string bytes = *EncodePng(PhotoLike(kW, kH, 3).view());
  DecoderOptions options;
  options.png_box_scaling = false;
  RegionRequest request{RectF{10, 5, 80, 70}, 8, 8};
  DecodedImage out;
  ASSERT_TRUE(MakeDecoder(options)->Decode(bytes, ImageInfo{}, &request, &out).ok());
  EXPECT_EQ(out.scale_x, 1.0);
  EXPECT_EQ(out.scale_y, 1.0);
  EXPECT_EQ(MaxAbsDiff(out.image.view(), Crop(PhotoLike(kW, kH, 3).view(), 10, 5, 80, 70).view()),
            0);
}

TEST(PngRegionRequestTest, RefusesRegionsThatAreNotFiniteOrOutsideTheImage) {
  const std::string bytes = *EncodePng(PhotoLike(20, 10, 3).view());
  auto d = MakeDecoder();
  for (const RectF& region : {RectF{NAN, 0, 5, 5}, RectF{0, 0, INFINITY, 5},
                              RectF{25, 0, 5, 5}, RectF{0, 0, 0, 5}}) {
    RegionRequest request{region, 4, 4};
    DecodedImage out;
    EXPECT_TRUE(absl::IsInvalidArgument(d->Decode(bytes, ImageInfo{}, &request, &out)));
  }
}

// ---- Memory: what the output needs, not what the header says --------------------------

constexpr int kHugeSide = 13000;  // 13000 x 13000 x 3 = 507 MB if decoded at full size.

// A RandomResizedCrop at scale 1 of the whole image, to 224 x 224: the most a train
// crop can ask for.
RegionRequest WholeImageTo224(int width, int height) {
  return RegionRequest{RectF{0, 0, static_cast<double>(width), static_cast<double>(height)},
                       224, 224};
}

// The bound docs/reliability.md states: the output stays under 2 x 224 per side (plus one
// block of alignment), and besides it a decode holds a few rows of the file's width
// (libpng's two rows at up to 8 bytes per pixel, our one RGB row and one row of block sums)
// and libpng's fixed state (structs, the 32 KB inflate window, the IDAT read buffer).
constexpr size_t kMaxOutputBytes = size_t{3} * (2 * 224 + 2) * (2 * 224 + 2);
constexpr size_t kFixedLibpngBytes = 128 << 10;
size_t MaxRowBytes(int width) { return size_t{4} * 8 * static_cast<size_t>(width); }

void ExpectBounded(const DecodedImage& out, const internal::PngMemory& memory, int width) {
  std::printf("output capacity %zu B, scratch %zu B, libpng peak %zu B\n",
              out.image.pixels.capacity(), memory.scratch_bytes, memory.libpng_peak_bytes);
  EXPECT_LE(out.image.pixels.capacity(), kMaxOutputBytes);
  EXPECT_LE(memory.scratch_bytes + memory.libpng_peak_bytes,
            MaxRowBytes(width) + kFixedLibpngBytes);
}

// HugeHeader is a PNG whose IHDR declares kHugeSide² RGB pixels and whose IDAT is `idat`.
std::string HugeHeader(const std::string& idat) {
  return kSignature + Ihdr(kHugeSide, kHugeSide) + Chunk("IDAT", idat) + Chunk("IEND", "");
}

// ShortRows is a kHugeSide² PNG whose data holds `rows` good rows, then the file ends.
std::string ShortRows(int rows) {
  const uint8_t rgb[3] = {40, 90, 200};
  return kSignature + Ihdr(kHugeSide, kHugeSide) +
         Chunk("IDAT", SolidRowsIdat(kHugeSide, rows, rgb, /*finish=*/false));
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::string bytes(n, '\0');
  SampleRng rng(seed, 0, 0);
  for (auto& ch : bytes) ch = static_cast<char>(rng.NextU64());
  return bytes;
}

TEST(PngMemoryTest, HugeHeaderWithCorruptRowsFailsAsCorruptWithinTheOutputBound) {
  // As the file: 355 KB whose header says 13000x13000 and whose rows are garbage.
  const std::string bytes = HugeHeader(RandomBytes(355000, 1));
  const RegionRequest request = WholeImageTo224(kHugeSide, kHugeSide);
  DecodedImage out;
  internal::PngMemory memory;
  const absl::Status status = internal::DecodePng(bytes, DecoderOptions{}, &request, &out,
                                                  &memory);
  EXPECT_EQ(ErrorReason(status), reason::kCorrupt) << status;
  ExpectBounded(out, memory, kHugeSide);
}

TEST(PngMemoryTest, HugeHeaderWithShortRowsFailsAsTruncatedWithinTheOutputBound) {
  const std::string bytes = ShortRows(40);
  const RegionRequest request = WholeImageTo224(kHugeSide, kHugeSide);
  DecodedImage out;
  internal::PngMemory memory;
  const absl::Status status = internal::DecodePng(bytes, DecoderOptions{}, &request, &out,
                                                  &memory);
  EXPECT_EQ(ErrorReason(status), reason::kTruncated) << status;
  ExpectBounded(out, memory, kHugeSide);
}

TEST(PngMemoryTest, FullDecodeOfAHugeHeaderWritesOnlyTheRowsItDecoded) {
  // Without a request the output is the whole image; its buffer is reserved but written
  // (and its pages touched) only as rows arrive, so garbage rows cost nothing.
  const struct {
    std::string bytes;
    int good_rows;
  } files[] = {{HugeHeader(RandomBytes(4096, 2)), 0}, {ShortRows(40), 40}};
  for (const auto& file : files) {
    DecodedImage out;
    internal::PngMemory memory;
    EXPECT_FALSE(internal::DecodePng(file.bytes, DecoderOptions{}, nullptr, &out, &memory).ok());
    EXPECT_EQ(out.image.pixels.size(), size_t{3} * kHugeSide * file.good_rows);
    EXPECT_LE(memory.scratch_bytes + memory.libpng_peak_bytes,
              MaxRowBytes(kHugeSide) + kFixedLibpngBytes);
  }
}

TEST(PngMemoryTest, LargeValidPngDecodesA224CropWithinTheOutputBound) {
  const uint8_t rgb[3] = {12, 200, 77};
  const std::string bytes = SolidPng(8000, 6000, rgb);
  auto info = MakeDecoder()->ReadInfo(bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  SampleRng rng(4, 0, 0);
  // The whole image and a random large crop of it.
  const double w = rng.Uniform(2000, 8000), h = rng.Uniform(1500, 6000);
  for (const RegionRequest& request :
       {WholeImageTo224(8000, 6000),
        RegionRequest{RectF{rng.Uniform(0, 8000 - w), rng.Uniform(0, 6000 - h), w, h}, 224,
                      224}}) {
    DecodedImage out;
    internal::PngMemory memory;
    ASSERT_TRUE(internal::DecodePng(bytes, DecoderOptions{}, &request, &out, &memory).ok());
    ExpectBounded(out, memory, 8000);
    EXPECT_GE(out.image.width, 224);
    EXPECT_GE(out.image.height, 224);
    for (size_t i = 0; i < out.image.pixels.size(); ++i) {
      ASSERT_EQ(out.image.pixels[i], rgb[i % 3]) << "at byte " << i;
    }
  }
}

TEST(PngMemoryTest, TextChunksThatInflateAreNotRead) {
  // Four zTXt chunks of 4 MB of text each (a few KB in the file): libpng would inflate
  // and keep them all (its limits: 8 MB a chunk, 1000 chunks).
  const std::string text(4 << 20, 'a');
  uLongf size = compressBound(text.size());
  std::string z(size, '\0');
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(&z[0]), &size,
                      reinterpret_cast<const Bytef*>(text.data()), text.size(), 9),
            Z_OK);
  z.resize(size);
  const std::string ztxt = Chunk("zTXt", std::string("Comment\0\0", 9) + z);
  const uint8_t rgb[3] = {1, 2, 3};
  const std::string bytes = kSignature + Ihdr(64, 64) + ztxt + ztxt + ztxt + ztxt +
                            Chunk("IDAT", SolidRowsIdat(64, 64, rgb)) + Chunk("IEND", "");
  DecodedImage out;
  internal::PngMemory memory;
  ASSERT_TRUE(internal::DecodePng(bytes, DecoderOptions{}, nullptr, &out, &memory).ok());
  EXPECT_LE(memory.libpng_peak_bytes, kFixedLibpngBytes);
  EXPECT_EQ(out.image.pixels[3 * 64 * 64 - 1], 3);
}

}  // namespace
}  // namespace flowloader::decode
