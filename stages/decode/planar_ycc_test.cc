// planar_ycc_test.cc: a region decode handed over as Y, Cb and Cr planes
// (PixelFormat::kYcc) holds exactly the samples libjpeg's raw-data mode (its public API
// for unconverted, un-upsampled output) gives for the whole image, at the right place.
#include <cstdio>  // jpeglib.h needs FILE.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "jpeglib.h"
#include "stages/core/rng.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::decode {
namespace {

constexpr int kW = 451;  // Odd sizes: partial iMCUs at the right and bottom.
constexpr int kH = 379;

// RawPlanes is one component of a whole-image raw-data decode at scale k/8.
struct RawPlane {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> samples;  // width x height.
  uint8_t at(int x, int y) const { return samples[static_cast<size_t>(y) * width + x]; }
};

// RawDecode decodes `bytes` with raw_data_out: every component's samples as stored
// (after the IDCT, before upsampling and colour conversion). libjpeg's default error
// handler exits on error, acceptable for a test's own well-formed files.
std::vector<RawPlane> RawDecode(const std::string& bytes, int k) {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  jpeg_read_header(&cinfo, TRUE);
  cinfo.raw_data_out = TRUE;
  cinfo.scale_num = k;
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  const int n = cinfo.num_components;
  std::vector<RawPlane> planes(n);
  std::vector<std::vector<uint8_t>> buffers(n);
  std::vector<std::vector<JSAMPROW>> rows(n);
  std::vector<JSAMPARRAY> image(n);
  int group_rows[MAX_COMPONENTS];
  for (int c = 0; c < n; ++c) {
    const jpeg_component_info& comp = cinfo.comp_info[c];
    planes[c].width = static_cast<int>(comp.downsampled_width);
    planes[c].height = static_cast<int>(comp.downsampled_height);
    const int stride = static_cast<int>(comp.width_in_blocks) * comp.DCT_scaled_size;
    group_rows[c] = comp.v_samp_factor * comp.DCT_scaled_size;
    buffers[c].resize(static_cast<size_t>(stride) * group_rows[c]);
    for (int r = 0; r < group_rows[c]; ++r) rows[c].push_back(&buffers[c][r * stride]);
    image[c] = rows[c].data();
  }
  const int lines = cinfo.max_v_samp_factor * cinfo.min_DCT_scaled_size;
  for (int group = 0; cinfo.output_scanline < cinfo.output_height; ++group) {
    EXPECT_GT(jpeg_read_raw_data(&cinfo, image.data(), lines), 0u);
    for (int c = 0; c < n; ++c) {
      for (int r = 0; r < group_rows[c]; ++r) {
        const int y = group * group_rows[c] + r;
        if (y >= planes[c].height) break;
        for (int x = 0; x < planes[c].width; ++x) {
          planes[c].samples.push_back(rows[c][r][x]);
        }
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return planes;
}

std::string Encode(ChromaSubsampling subsampling, bool progressive) {
  JpegEncodeOptions options;
  options.subsampling = subsampling;
  options.progressive = progressive;
  absl::StatusOr<std::string> bytes =
      EncodeJpeg(testing::PhotoLike(kW, kH, 3, 5).view(), options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

// ExpectPlanesMatchRaw checks every sample of `got` (a kYcc decode) against the raw
// planes of the whole image at the decode's scale.
void ExpectPlanesMatchRaw(const DecodedImage& got, const std::vector<RawPlane>& raw,
                          const std::string& what) {
  ASSERT_EQ(got.format, PixelFormat::kYcc) << what;
  const int x0 = static_cast<int>(got.covered.x * got.scale_x);  // Scaled pixels.
  const int y0 = static_cast<int>(got.covered.y * got.scale_y);
  ASSERT_EQ(x0, got.covered.x * got.scale_x) << what;
  ASSERT_EQ(y0, got.covered.y * got.scale_y) << what;
  const Image& y_plane = got.image;
  for (int y = 0; y < y_plane.height; ++y) {
    for (int x = 0; x < y_plane.width; ++x) {
      ASSERT_EQ(y_plane.pixels[static_cast<size_t>(y) * y_plane.width + x],
                raw[0].at(x0 + x, y0 + y))
          << what << ": Y at (" << x << ", " << y << ")";
    }
  }
  const ChromaPlanes& c = got.chroma;
  ASSERT_EQ(x0 % c.step_x, 0) << what << ": the crop starts inside a chroma sample";
  const int cx0 = x0 / c.step_x;
  const int cy0 = (y0 - c.phase_y) / c.step_y;
  ASSERT_EQ(cy0 * c.step_y + c.phase_y, y0) << what;
  const ImageView planes[2] = {c.cb(got.image), c.cr(got.image)};
  for (int p = 0; p < 2; ++p) {
    for (int y = 0; y < c.height; ++y) {
      for (int x = 0; x < c.width; ++x) {
        ASSERT_EQ(planes[p].Row(y)[x], raw[1 + p].at(cx0 + x, cy0 + y))
            << what << ": " << (p == 0 ? "Cb" : "Cr") << " at (" << x << ", " << y << ")";
      }
    }
  }
}

struct Case {
  const char* name;
  ChromaSubsampling subsampling;
  bool progressive;
  int step_x;  // Expected chroma steps at k = 8.
  int step_y;
};

class PlanarYccTest : public ::testing::TestWithParam<Case> {};

TEST_P(PlanarYccTest, RegionPlanesAreTheStoredSamples) {
  const Case& c = GetParam();
  const std::string bytes = Encode(c.subsampling, c.progressive);
  auto decoder = Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  SampleRng rng(3, 0, 0);
  for (int k : {8, 4}) {
    const std::vector<RawPlane> raw = RawDecode(bytes, k);
    ASSERT_EQ(raw.size(), 3u);
    for (int i = 0; i < 30; ++i) {
      // Regions of every parity, including ones starting on odd rows (phase 1) and deep
      // in the image (skipped rows).
      const double w = rng.Uniform(1, kW), h = rng.Uniform(1, kH);
      RegionRequest request;
      request.region = RectF{rng.Uniform(0, kW - w), rng.Uniform(0, kH - h), w, h};
      request.target_width = static_cast<int>(w * k / 8);
      request.target_height = static_cast<int>(h * k / 8);
      request.accept_ycc = true;
      DecodedImage out;
      ASSERT_TRUE((*decoder)->Decode(bytes, ImageInfo{}, &request, &out).ok());
      ASSERT_EQ(out.scale_x, k / 8.0);
      if (k == 8) {
        EXPECT_EQ(out.chroma.step_x, c.step_x);
        EXPECT_EQ(out.chroma.step_y, c.step_y);
      }
      ExpectPlanesMatchRaw(out, raw, std::string(c.name) + " k=" + std::to_string(k) +
                                         " region " + std::to_string(i));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, PlanarYccTest,
    ::testing::Values(Case{"ycc420", ChromaSubsampling::k420, false, 2, 2},
                      Case{"ycc422", ChromaSubsampling::k422, false, 2, 1},
                      Case{"ycc440", ChromaSubsampling::k440, false, 1, 2},
                      Case{"ycc444", ChromaSubsampling::k444, false, 1, 1},
                      Case{"progressive420", ChromaSubsampling::k420, true, 2, 2}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Everything the planes cannot describe, or nobody asked for, stays RGB.
TEST(PlanarYccFallbackTest, OtherwiseRgb) {
  auto decoder = Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  RegionRequest request;
  request.region = RectF{10, 20, 200, 150};
  request.target_width = 100;
  request.target_height = 100;
  request.accept_ycc = true;
  const auto decode = [&](const std::string& bytes, const Decoder& d,
                          const RegionRequest* r) {
    DecodedImage out;
    EXPECT_TRUE(d.Decode(bytes, ImageInfo{}, r, &out).ok());
    EXPECT_EQ(out.image.channels, out.format == PixelFormat::kYcc ? 1 : 3);
    return out.format;
  };
  const std::string ycc420 = Encode(ChromaSubsampling::k420, false);
  // 4:1:1 chroma covers 4 pixels across: not a step the planes allow.
  EXPECT_EQ(decode(Encode(ChromaSubsampling::k411, false), **decoder, &request),
            PixelFormat::kRgb);
  JpegEncodeOptions gray_options;
  absl::StatusOr<std::string> gray =
      EncodeJpeg(testing::PhotoLike(kW, kH, 1, 5).view(), gray_options);
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(decode(*gray, **decoder, &request), PixelFormat::kRgb);
  JpegEncodeOptions cmyk_options;
  cmyk_options.color = JpegColor::kCmyk;
  absl::StatusOr<std::string> cmyk =
      EncodeJpeg(testing::PhotoLike(kW, kH, 3, 5).view(), cmyk_options);
  ASSERT_TRUE(cmyk.ok());
  EXPECT_EQ(decode(*cmyk, **decoder, &request), PixelFormat::kRgb);
  // Not asked for, no request at all, or turned off.
  RegionRequest rgb_request = request;
  rgb_request.accept_ycc = false;
  EXPECT_EQ(decode(ycc420, **decoder, &rgb_request), PixelFormat::kRgb);
  EXPECT_EQ(decode(ycc420, **decoder, nullptr), PixelFormat::kRgb);
  DecoderOptions off;
  off.planar_ycc = false;
  EXPECT_EQ(decode(ycc420, **Decoder::Create(off), &request), PixelFormat::kRgb);
  DecoderOptions merged;
  merged.fancy_upsampling = false;
  EXPECT_EQ(decode(ycc420, **Decoder::Create(merged), &request), PixelFormat::kRgb);
  // And the planes are what was asked for otherwise.
  EXPECT_EQ(decode(ycc420, **decoder, &request), PixelFormat::kYcc);
}

// A buffer reused from an RGB decode and back keeps each decode's own format.
TEST(PlanarYccFallbackTest, ReusedOutputFollowsEachDecode) {
  auto decoder = Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  const std::string bytes = Encode(ChromaSubsampling::k420, false);
  RegionRequest request{RectF{0, 0, kW, kH}, kW, kH};
  DecodedImage out;
  for (bool ycc : {true, false, true}) {
    request.accept_ycc = ycc;
    ASSERT_TRUE((*decoder)->Decode(bytes, ImageInfo{}, &request, &out).ok());
    EXPECT_EQ(out.format, ycc ? PixelFormat::kYcc : PixelFormat::kRgb);
    const size_t luma = static_cast<size_t>(kW) * kH;
    EXPECT_EQ(out.image.pixels.size(),
              ycc ? luma + 2 * static_cast<size_t>(out.chroma.width) * out.chroma.height
                  : 3 * luma);
  }
}

}  // namespace
}  // namespace flowloader::decode
