// encoder_test.cc: the encoders write what their options say, checked by reading the
// files back with libjpeg directly and by parsing PNG headers, not with our decoder.
#include "stages/decode/encoder.h"

#include <csetjmp>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "jpeglib.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

using testing::PhotoLike;

// JpegHeader is what libjpeg reads from a file's markers.
struct JpegHeader {
  bool ok = false;
  int width = 0, height = 0, components = 0;
  J_COLOR_SPACE color = JCS_UNKNOWN;
  bool progressive = false;
  bool adobe = false;
  int adobe_transform = -1;
  unsigned restart_interval = 0;
  int h[4] = {}, v[4] = {};
  std::vector<uint8_t> pixels;  // Decoded in the file's own colour space (no conversion).
};

struct ErrorMgr {
  jpeg_error_mgr pub;
  jmp_buf jump;
};

void ErrorExit(j_common_ptr cinfo) { longjmp(reinterpret_cast<ErrorMgr*>(cinfo->err)->jump, 1); }

JpegHeader ReadJpeg(const std::string& bytes) {
  JpegHeader h;
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = ErrorExit;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return h;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(&cinfo, TRUE);
  h.width = cinfo.image_width;
  h.height = cinfo.image_height;
  h.components = cinfo.num_components;
  h.color = cinfo.jpeg_color_space;
  h.progressive = cinfo.progressive_mode;
  h.adobe = cinfo.saw_Adobe_marker;
  h.adobe_transform = cinfo.Adobe_transform;
  h.restart_interval = cinfo.restart_interval;
  for (int c = 0; c < cinfo.num_components && c < 4; ++c) {
    h.h[c] = cinfo.comp_info[c].h_samp_factor;
    h.v[c] = cinfo.comp_info[c].v_samp_factor;
  }
  // Keep CMYK as CMYK, so the test sees the stored (inverted) inks.
  if (cinfo.jpeg_color_space == JCS_YCCK) cinfo.out_color_space = JCS_CMYK;
  jpeg_start_decompress(&cinfo);
  h.pixels.resize(static_cast<size_t>(cinfo.output_width) * cinfo.output_height *
                  cinfo.output_components);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = &h.pixels[static_cast<size_t>(cinfo.output_scanline) *
                             cinfo.output_width * cinfo.output_components];
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  h.ok = true;
  return h;
}

struct SamplingCase {
  ChromaSubsampling subsampling;
  int h, v;
};

class JpegSamplingTest : public ::testing::TestWithParam<SamplingCase> {};

TEST_P(JpegSamplingTest, WritesRequestedLumaSamplingFactors) {
  const Image img = PhotoLike(64, 48, 3);
  JpegEncodeOptions options;
  options.subsampling = GetParam().subsampling;
  auto jpeg = EncodeJpeg(img.view(), options);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  const JpegHeader h = ReadJpeg(*jpeg);
  ASSERT_TRUE(h.ok);
  EXPECT_EQ(h.color, JCS_YCbCr);
  EXPECT_EQ(h.h[0], GetParam().h);
  EXPECT_EQ(h.v[0], GetParam().v);
  EXPECT_EQ(h.h[1], 1);
  EXPECT_EQ(h.v[1], 1);
  EXPECT_EQ(h.h[2], 1);
  EXPECT_EQ(h.v[2], 1);
  EXPECT_FALSE(h.progressive);
}

INSTANTIATE_TEST_SUITE_P(AllSubsamplings, JpegSamplingTest,
                         ::testing::Values(SamplingCase{ChromaSubsampling::k444, 1, 1},
                                           SamplingCase{ChromaSubsampling::k422, 2, 1},
                                           SamplingCase{ChromaSubsampling::k420, 2, 2},
                                           SamplingCase{ChromaSubsampling::k440, 1, 2},
                                           SamplingCase{ChromaSubsampling::k411, 4, 1}));

TEST(EncodeJpegTest, WritesProgressiveAndRestartMarkersWhenAsked) {
  const Image img = PhotoLike(80, 64, 3);
  JpegEncodeOptions options;
  options.progressive = true;
  options.restart_interval = 3;
  auto jpeg = EncodeJpeg(img.view(), options);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  const JpegHeader h = ReadJpeg(*jpeg);
  ASSERT_TRUE(h.ok);
  EXPECT_TRUE(h.progressive);
  EXPECT_EQ(h.restart_interval, 3u);
  EXPECT_NE(jpeg->find("\xFF\xD0"), std::string::npos) << "no RST0 marker";
}

TEST(EncodeJpegTest, GrayInputWritesGrayscaleFile) {
  const Image img = PhotoLike(33, 17, 1);
  auto jpeg = EncodeJpeg(img.view());
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  const JpegHeader h = ReadJpeg(*jpeg);
  ASSERT_TRUE(h.ok);
  EXPECT_EQ(h.color, JCS_GRAYSCALE);
  EXPECT_EQ(h.components, 1);
  EXPECT_EQ(h.width, 33);
  EXPECT_EQ(h.height, 17);
  ASSERT_EQ(h.pixels.size(), img.pixels.size());
  int worst = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    worst = std::max(worst, std::abs(int{h.pixels[i]} - int{img.pixels[i]}));
  }
  EXPECT_LE(worst, 40);
}

TEST(EncodeJpegTest, CmykAndYcckCarryAdobeMarkerAndInvertedInks) {
  // Flat colour, quality 100: the stored inks are exactly predictable.
  Image img;
  img.Resize(16, 16, 3);
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    img.pixels[i] = 200, img.pixels[i + 1] = 100, img.pixels[i + 2] = 50;
  }
  for (JpegColor color : {JpegColor::kCmyk, JpegColor::kYcck}) {
    JpegEncodeOptions options;
    options.color = color;
    options.quality = 100;
    auto jpeg = EncodeJpeg(img.view(), options);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status();
    const JpegHeader h = ReadJpeg(*jpeg);
    ASSERT_TRUE(h.ok);
    EXPECT_TRUE(h.adobe);
    EXPECT_EQ(h.components, 4);
    if (color == JpegColor::kCmyk) {
      EXPECT_EQ(h.color, JCS_CMYK);
      EXPECT_EQ(h.adobe_transform, 0);
    } else {
      EXPECT_EQ(h.color, JCS_YCCK);
      EXPECT_EQ(h.adobe_transform, 2);
    }
    // K' = max = 200, C' = 255, M' = 100·255/200 ≈ 128, Y' ≈ 64.
    EXPECT_NEAR(h.pixels[0], 255, 2);
    EXPECT_NEAR(h.pixels[1], 128, 2);
    EXPECT_NEAR(h.pixels[2], 64, 2);
    EXPECT_NEAR(h.pixels[3], 200, 2);
  }
}

TEST(EncodeJpegTest, HigherQualityAndOptimizedCodingChangeSizeAsExpected) {
  const Image img = PhotoLike(128, 96, 3);
  JpegEncodeOptions low, high, optimized;
  low.quality = 40;
  high.quality = 95;
  optimized.quality = 95;
  optimized.optimize_coding = true;
  auto a = EncodeJpeg(img.view(), low), b = EncodeJpeg(img.view(), high),
       c = EncodeJpeg(img.view(), optimized);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_LT(a->size(), b->size());
  EXPECT_LT(c->size(), b->size());
}

TEST(EncodeJpegTest, RejectsBadOptionsAndInputs) {
  const Image img = PhotoLike(8, 8, 3);
  JpegEncodeOptions options;
  options.quality = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EncodeJpeg(img.view(), options).status()));
  options.quality = 101;
  EXPECT_TRUE(absl::IsInvalidArgument(EncodeJpeg(img.view(), options).status()));
  options = {};
  options.restart_interval = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(EncodeJpeg(img.view(), options).status()));
  const Image rgba = PhotoLike(8, 8, 4);
  EXPECT_TRUE(absl::IsInvalidArgument(EncodeJpeg(rgba.view()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EncodeJpeg(ImageView{}).status()));
}

// PNG: IHDR is at a fixed place: width, height, bit depth, colour type, ..., interlace.
struct PngHeader {
  uint32_t width = 0, height = 0;
  int depth = 0, color_type = 0, interlace = 0;
  bool has_plte = false, has_trns = false;
};

PngHeader ParsePng(const std::string& png) {
  PngHeader h;
  auto u32 = [&](size_t at) {
    return uint32_t{static_cast<uint8_t>(png[at])} << 24 |
           uint32_t{static_cast<uint8_t>(png[at + 1])} << 16 |
           uint32_t{static_cast<uint8_t>(png[at + 2])} << 8 | static_cast<uint8_t>(png[at + 3]);
  };
  h.width = u32(16);
  h.height = u32(20);
  h.depth = static_cast<uint8_t>(png[24]);
  h.color_type = static_cast<uint8_t>(png[25]);
  h.interlace = static_cast<uint8_t>(png[28]);
  h.has_plte = png.find("PLTE") != std::string::npos;
  h.has_trns = png.find("tRNS") != std::string::npos;
  return h;
}

struct PngCase {
  const char* name;
  int channels;
  PngEncodeOptions options;
  int depth, color_type;
};

class PngKindTest : public ::testing::TestWithParam<PngCase> {};

TEST_P(PngKindTest, WritesRequestedColourTypeDepthAndInterlace) {
  const PngCase& c = GetParam();
  Image img = PhotoLike(37, 21, c.channels);
  if (c.options.palette) {  // Few colours, so they fit a palette.
    for (auto& p : img.pixels) p &= 0xC0;
  }
  auto png = EncodePng(img.view(), c.options);
  ASSERT_TRUE(png.ok()) << png.status();
  ASSERT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1A\n"));
  const PngHeader h = ParsePng(*png);
  EXPECT_EQ(h.width, 37u);
  EXPECT_EQ(h.height, 21u);
  EXPECT_EQ(h.depth, c.depth);
  EXPECT_EQ(h.color_type, c.color_type);
  EXPECT_EQ(h.interlace, c.options.interlace ? 1 : 0);
  EXPECT_EQ(h.has_plte, c.options.palette);
}

PngEncodeOptions Png(int depth, bool palette = false, bool interlace = false) {
  PngEncodeOptions o;
  o.bit_depth = depth;
  o.palette = palette;
  o.interlace = interlace;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, PngKindTest,
    ::testing::Values(PngCase{"gray8", 1, Png(8), 8, 0}, PngCase{"gray1", 1, Png(1), 1, 0},
                      PngCase{"gray4", 1, Png(4), 4, 0}, PngCase{"gray16", 1, Png(16), 16, 0},
                      PngCase{"gray_alpha", 2, Png(8), 8, 4}, PngCase{"rgb", 3, Png(8), 8, 2},
                      PngCase{"rgb16", 3, Png(16), 16, 2}, PngCase{"rgba", 4, Png(8), 8, 6},
                      PngCase{"rgba16", 4, Png(16), 16, 6},
                      PngCase{"palette", 3, Png(8, true), 8, 3},
                      PngCase{"palette_alpha", 4, Png(8, true), 8, 3},
                      PngCase{"interlaced", 3, Png(8, false, true), 8, 2}),
    [](const ::testing::TestParamInfo<PngCase>& p) { return p.param.name; });

TEST(EncodePngTest, PaletteWithAlphaWritesTrns) {
  Image img = PhotoLike(16, 16, 4);
  for (auto& p : img.pixels) p &= 0xC0;
  auto png = EncodePng(img.view(), Png(8, true));
  ASSERT_TRUE(png.ok()) << png.status();
  EXPECT_TRUE(ParsePng(*png).has_trns);
}

TEST(EncodePngTest, RejectsBadOptions) {
  const Image rgb = PhotoLike(32, 32, 3);
  EXPECT_TRUE(absl::IsInvalidArgument(EncodePng(rgb.view(), Png(3)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EncodePng(rgb.view(), Png(4)).status()))
      << "sub-8-bit RGB is not a PNG colour type";
  EXPECT_TRUE(absl::IsInvalidArgument(EncodePng(rgb.view(), Png(16, true)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EncodePng(rgb.view(), Png(8, true)).status()))
      << "a photo has more than 256 colours";
  PngEncodeOptions level;
  level.compression_level = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(EncodePng(rgb.view(), level).status()));
}

}  // namespace
}  // namespace flowloader::decode
