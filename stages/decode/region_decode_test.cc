// region_decode_test.cc: region and DCT-scaled JPEG decode agree with a full decode
// once mapped back through DecodedImage::covered and scale_x/scale_y.
#include <cmath>
#include <iostream>
#include <string>

#include "gtest/gtest.h"
#include "stages/core/rng.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

using testing::AreaResize;
using testing::Crop;
using testing::MaxAbsDiff;
using testing::PhotoLike;
using testing::Psnr;

constexpr int kW = 451;  // Odd sizes: partial iMCUs at the right and bottom.
constexpr int kH = 379;

struct KindCase {
  const char* name;
  int channels;
  ChromaSubsampling subsampling;
  bool progressive;
  JpegColor color;
  int restart_interval;
  // Lowest PSNR allowed of a DCT-scaled decode against an ideal area downscale. Where
  // chroma is subsampled in one direction only (4:2:2, 4:4:0, 4:1:1), libjpeg cannot
  // scale chroma's IDCT to avoid upsampling at k <= 2, so colour edges blur there
  // (inherent to the file, not geometry: a one-pixel shift costs 444 about 15 dB).
  double min_scaled_psnr;
};

const KindCase kKinds[] = {
    {"ycc444", 3, ChromaSubsampling::k444, false, JpegColor::kDefault, 0, 30},
    {"ycc420", 3, ChromaSubsampling::k420, false, JpegColor::kDefault, 0, 30},
    {"ycc422", 3, ChromaSubsampling::k422, false, JpegColor::kDefault, 0, 20},
    {"ycc440", 3, ChromaSubsampling::k440, false, JpegColor::kDefault, 0, 20},
    {"ycc411", 3, ChromaSubsampling::k411, false, JpegColor::kDefault, 0, 16},
    {"progressive420", 3, ChromaSubsampling::k420, true, JpegColor::kDefault, 0, 30},
    {"gray", 1, ChromaSubsampling::k420, false, JpegColor::kDefault, 0, 30},
    {"cmyk", 3, ChromaSubsampling::k444, false, JpegColor::kCmyk, 0, 30},
    {"ycck420", 3, ChromaSubsampling::k420, false, JpegColor::kYcck, 0, 30},
    {"restarts420", 3, ChromaSubsampling::k420, false, JpegColor::kDefault, 5, 30},
};

class RegionDecodeTest : public ::testing::TestWithParam<KindCase> {
 protected:
  void SetUp() override {
    const KindCase& c = GetParam();
    JpegEncodeOptions options;
    options.subsampling = c.subsampling;
    options.progressive = c.progressive;
    options.color = c.color;
    options.restart_interval = c.restart_interval;
    auto bytes = EncodeJpeg(PhotoLike(kW, kH, c.channels, 7).view(), options);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    bytes_ = *bytes;
    auto decoder = Decoder::Create({});
    ASSERT_TRUE(decoder.ok());
    decoder_ = *std::move(decoder);
    auto info = decoder_->ReadInfo(bytes_);
    ASSERT_TRUE(info.ok()) << info.status();
    info_ = *info;
    ASSERT_TRUE(decoder_->Decode(bytes_, info_, nullptr, &full_).ok());
  }

  // RandomRegion draws a region of at least min_side px with fractional edges.
  static RectF RandomRegion(SampleRng& rng, double min_side) {
    const double w = rng.Uniform(min_side, kW), h = rng.Uniform(min_side, kH);
    return RectF{rng.Uniform(0, kW - w), rng.Uniform(0, kH - h), w, h};
  }

  // DecodeRegion decodes `region` for a target size and checks the geometry contract.
  DecodedImage DecodeRegion(const RectF& region, int target_w, int target_h) {
    RegionRequest request{region, target_w, target_h};
    DecodedImage out;
    const absl::Status status = decoder_->Decode(bytes_, info_, &request, &out);
    EXPECT_TRUE(status.ok()) << status;
    const RectF& c = out.covered;
    EXPECT_EQ(c.x, std::floor(c.x));
    EXPECT_EQ(c.y, std::floor(c.y));
    EXPECT_EQ(c.w, std::floor(c.w));
    EXPECT_EQ(c.h, std::floor(c.h));
    EXPECT_LE(c.x, region.x);
    EXPECT_LE(c.y, region.y);
    EXPECT_GE(c.x + c.w, region.x + region.w);
    EXPECT_GE(c.y + c.h, region.y + region.h);
    EXPECT_GE(c.x, 0);
    EXPECT_GE(c.y, 0);
    EXPECT_LE(c.x + c.w, kW);
    EXPECT_LE(c.y + c.h, kH);
    // Decoded pixels span the covered box at the scale; the last one may also cover
    // edge padding where the box ends at the image edge.
    EXPECT_EQ(out.image.width, std::ceil(c.w * out.scale_x));
    EXPECT_EQ(out.image.height, std::ceil(c.h * out.scale_y));
    return out;
  }

  std::string bytes_;
  std::unique_ptr<Decoder> decoder_;
  ImageInfo info_;
  DecodedImage full_;
};

// Box is an integer pixel box.
struct Box {
  int x, y, w, h;
};

// RequestedBox is the part of `out` that shows `region`: the decoded pixels any of whose
// area lies inside it, at out's scale and offset.
Box RequestedBox(const DecodedImage& out, const RectF& region) {
  const double u0 = (region.x - out.covered.x) * out.scale_x;
  const double v0 = (region.y - out.covered.y) * out.scale_y;
  const double u1 = (region.x + region.w - out.covered.x) * out.scale_x;
  const double v1 = (region.y + region.h - out.covered.y) * out.scale_y;
  const int x = static_cast<int>(std::floor(u0)), y = static_cast<int>(std::floor(v0));
  const int x1 = std::min(out.image.width, static_cast<int>(std::ceil(u1)));
  const int y1 = std::min(out.image.height, static_cast<int>(std::ceil(v1)));
  return Box{x, y, x1 - x, y1 - y};
}

TEST_P(RegionDecodeTest, FullScaleRegionMatchesFullDecodeExactly) {
  SampleRng rng(11, 0, 0);
  for (int i = 0; i < 40; ++i) {
    const RectF region = RandomRegion(rng, 1);
    // A target the size of the region: no DCT scaling.
    const DecodedImage out = DecodeRegion(region, static_cast<int>(region.w) + 1,
                                          static_cast<int>(region.h) + 1);
    ASSERT_EQ(out.scale_x, 1.0);
    ASSERT_EQ(out.scale_y, 1.0);
    const Box b = RequestedBox(out, region);
    const Image got = Crop(out.image.view(), b.x, b.y, b.w, b.h);
    const Image expected = Crop(full_.image.view(), b.x + static_cast<int>(out.covered.x),
                                b.y + static_cast<int>(out.covered.y), b.w, b.h);
    EXPECT_EQ(MaxAbsDiff(got.view(), expected.view()), 0)
        << "region " << region.x << "," << region.y << " " << region.w << "x" << region.h;
  }
}

TEST_P(RegionDecodeTest, DctScaledRegionMatchesScaledFullDecode) {
  SampleRng rng(12, 0, 0);
  for (int k : {1, 2, 4}) {  // The scales the decoder uses besides 1 (ChooseDctScale).
    // The whole image at k/8: the reference grid.
    RegionRequest whole{RectF{0, 0, kW, kH}, kW * k / 8, kH * k / 8};
    DecodedImage scaled_full;
    ASSERT_TRUE(decoder_->Decode(bytes_, info_, &whole, &scaled_full).ok());
    ASSERT_EQ(scaled_full.scale_x, k / 8.0);
    ASSERT_EQ(scaled_full.image.width, (kW * k + 7) / 8);  // ceil(W·k/8)
    ASSERT_EQ(scaled_full.image.height, (kH * k + 7) / 8);
    double worst_psnr = INFINITY;
    for (int i = 0; i < 12; ++i) {
      const RectF region = RandomRegion(rng, 64);
      // Asking for floor(size·k/8) pixels makes k the smallest scale that suffices.
      const int tw = static_cast<int>(region.w * k / 8), th = static_cast<int>(region.h * k / 8);
      const DecodedImage out = DecodeRegion(region, tw, th);
      ASSERT_EQ(out.scale_x, k / 8.0);
      ASSERT_EQ(out.scale_y, k / 8.0);
      // Covered edges are whole original pixels on the k/8 grid, so the region's pixels
      // sit at integer offsets in the scaled full decode.
      const double u0 = out.covered.x * k / 8, v0 = out.covered.y * k / 8;
      ASSERT_EQ(u0, std::floor(u0));
      ASSERT_EQ(v0, std::floor(v0));
      const Box b = RequestedBox(out, region);
      const Image got = Crop(out.image.view(), b.x, b.y, b.w, b.h);
      const Image same_grid = Crop(scaled_full.image.view(), b.x + static_cast<int>(u0),
                                   b.y + static_cast<int>(v0), b.w, b.h);
      EXPECT_EQ(MaxAbsDiff(got.view(), same_grid.view()), 0) << "k=" << k;
      // And close to an ideal downscale of the full-resolution pixels it covers.
      const Image full_res =
          Crop(full_.image.view(), static_cast<int>(out.covered.x),
               static_cast<int>(out.covered.y), static_cast<int>(out.covered.w),
               static_cast<int>(out.covered.h));
      const Image ideal =
          AreaResize(full_res.view(), out.image.width, out.image.height, k / 8.0, k / 8.0);
      worst_psnr = std::min(worst_psnr, Psnr(out.image.view(), ideal.view()));
    }
    std::cout << GetParam().name << ": k=" << k << " worst PSNR vs area downscale "
              << worst_psnr << " dB\n";
    EXPECT_GE(worst_psnr, GetParam().min_scaled_psnr) << "k=" << k;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, RegionDecodeTest, ::testing::ValuesIn(kKinds),
    [](const ::testing::TestParamInfo<KindCase>& p) { return p.param.name; });

TEST(DctScaleTest, ScaleIsExactlyKOver8NotOutputOverImageSize) {
  // libjpeg turns each 8×8 block into k×k pixels, so original x maps to x·k/8; the
  // output is ceil(W·k/8) wide only because the last block is partly edge padding.
  // output_width / image_width would stretch the grid by up to a pixel at the far edge.
  // (Files whose chroma is subsampled 2× or 4× in one direction only are left out: their
  // blurred chroma at k <= 2 drowns the geometric signal.)
  auto decoder = Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  for (int channels : {1, 3}) {
    for (ChromaSubsampling sub : {ChromaSubsampling::k444, ChromaSubsampling::k420}) {
      if (channels == 1 && sub != ChromaSubsampling::k444) continue;  // Gray: no chroma.
      JpegEncodeOptions options;
      options.subsampling = sub;
      auto bytes = EncodeJpeg(PhotoLike(kW, kH, channels, 7).view(), options);
      ASSERT_TRUE(bytes.ok());
      DecodedImage full;
      ASSERT_TRUE((*decoder)->Decode(*bytes, ImageInfo{}, nullptr, &full).ok());
      for (int k : {1, 2, 4}) {
        RegionRequest whole{RectF{0, 0, kW, kH}, kW * k / 8, kH * k / 8};
        DecodedImage scaled;
        ASSERT_TRUE((*decoder)->Decode(*bytes, ImageInfo{}, &whole, &scaled).ok());
        const int ow = scaled.image.width, oh = scaled.image.height;
        const double k_over_8 =
            Psnr(scaled.image.view(),
                 AreaResize(full.image.view(), ow, oh, k / 8.0, k / 8.0).view());
        const double stretched =
            Psnr(scaled.image.view(),
                 AreaResize(full.image.view(), ow, oh, static_cast<double>(ow) / kW,
                            static_cast<double>(oh) / kH)
                     .view());
        std::cout << channels << " channel(s), subsampling " << static_cast<int>(sub)
                  << ", k=" << k << ": PSNR with scale k/8 " << k_over_8
                  << " dB, with output/image " << stretched << " dB\n";
        EXPECT_GT(k_over_8, stretched + 3) << "k=" << k;
      }
    }
  }
}

struct ScaleCase {
  RectF region;
  int target_w, target_h;
  bool dct_scaling;
  double scale;
};

TEST(DctScaleTest, ChoosesSmallestScaleThatKeepsTheTargetSize) {
  const ScaleCase cases[] = {
      {{20, 40, 400, 300}, 100, 75, true, 2 / 8.0},    // Exactly a quarter.
      {{20, 40, 400, 300}, 101, 75, true, 4 / 8.0},    // One column more: 3/8 would do,
                                                       // but only powers of two are used.
      {{0, 0, 451, 379}, 224, 224, true, 1.0},         // 379·4/8 < 224: needs 5/8 → full.
      {{0, 0, 451, 379}, 225, 189, true, 4 / 8.0},     // Half still has 225×189.
      {{0, 0, 451, 379}, 40, 30, true, 1 / 8.0},       // Smallest libjpeg offers.
      {{10, 10, 100, 100}, 200, 200, true, 1.0},       // Upsampling downstream: full.
      {{20, 40, 400, 300}, 100, 75, false, 1.0},       // dct_scaling off.
      {{20, 40, 400, 300}, 0, 0, true, 1.0},           // No target: full.
  };
  auto bytes = EncodeJpeg(PhotoLike(kW, kH, 3).view(), {});
  ASSERT_TRUE(bytes.ok());
  for (const ScaleCase& c : cases) {
    DecoderOptions options;
    options.dct_scaling = c.dct_scaling;
    auto decoder = Decoder::Create(options);
    ASSERT_TRUE(decoder.ok());
    RegionRequest request{c.region, c.target_w, c.target_h};
    DecodedImage out;
    ASSERT_TRUE((*decoder)->Decode(*bytes, ImageInfo{}, &request, &out).ok());
    EXPECT_EQ(out.scale_x, c.scale) << c.target_w << "x" << c.target_h;
    EXPECT_EQ(out.scale_y, c.scale) << c.target_w << "x" << c.target_h;
    EXPECT_GE(out.image.width, c.target_w * (c.scale < 1));
    EXPECT_GE(out.image.height, c.target_h * (c.scale < 1));
  }
}

TEST(DctScaleTest, RegionBeyondTheImageIsClampedToIt) {
  auto bytes = EncodeJpeg(PhotoLike(kW, kH, 3).view(), {});
  ASSERT_TRUE(bytes.ok());
  auto decoder = Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  RegionRequest request{RectF{-10.5, -3, kW + 20, kH + 9}, kW, kH};
  DecodedImage out;
  ASSERT_TRUE((*decoder)->Decode(*bytes, ImageInfo{}, &request, &out).ok());
  EXPECT_EQ(out.covered.x, 0);
  EXPECT_EQ(out.covered.y, 0);
  EXPECT_EQ(out.covered.w, kW);
  EXPECT_EQ(out.covered.h, kH);
  EXPECT_EQ(out.image.width, kW);
  EXPECT_EQ(out.image.height, kH);
}

}  // namespace
}  // namespace flowloader::decode
