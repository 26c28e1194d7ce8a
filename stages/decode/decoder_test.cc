// decoder_test.cc: Decoder on every JPEG and PNG kind the encoder can write, hostile
// inputs (bombs, truncation, garbage), and region/DCT-scaled decode against full decode.
#include "stages/decode/decoder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "stages/core/rng.h"
#include "stages/core/sample_error.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

using testing::AreaResize;
using testing::Crop;
using testing::MaxAbsDiff;
using testing::PhotoLike;
using testing::Psnr;
using testing::ToRgb;

std::unique_ptr<Decoder> MakeDecoder(DecoderOptions options = {}) {
  auto decoder = Decoder::Create(options);
  EXPECT_TRUE(decoder.ok()) << decoder.status();
  return *std::move(decoder);
}

std::string Jpeg(const Image& img, JpegEncodeOptions options = {}) {
  auto bytes = EncodeJpeg(img.view(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

std::string Png(const Image& img, PngEncodeOptions options = {}) {
  auto bytes = EncodePng(img.view(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

// DecodeAll reads the header and decodes with `request` (null: full decode).
absl::Status DecodeAll(const Decoder& d, const std::string& bytes, DecodedImage* out,
                       const RegionRequest* request = nullptr) {
  auto info = d.ReadInfo(bytes);
  if (!info.ok()) return info.status();
  return d.Decode(bytes, *info, request, out);
}

// ---- Every JPEG kind decodes to RGB at full size, close to its source ---------------

struct JpegCase {
  const char* name;
  int width, height, channels;
  JpegEncodeOptions options;
  int file_channels;
  double min_psnr;
};

JpegEncodeOptions Sub(ChromaSubsampling s) {
  JpegEncodeOptions o;
  o.subsampling = s;
  return o;
}
JpegEncodeOptions Progressive(ChromaSubsampling s) {
  JpegEncodeOptions o = Sub(s);
  o.progressive = true;
  return o;
}
JpegEncodeOptions Color(JpegColor c, ChromaSubsampling s = ChromaSubsampling::k444) {
  JpegEncodeOptions o = Sub(s);
  o.color = c;
  return o;
}
JpegEncodeOptions Restarts(int interval, bool progressive = false) {
  JpegEncodeOptions o;
  o.restart_interval = interval;
  o.progressive = progressive;
  return o;
}

const JpegCase kJpegCases[] = {
    {"baseline420", 451, 379, 3, Sub(ChromaSubsampling::k420), 3, 30},
    {"baseline422", 451, 379, 3, Sub(ChromaSubsampling::k422), 3, 30},
    {"baseline444", 451, 379, 3, Sub(ChromaSubsampling::k444), 3, 32},
    {"baseline440", 451, 379, 3, Sub(ChromaSubsampling::k440), 3, 30},
    {"baseline411", 451, 379, 3, Sub(ChromaSubsampling::k411), 3, 28},
    {"progressive420", 451, 379, 3, Progressive(ChromaSubsampling::k420), 3, 30},
    {"progressive444", 200, 150, 3, Progressive(ChromaSubsampling::k444), 3, 32},
    {"grayscale", 451, 379, 1, JpegEncodeOptions{}, 1, 32},
    {"progressive_gray", 131, 77, 1, Progressive(ChromaSubsampling::k420), 1, 32},
    {"cmyk", 301, 211, 3, Color(JpegColor::kCmyk), 4, 28},
    {"ycck", 301, 211, 3, Color(JpegColor::kYcck, ChromaSubsampling::k420), 4, 27},
    {"restart_every_mcu", 157, 93, 3, Restarts(1), 3, 30},
    {"restart_every_7", 451, 379, 3, Restarts(7), 3, 30},
    {"progressive_restarts", 157, 93, 3, Restarts(2, true), 3, 30},
    {"one_pixel", 1, 1, 3, JpegEncodeOptions{}, 3, 25},
    {"wide_4000x12", 4000, 12, 3, JpegEncodeOptions{}, 3, 28},
    {"tall_12x4000", 12, 4000, 3, JpegEncodeOptions{}, 3, 28},
};

class JpegKindTest : public ::testing::TestWithParam<JpegCase> {};

TEST_P(JpegKindTest, DecodesToRgbCloseToSource) {
  const JpegCase& c = GetParam();
  const Image src = PhotoLike(c.width, c.height, c.channels);
  const std::string bytes = Jpeg(src, c.options);
  auto d = MakeDecoder();
  auto info = d->ReadInfo(bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->format, Format::kJpeg);
  EXPECT_EQ(info->width, c.width);
  EXPECT_EQ(info->height, c.height);
  EXPECT_EQ(info->channels, c.file_channels);

  DecodedImage out;
  ASSERT_TRUE(d->Decode(bytes, *info, nullptr, &out).ok());
  ASSERT_EQ(out.image.width, c.width);
  ASSERT_EQ(out.image.height, c.height);
  ASSERT_EQ(out.image.channels, 3);
  EXPECT_EQ(out.covered.x, 0);
  EXPECT_EQ(out.covered.y, 0);
  EXPECT_EQ(out.covered.w, c.width);
  EXPECT_EQ(out.covered.h, c.height);
  EXPECT_EQ(out.scale_x, 1.0);
  EXPECT_EQ(out.scale_y, 1.0);
  EXPECT_GE(Psnr(out.image.view(), ToRgb(src).view()), c.min_psnr);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, JpegKindTest, ::testing::ValuesIn(kJpegCases),
    [](const ::testing::TestParamInfo<JpegCase>& p) { return p.param.name; });

TEST(DecoderTest, GrayJpegDecodesWithEqualChannels) {
  const std::string bytes = Jpeg(PhotoLike(64, 40, 1));
  DecodedImage out;
  ASSERT_TRUE(DecodeAll(*MakeDecoder(), bytes, &out).ok());
  for (size_t i = 0; i < out.image.pixels.size(); i += 3) {
    ASSERT_EQ(out.image.pixels[i], out.image.pixels[i + 1]);
    ASSERT_EQ(out.image.pixels[i], out.image.pixels[i + 2]);
  }
}

TEST(DecoderTest, CmykAndYcckDecodeToTheColoursTheyWereMadeFrom) {
  // Flat colours at quality 100: only the CMYK round trip's rounding remains.
  const uint8_t colours[][3] = {{200, 100, 50}, {10, 20, 30}, {255, 255, 255}, {0, 0, 0},
                                {0, 128, 255}};
  auto d = MakeDecoder();
  for (JpegColor kind : {JpegColor::kCmyk, JpegColor::kYcck}) {
    for (const auto& rgb : colours) {
      Image img;
      img.Resize(16, 16, 3);
      for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = rgb[i % 3];
      JpegEncodeOptions options = Color(kind);
      options.quality = 100;
      DecodedImage out;
      ASSERT_TRUE(DecodeAll(*d, Jpeg(img, options), &out).ok());
      for (int ch = 0; ch < 3; ++ch) {
        EXPECT_NEAR(out.image.pixels[8 * 48 + 8 * 3 + ch], rgb[ch], 3)
            << (kind == JpegColor::kCmyk ? "cmyk" : "ycck") << " channel " << ch;
      }
    }
  }
}

TEST(DecoderTest, FastIdctStaysCloseToAccurateIdct) {
  const std::string bytes = Jpeg(PhotoLike(320, 240, 3));
  DecoderOptions fast;
  fast.fast_idct = true;
  DecodedImage accurate, quick;
  ASSERT_TRUE(DecodeAll(*MakeDecoder(), bytes, &accurate).ok());
  ASSERT_TRUE(DecodeAll(*MakeDecoder(fast), bytes, &quick).ok());
  const double psnr = Psnr(accurate.image.view(), quick.image.view());
  EXPECT_GT(psnr, 38);
  EXPECT_LT(psnr, INFINITY) << "fast_idct had no effect";
}

// ---- Every PNG kind decodes exactly to RGB ------------------------------------------

struct PngCase {
  const char* name;
  int channels;
  int depth;
  bool palette;
  bool interlace;
};

class PngKindTest : public ::testing::TestWithParam<PngCase> {};

TEST_P(PngKindTest, DecodesExactlyToRgbDroppingAlpha) {
  const PngCase& c = GetParam();
  Image src = PhotoLike(45, 31, c.channels);
  if (c.palette) {
    for (auto& p : src.pixels) p &= 0xC0;  // At most 256 distinct colours.
  }
  if (c.depth < 8) {  // What the file keeps, expanded back the way PNG readers do.
    const int levels = (1 << c.depth) - 1;
    for (auto& p : src.pixels) p = static_cast<uint8_t>((p >> (8 - c.depth)) * 255 / levels);
  }
  PngEncodeOptions options;
  options.bit_depth = c.depth;
  options.palette = c.palette;
  options.interlace = c.interlace;
  const std::string bytes = Png(src, options);
  auto d = MakeDecoder();
  auto info = d->ReadInfo(bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->format, Format::kPng);
  EXPECT_EQ(info->width, 45);
  EXPECT_EQ(info->height, 31);
  DecodedImage out;
  ASSERT_TRUE(d->Decode(bytes, *info, nullptr, &out).ok());
  ASSERT_EQ(out.image.channels, 3);
  EXPECT_EQ(MaxAbsDiff(out.image.view(), ToRgb(src).view()), 0);
  EXPECT_EQ(out.covered.w, 45);
  EXPECT_EQ(out.covered.h, 31);
  EXPECT_EQ(out.scale_x, 1.0);
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, PngKindTest,
    ::testing::Values(PngCase{"gray8", 1, 8, false, false}, PngCase{"gray1", 1, 1, false, false},
                      PngCase{"gray2", 1, 2, false, false}, PngCase{"gray4", 1, 4, false, false},
                      PngCase{"gray16", 1, 16, false, false},
                      PngCase{"gray_alpha", 2, 8, false, false},
                      PngCase{"gray_alpha16", 2, 16, false, false},
                      PngCase{"rgb", 3, 8, false, false}, PngCase{"rgb16", 3, 16, false, false},
                      PngCase{"rgba", 4, 8, false, false}, PngCase{"rgba16", 4, 16, false, false},
                      PngCase{"palette", 3, 8, true, false},
                      PngCase{"palette4", 1, 4, true, false},
                      PngCase{"palette_trns", 4, 8, true, false},
                      PngCase{"interlaced_rgb", 3, 8, false, true},
                      PngCase{"interlaced_rgba16", 4, 16, false, true},
                      PngCase{"interlaced_palette", 3, 8, true, true},
                      PngCase{"interlaced_gray1", 1, 1, false, true}),
    [](const ::testing::TestParamInfo<PngCase>& p) { return p.param.name; });

// PNG region decode: png_region_test.cc.

// ---- Hostile and broken inputs ------------------------------------------------------

// PatchSofSize rewrites the frame size in a JPEG's SOF0/SOF2 marker.
std::string PatchSofSize(std::string jpeg, int width, int height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (static_cast<uint8_t>(jpeg[i]) == 0xFF &&
        (static_cast<uint8_t>(jpeg[i + 1]) == 0xC0 || static_cast<uint8_t>(jpeg[i + 1]) == 0xC2)) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height & 0xff);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width & 0xff);
      return jpeg;
    }
  }
  ADD_FAILURE() << "no SOF marker";
  return jpeg;
}

uint32_t Crc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char ch : data) {
    crc ^= ch;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string PngChunk(const std::string& type, const std::string& data) {
  return Be32(static_cast<uint32_t>(data.size())) + type + data + Be32(Crc32(type + data));
}

// BombPng is a hand-built PNG whose IHDR declares width × height RGB pixels.
std::string BombPng(uint32_t width, uint32_t height) {
  const std::string ihdr = Be32(width) + Be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  const std::string idat("\x78\x9c\x03\x00\x00\x00\x00\x01", 8);  // An empty zlib stream.
  return std::string("\x89PNG\r\n\x1A\n", 8) + PngChunk("IHDR", ihdr) + PngChunk("IDAT", idat) +
         PngChunk("IEND", "");
}

// FastestSeconds runs `fn` `times` times and returns the fastest run's wall time: the
// run least disturbed by the machine's other load.
template <typename Fn>
double FastestSeconds(int times, Fn fn) {
  double fastest = INFINITY;
  for (int i = 0; i < times; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    fastest = std::min(
        fastest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return fastest;
}

// ExpectRefusedAsBombFromTheHeader: both calls refuse a 65000x65000 (4.2 Gpx) header
// without allocating pixels, and the refusal costs less than decoding a real 1-megapixel
// JPEG on the same machine at the same moment: work that looked at the declared pixels
// at all would cost thousands of times that, so the ratio holds on a loaded machine or
// under a sanitizer where an absolute bound in milliseconds does not.
void ExpectRefusedAsBombFromTheHeader(const std::string& bytes) {
  auto d = MakeDecoder();
  auto info = d->ReadInfo(bytes);
  EXPECT_EQ(ErrorReason(info.status()), reason::kTooManyPixels) << info.status();
  DecodedImage out;
  const absl::Status status = d->Decode(bytes, ImageInfo{}, nullptr, &out);
  EXPECT_EQ(ErrorReason(status), reason::kTooManyPixels) << status;
  EXPECT_NE(status.message().find("65000x65000"), absl::string_view::npos) << status;
  EXPECT_EQ(out.image.pixels.capacity(), 0u) << "pixel memory was allocated";

  const double refuse = FastestSeconds(5, [&] {
    DecodedImage bomb;
    (void)d->ReadInfo(bytes);
    (void)d->Decode(bytes, ImageInfo{}, nullptr, &bomb);
  });
  const std::string megapixel = Jpeg(PhotoLike(1000, 1000, 3));
  const double decode = FastestSeconds(3, [&] {
    DecodedImage real;
    EXPECT_TRUE(DecodeAll(*d, megapixel, &real).ok());
  });
  std::printf("refusing the bomb: %.1f us; decoding 1 Mpx: %.1f us\n", refuse * 1e6,
              decode * 1e6);
  EXPECT_LT(refuse, decode) << "refusing a 65000x65000 header cost more than decoding "
                               "1000x1000 pixels: the refusal did not come from the header";
}

TEST(DecoderTest, RefusesJpegBombFromHeaderWithoutAllocating) {
  ExpectRefusedAsBombFromTheHeader(PatchSofSize(Jpeg(PhotoLike(16, 16, 3)), 65000, 65000));
}

TEST(DecoderTest, RefusesPngBombFromHeaderWithoutAllocating) {
  ExpectRefusedAsBombFromTheHeader(BombPng(65000, 65000));
}

TEST(DecoderTest, MaxPixelsIsAnInclusiveLimit) {
  const std::string jpeg = Jpeg(PhotoLike(100, 100, 3));
  const std::string png = Png(PhotoLike(100, 100, 3));
  DecoderOptions at_limit, below;
  at_limit.max_pixels = 10000;
  below.max_pixels = 9999;
  DecodedImage out;
  for (const std::string* bytes : {&jpeg, &png}) {
    EXPECT_TRUE(DecodeAll(*MakeDecoder(at_limit), *bytes, &out).ok());
    EXPECT_EQ(ErrorReason(DecodeAll(*MakeDecoder(below), *bytes, &out)),
              reason::kTooManyPixels);
  }
}

TEST(DecoderTest, RefusesZeroSizedHeaders) {
  const std::string jpeg = PatchSofSize(Jpeg(PhotoLike(16, 16, 3)), 0, 16);
  EXPECT_EQ(ErrorReason(MakeDecoder()->ReadInfo(jpeg).status()), reason::kCorrupt);
  EXPECT_EQ(ErrorReason(MakeDecoder()->ReadInfo(BombPng(0, 16)).status()), reason::kCorrupt);
}

TEST(DecoderTest, NamesEmptyFile) {
  auto d = MakeDecoder();
  EXPECT_EQ(ErrorReason(d->ReadInfo("").status()), reason::kEmptyFile);
  DecodedImage out;
  EXPECT_EQ(ErrorReason(d->Decode("", ImageInfo{}, nullptr, &out)), reason::kEmptyFile);
}

TEST(DecoderTest, NamesTextAndRandomBytesUnknownFormat) {
  auto d = MakeDecoder();
  std::string random(4096, '\0');
  SampleRng rng(3, 0, 0);
  for (auto& ch : random) ch = static_cast<char>(rng.NextU64());
  random[0] = 'x';  // Not by chance a JPEG or PNG magic.
  for (const std::string& bytes :
       {std::string("this is a text file named cat.jpg\n"), random, std::string("a")}) {
    EXPECT_EQ(ErrorReason(d->ReadInfo(bytes).status()), reason::kUnknownFormat);
    DecodedImage out;
    EXPECT_EQ(ErrorReason(d->Decode(bytes, ImageInfo{}, nullptr, &out)),
              reason::kUnknownFormat);
  }
}

TEST(DecoderTest, SniffsFormatFromBytesNotFromName) {
  // A PNG in a .jpg file: the decoder never sees the name, only PNG magic.
  const Image src = PhotoLike(20, 10, 3);
  auto info = MakeDecoder()->ReadInfo(Png(src));
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, Format::kPng);
  DecodedImage out;
  ASSERT_TRUE(DecodeAll(*MakeDecoder(), Png(src), &out).ok());
  EXPECT_EQ(MaxAbsDiff(out.image.view(), src.view()), 0);
}

TEST(DecoderTest, RejectsInfoOfAnotherFormat) {
  ImageInfo png_info;
  png_info.format = Format::kPng;
  DecodedImage out;
  EXPECT_TRUE(absl::IsInvalidArgument(
      MakeDecoder()->Decode(Jpeg(PhotoLike(8, 8, 3)), png_info, nullptr, &out)));
}

// ScanStart is the offset of the first entropy-coded byte (just after the SOS segment).
size_t ScanStart(const std::string& jpeg) {
  const size_t sos = jpeg.find("\xFF\xDA");
  EXPECT_NE(sos, std::string::npos);
  const size_t length = static_cast<uint8_t>(jpeg[sos + 2]) << 8 | static_cast<uint8_t>(jpeg[sos + 3]);
  return sos + 2 + length;
}

class TruncatedJpegTest : public ::testing::TestWithParam<bool /*progressive*/> {};

TEST_P(TruncatedJpegTest, SkipsTruncatedJpegAndNamesReason) {
  JpegEncodeOptions options;
  options.progressive = GetParam();
  const std::string full = Jpeg(PhotoLike(200, 160, 3), options);
  auto d = MakeDecoder();
  DecodedImage out;
  // Header only: the header reads fine, the pixels are missing.
  const std::string header_only = full.substr(0, ScanStart(full));
  ASSERT_TRUE(d->ReadInfo(header_only).ok());
  EXPECT_EQ(ErrorReason(DecodeAll(*d, header_only, &out)), reason::kTruncated);
  // Half the file.
  EXPECT_EQ(ErrorReason(DecodeAll(*d, full.substr(0, full.size() / 2), &out)),
            reason::kTruncated);
  // Cut inside the header.
  EXPECT_EQ(ErrorReason(d->ReadInfo(full.substr(0, 30)).status()), reason::kTruncated);
  EXPECT_EQ(ErrorReason(d->ReadInfo(full.substr(0, 2)).status()), reason::kTruncated);
  // Only the EOI missing: libjpeg's bit reader runs out while it looks ahead, so this is
  // indistinguishable from losing the last bytes; PIL also says "image file is truncated".
  EXPECT_EQ(ErrorReason(DecodeAll(*d, full.substr(0, full.size() - 2), &out)),
            reason::kTruncated);
}

INSTANTIATE_TEST_SUITE_P(BaselineAndProgressive, TruncatedJpegTest, ::testing::Bool());

TEST(DecoderTest, TruncatedBaselineJpegIsRefusedWhateverRegionIsAsked) {
  // flowloader's Huffman decoder finds the end of the scan before decoding, so a cut file
  // is refused even for a region above the cut: a random crop never decides whether a
  // sample is delivered (in one epoch) or skipped (in the next).
  const std::string full = Jpeg(PhotoLike(256, 256, 3));
  const std::string cut = full.substr(0, full.size() * 3 / 4);
  RegionRequest top{RectF{0, 0, 256, 32}, 256, 32};
  RegionRequest bottom{RectF{0, 224, 256, 32}, 256, 32};
  DecodedImage out;
  EXPECT_EQ(ErrorReason(DecodeAll(*MakeDecoder(), cut, &out, &top)), reason::kTruncated);
  EXPECT_EQ(ErrorReason(DecodeAll(*MakeDecoder(), cut, &out, &bottom)), reason::kTruncated);
  // libjpeg-turbo's own decoder reads only what the region needs: rows above the cut
  // decode (as DALI and TurboJPEG do).
  DecoderOptions libjpeg;
  libjpeg.fast_huffman = false;
  EXPECT_TRUE(DecodeAll(*MakeDecoder(libjpeg), cut, &out, &top).ok());
  EXPECT_EQ(ErrorReason(DecodeAll(*MakeDecoder(libjpeg), cut, &out, &bottom)),
            reason::kTruncated);
}

TEST(DecoderTest, SkipsCorruptJpegAndNamesReason) {
  const std::string full = Jpeg(PhotoLike(200, 160, 3));
  auto d = MakeDecoder();
  DecodedImage out;
  // A marker in the middle of the entropy-coded data.
  std::string marker = full;
  const size_t mid = ScanStart(full) + (full.size() - ScanStart(full)) / 2;
  marker[mid] = '\xFF';
  marker[mid + 1] = '\xD9';
  EXPECT_EQ(ErrorReason(DecodeAll(*d, marker, &out)), reason::kCorrupt);
  // No SOF at all: the header itself is broken.
  std::string no_frame = full;
  const size_t sof = no_frame.find("\xFF\xC0");
  no_frame[sof + 1] = '\xE5';  // Turn SOF0 into an APP5 segment to be skipped.
  EXPECT_EQ(ErrorReason(d->ReadInfo(no_frame).status()), reason::kCorrupt);
}

TEST(DecoderTest, NamesLosslessAnd12BitJpegUnsupported) {
  const std::string full = Jpeg(PhotoLike(32, 32, 3));
  const size_t sof = full.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  std::string lossless = full;
  lossless[sof + 1] = '\xC3';  // SOF3: lossless, not in libjpeg-turbo 2.1.
  EXPECT_EQ(ErrorReason(MakeDecoder()->ReadInfo(lossless).status()), reason::kUnsupported);
  std::string twelve_bit = full;
  twelve_bit[sof + 4] = 12;  // Sample precision.
  EXPECT_EQ(ErrorReason(MakeDecoder()->ReadInfo(twelve_bit).status()), reason::kUnsupported);
}

TEST(DecoderTest, SkipsTruncatedAndCorruptPngAndNamesReason) {
  const std::string full = Png(PhotoLike(120, 80, 3));
  auto d = MakeDecoder();
  DecodedImage out;
  EXPECT_EQ(ErrorReason(DecodeAll(*d, full.substr(0, full.size() / 2), &out)),
            reason::kTruncated);
  EXPECT_EQ(ErrorReason(d->ReadInfo(full.substr(0, 20)).status()), reason::kTruncated);
  std::string flipped = full;
  flipped[full.find("IDAT") + 40] ^= 0x55;  // The chunk CRC no longer matches.
  EXPECT_EQ(ErrorReason(DecodeAll(*d, flipped, &out)), reason::kCorrupt);
}

TEST(DecoderTest, CreateRejectsNonPositiveMaxPixels) {
  DecoderOptions options;
  options.max_pixels = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(Decoder::Create(options).status()));
}

TEST(DecoderTest, RejectsEmptyOrNonFiniteRegions) {
  const std::string bytes = Jpeg(PhotoLike(64, 64, 3));
  DecodedImage out;
  for (const RectF& region : {RectF{100, 100, 10, 10}, RectF{10, 10, 0, 5},
                              RectF{NAN, 0, 10, 10}, RectF{0, 0, INFINITY, 10}}) {
    RegionRequest request{region, 10, 10};
    EXPECT_TRUE(absl::IsInvalidArgument(DecodeAll(*MakeDecoder(), bytes, &out, &request)))
        << region.x << "," << region.y << " " << region.w << "x" << region.h;
  }
}

TEST(DecoderTest, ReusedOutputTakesTheNewImageSize) {
  auto d = MakeDecoder();
  DecodedImage out;
  ASSERT_TRUE(DecodeAll(*d, Jpeg(PhotoLike(300, 200, 3)), &out).ok());
  const Image small = PhotoLike(30, 20, 3);
  ASSERT_TRUE(DecodeAll(*d, Png(small), &out).ok());
  EXPECT_EQ(out.image.width, 30);
  EXPECT_EQ(out.image.pixels.size(), 30u * 20 * 3);
  EXPECT_EQ(MaxAbsDiff(out.image.view(), small.view()), 0);
}

TEST(DecoderTest, DecodesFromManyThreadsAtOnce) {
  const std::string bytes = Jpeg(PhotoLike(200, 150, 3), Color(JpegColor::kCmyk));
  auto d = MakeDecoder();
  DecodedImage reference;
  ASSERT_TRUE(DecodeAll(*d, bytes, &reference).ok());
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        DecodedImage out;
        if (!DecodeAll(*d, bytes, &out).ok() || out.image.pixels != reference.image.pixels) {
          ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace flowloader::decode
