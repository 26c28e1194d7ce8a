// decode_memory_test: a valid image whose codec must hold more than the output (a
// progressive or multi-scan JPEG's coefficients, a lossless WebP's ARGB image) is refused from its
// header as decode_memory when that need is over max_decode_bytes, naming the knob; the
// same pixels in a form that streams (baseline JPEG, lossy WebP) or a smaller need
// decode.
#include <webp/encode.h>

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

std::string Jpeg(const Image& image, bool progressive, ChromaSubsampling subsampling,
                 bool multi_scan = false) {
  JpegEncodeOptions o;
  o.progressive = progressive;
  o.multi_scan = multi_scan;
  o.subsampling = subsampling;
  absl::StatusOr<std::string> bytes = EncodeJpeg(image.view(), o);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

std::string Webp(const Image& image, bool lossless) {
  uint8_t* out = nullptr;
  const size_t size =
      lossless ? WebPEncodeLosslessRGB(image.pixels.data(), image.width, image.height,
                                       image.width * 3, &out)
               : WebPEncodeRGB(image.pixels.data(), image.width, image.height, image.width * 3,
                               80, &out);
  std::string bytes(reinterpret_cast<const char*>(out), size);
  WebPFree(out);
  return bytes;
}

struct Case {
  const char* name;
  std::string bytes;
  bool refused;
};

TEST(DecodeMemoryTest, CodecsThatHoldTheWholeImageAreRefusedOverTheBudget) {
  DecoderOptions options;
  options.max_decode_bytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(options);
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const Image big = testing::PhotoLike(512, 512, 3);
  const Image wide = testing::PhotoLike(550, 500, 3);
  const Image small = testing::PhotoLike(450, 500, 3);
  const Case cases[] = {
      // 3 × 64² blocks × 128 B = 1.5 MiB of coefficients.
      {"progressive 4:4:4", Jpeg(big, true, ChromaSubsampling::k444), true},
      // 64² + 2 × 32² blocks × 128 B = 768 KiB.
      {"progressive 4:2:0", Jpeg(big, true, ChromaSubsampling::k420), false},
      {"baseline 4:4:4", Jpeg(big, false, ChromaSubsampling::k444), false},
      // One scan per component: the same 1.5 MiB of coefficients as progressive 4:4:4.
      {"multi-scan 4:4:4", Jpeg(big, false, ChromaSubsampling::k444, true), true},
      {"multi-scan 4:2:0", Jpeg(big, false, ChromaSubsampling::k420, true), false},
      {"lossless WebP 550×500", Webp(wide, true), true},    // 1.05 MiB of ARGB.
      {"lossless WebP 450×500", Webp(small, true), false},  // 0.86 MiB.
      {"lossy WebP 550×500", Webp(wide, false), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.bytes.empty());
    DecodedImage out;
    const absl::Status s = (*decoder)->Decode(c.bytes, {}, nullptr, &out);
    const absl::StatusOr<ImageInfo> info = (*decoder)->ReadInfo(c.bytes);
    if (c.refused) {
      EXPECT_EQ(ErrorReason(s), reason::kDecodeMemory) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), "max_decode_mb 1")) << s;
      EXPECT_EQ(ErrorReason(info.status()), reason::kDecodeMemory) << info.status();
    } else {
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_TRUE(info.ok()) << info.status();
    }
  }
  options.max_decode_bytes = 0;
  EXPECT_FALSE(Decoder::Create(options).ok());
}

// OutputBound, read from the header before decoding (what decode checks against a
// worker's memory), is never below what Decode then makes: the whole image, region
// decodes at every DCT scale and block averaging, with and without the scaling, for JPEG
// and PNG; and it stays close (a bound far above would skip samples that fit).
TEST(DecodeMemoryTest, OutputBoundIsAtLeastTheDecodedSize) {
  const Image photo = testing::PhotoLike(900, 700, 3);
  absl::StatusOr<std::string> png = EncodePng(photo.view());
  ASSERT_TRUE(png.ok()) << png.status();
  const std::string files[] = {Jpeg(photo, false, ChromaSubsampling::k420), *png};
  const RegionRequest requests[] = {
      {RectF{0, 0, 900, 700}, 900, 700},   {RectF{10.5, 20.25, 800, 600}, 224, 224},
      {RectF{300, 200, 97, 61}, 224, 224}, {RectF{0, 0, 900, 700}, 100, 90},
      {RectF{450, 350, 450, 350}, 50, 40}, {RectF{-50, -50, 2000, 2000}, 30, 30},
  };
  for (const bool scaling : {true, false}) {
    DecoderOptions options;
    options.dct_scaling = scaling;
    options.png_box_scaling = scaling;
    absl::StatusOr<std::unique_ptr<Decoder>> decoder = Decoder::Create(options);
    ASSERT_TRUE(decoder.ok()) << decoder.status();
    for (const std::string& file : files) {
      absl::StatusOr<ImageInfo> info = (*decoder)->ReadInfo(file);
      ASSERT_TRUE(info.ok()) << info.status();
      DecodedImage out;
      ASSERT_TRUE((*decoder)->Decode(file, *info, nullptr, &out).ok());
      const DecodedSize whole = (*decoder)->OutputBound(*info, nullptr);
      EXPECT_EQ(whole.width, 900);
      EXPECT_EQ(whole.height, 700);
      for (const RegionRequest& request : requests) {
        ASSERT_TRUE((*decoder)->Decode(file, *info, &request, &out).ok());
        const DecodedSize bound = (*decoder)->OutputBound(*info, &request);
        SCOPED_TRACE(::testing::Message() << "format " << static_cast<int>(info->format)
                                          << " scaling " << scaling << " target "
                                          << request.target_width);
        EXPECT_GE(bound.width, out.image.width);
        EXPECT_GE(bound.height, out.image.height);
        EXPECT_LE(bound.bytes(), 4 * std::max<int64_t>(int64_t{out.image.width} *
                                                           out.image.height * 3,
                                                       int64_t{64} * 64 * 3));
      }
    }
  }
}

}  // namespace
}  // namespace flowloader::decode
