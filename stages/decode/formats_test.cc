// formats_test: WebP, TIFF, GIF, BMP and PPM/PGM/PBM files written by PIL
// (testdata/make_format_fixtures.py) decode to PIL's own pixels (format_fixtures.h lists
// the two documented exceptions), region decodes keep the
// planned crop and its memory bound, and broken files are refused with their reason
// whatever the crop.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "stages/core/image.h"
#include "stages/core/sample_error.h"
#include "stages/decode/decoder.h"
#include "stages/decode/internal/test_images.h"
#include "stages/decode/testdata/format_fixtures.h"

namespace flowloader::decode {
namespace {

using testing::FormatFixture;
using testing::ReadBytes;

std::string g_script;  // argv[1]: make_format_fixtures.py.

class FormatsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(std::string(std::getenv("TEST_TMPDIR")) + "/formats");
    absl::StatusOr<std::vector<FormatFixture>> made = testing::MakeFormatFixtures(g_script, *dir_);
    ASSERT_TRUE(made.ok()) << made.status();
    fixtures_ = new std::vector<FormatFixture>(*std::move(made));
  }

  static std::vector<FormatFixture> Good() {
    std::vector<FormatFixture> out;
    for (const FormatFixture& f : *fixtures_) {
      if (f.good()) out.push_back(f);
    }
    return out;
  }
  static std::vector<FormatFixture> Bad() {
    std::vector<FormatFixture> out;
    for (const FormatFixture& f : *fixtures_) {
      if (!f.good()) out.push_back(f);
    }
    return out;
  }
  static std::string Bytes(const FormatFixture& f) { return ReadBytes(f.path(*dir_)); }
  static Image Reference(const FormatFixture& f) {
    Image img;
    img.Resize(f.width, f.height, 3);
    const std::string rgb = ReadBytes(f.reference_path(*dir_));
    EXPECT_EQ(rgb.size(), img.pixels.size()) << f.name;
    std::copy_n(rgb.begin(), std::min(rgb.size(), img.pixels.size()), img.pixels.begin());
    return img;
  }

  std::unique_ptr<Decoder> decoder_ = *Decoder::Create({});
  static std::string* dir_;
  static std::vector<FormatFixture>* fixtures_;
};

std::string* FormatsTest::dir_ = nullptr;
std::vector<FormatFixture>* FormatsTest::fixtures_ = nullptr;

// Every format and kind in the manifest is there (a fixture lost from the script would
// otherwise shrink the test silently).
TEST_F(FormatsTest, ManifestCoversEveryFormat) {
  std::map<std::string, int> good_by_ext, bad_by_ext;
  for (const FormatFixture& f : *fixtures_) {
    std::string ext = f.name.substr(f.name.rfind('.') + 1);
    (f.good() ? good_by_ext : bad_by_ext)[ext]++;
  }
  for (const char* ext : {"webp", "tif", "gif", "bmp", "ppm", "pgm"}) {
    EXPECT_GE(good_by_ext[ext], 2) << ext;
    EXPECT_GE(bad_by_ext[ext], 1) << ext;
  }
}

TEST_F(FormatsTest, FullDecodeEqualsPil) {
  for (const FormatFixture& f : Good()) {
    const std::string bytes = Bytes(f);
    absl::StatusOr<ImageInfo> info = decoder_->ReadInfo(bytes);
    ASSERT_TRUE(info.ok()) << f.name << ": " << info.status();
    EXPECT_NE(info->format, Format::kUnknown) << f.name;
    EXPECT_EQ(info->width, f.width) << f.name;
    EXPECT_EQ(info->height, f.height) << f.name;
    DecodedImage out;
    absl::Status s = decoder_->Decode(bytes, *info, nullptr, &out);
    ASSERT_TRUE(s.ok()) << f.name << ": " << s;
    ASSERT_EQ(out.image.width, f.width) << f.name;
    ASSERT_EQ(out.image.height, f.height) << f.name;
    const Image reference = Reference(f);
    const double psnr = testing::Psnr(out.image.view(), reference.view());
    std::printf("%-28s PSNR vs reference (%s): %s dB\n", f.name.c_str(), f.expect.c_str(),
                std::isinf(psnr) ? "inf" : std::to_string(psnr).c_str());
    EXPECT_EQ(testing::MaxAbsDiff(out.image.view(), reference.view()), 0)
        << f.name << " (PSNR " << psnr << " dB)";
  }
}

// A region decode at full scale holds the full decode's pixels wherever the region
// reaches, in a `covered` box that contains it.
TEST_F(FormatsTest, RegionDecodeIsTheFullDecodesCrop) {
  // Fractional, even and odd edges: libwebp snaps a crop's origin to even coordinates.
  const RectF regions[] = {{17.5, 9.25, 120, 90}, {20, 10, 100, 80}, {21, 11, 99, 79}};
  for (const RectF& region : regions) {
    for (const FormatFixture& f : Good()) {
      if (f.width < 140 || f.height < 100) continue;
      const std::string bytes = Bytes(f);
      DecodedImage full, part;
      ASSERT_TRUE(decoder_->Decode(bytes, {}, nullptr, &full).ok()) << f.name;
      RegionRequest request;
      request.region = region;
      ASSERT_TRUE(decoder_->Decode(bytes, {}, &request, &part).ok()) << f.name;
      EXPECT_EQ(part.scale_x, 1.0) << f.name;
      EXPECT_LE(part.covered.x, region.x) << f.name;
      EXPECT_LE(part.covered.y, region.y) << f.name;
      EXPECT_GE(part.covered.x + part.covered.w, region.x + region.w) << f.name;
      EXPECT_GE(part.covered.y + part.covered.h, region.y + region.h) << f.name;
      EXPECT_LT(part.image.width, f.width) << f.name;
      // The pixels the region touches (covered may be a little larger, decoder.h).
      const int x0 = static_cast<int>(std::floor(region.x));
      const int y0 = static_cast<int>(std::floor(region.y));
      const int x1 = static_cast<int>(std::ceil(region.x + region.w));
      const int y1 = static_cast<int>(std::ceil(region.y + region.h));
      const Image expected = testing::Crop(full.image.view(), x0, y0, x1 - x0, y1 - y0);
      const Image got = testing::Crop(part.image.view(), x0 - static_cast<int>(part.covered.x),
                                      y0 - static_cast<int>(part.covered.y), x1 - x0, y1 - y0);
      EXPECT_EQ(testing::MaxAbsDiff(got.view(), expected.view()), 0) << f.name;
    }
  }
}

// BlockMean is pixel (ox, oy) of `full` averaged over its block of bx × by pixels
// starting at (x0, y0), clipped to `full`, rounded to nearest.
uint8_t BlockMean(const Image& full, int x0, int y0, int bx, int by, int ox, int oy, int c) {
  uint32_t sum = 0, n = 0;
  for (int y = y0 + oy * by; y < std::min(full.height, y0 + (oy + 1) * by); ++y) {
    for (int x = x0 + ox * bx; x < std::min(full.width, x0 + (ox + 1) * bx); ++x) {
      sum += full.pixels[(static_cast<size_t>(y) * full.width + x) * 3 + c];
      ++n;
    }
  }
  return static_cast<uint8_t>((sum + n / 2) / n);
}

// With a target size, the output stays under twice the target (+ 1) per side: block
// means of the full decode for the row-decoded formats, libwebp's rescale of the same
// box (close to the block means) for WebP.
TEST_F(FormatsTest, TargetedDecodeIsBlockAveragedAndBounded) {
  constexpr int kTarget = 20;
  for (const FormatFixture& f : Good()) {
    if (f.width < 140) continue;
    const std::string bytes = Bytes(f);
    DecodedImage full, small;
    ASSERT_TRUE(decoder_->Decode(bytes, {}, nullptr, &full).ok()) << f.name;
    RegionRequest request;
    request.region = RectF{3, 5, 190, 150};
    request.target_width = kTarget;
    request.target_height = kTarget;
    ASSERT_TRUE(decoder_->Decode(bytes, {}, &request, &small).ok()) << f.name;
    EXPECT_GE(small.image.width, kTarget) << f.name;
    EXPECT_LE(small.image.width, 2 * kTarget + 1) << f.name;
    EXPECT_LE(small.image.height, 2 * kTarget + 1) << f.name;
    EXPECT_LE(small.image.pixels.capacity(), size_t{3} * (2 * kTarget + 2) * (2 * kTarget + 2))
        << f.name;
    const int bx = static_cast<int>(std::lround(1 / small.scale_x));
    const int by = static_cast<int>(std::lround(1 / small.scale_y));
    Image expected;
    expected.Resize(small.image.width, small.image.height, 3);
    for (int oy = 0; oy < expected.height; ++oy) {
      for (int ox = 0; ox < expected.width; ++ox) {
        for (int c = 0; c < 3; ++c) {
          expected.Row(oy)[ox * 3 + c] =
              BlockMean(full.image, static_cast<int>(small.covered.x),
                        static_cast<int>(small.covered.y), bx, by, ox, oy, c);
        }
      }
    }
    if (absl::EndsWith(f.name, ".webp")) {
      EXPECT_GT(testing::Psnr(small.image.view(), expected.view()), 28.0) << f.name;
    } else {
      EXPECT_EQ(testing::MaxAbsDiff(small.image.view(), expected.view()), 0) << f.name;
    }
  }
}

// A bad file is refused with its reason, by a full decode and by a decode of a small
// crop at the top-left corner alike; a bomb already by ReadInfo.
TEST_F(FormatsTest, BadFilesAreRefusedWithTheirReasonWhateverTheCrop) {
  for (const FormatFixture& f : Bad()) {
    const std::string bytes = Bytes(f);
    ASSERT_FALSE(bytes.empty()) << f.name;
    absl::StatusOr<ImageInfo> info = decoder_->ReadInfo(bytes);
    if (f.expect == reason::kTooManyPixels) {
      ASSERT_FALSE(info.ok()) << f.name;
      EXPECT_EQ(ErrorReason(info.status()), f.expect) << f.name << ": " << info.status();
      continue;
    }
    DecodedImage out;
    const absl::Status full = decoder_->Decode(bytes, {}, nullptr, &out);
    EXPECT_EQ(ErrorReason(full), f.expect) << f.name << ": " << full;
    if (!info.ok()) {
      EXPECT_EQ(ErrorReason(info.status()), f.expect) << f.name << ": " << info.status();
      continue;
    }
    RegionRequest corner;
    corner.region = RectF{0, 0, 8, 8};
    const absl::Status part = decoder_->Decode(bytes, {}, &corner, &out);
    EXPECT_EQ(ErrorReason(part), f.expect) << f.name << ": " << part;
  }
}

// Each format is refused from its header alone when a limit is lower than its size.
TEST_F(FormatsTest, PixelLimitAppliesToEveryFormatFromTheHeader) {
  DecoderOptions options;
  options.max_pixels = 203 * 157 - 1;
  std::unique_ptr<Decoder> strict = *Decoder::Create(options);
  for (const FormatFixture& f : Good()) {
    if (f.width != 203) continue;
    absl::StatusOr<ImageInfo> info = strict->ReadInfo(Bytes(f));
    ASSERT_FALSE(info.ok()) << f.name;
    EXPECT_EQ(ErrorReason(info.status()), reason::kTooManyPixels) << f.name;
  }
}

}  // namespace
}  // namespace flowloader::decode

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: formats_test MAKE_FORMAT_FIXTURES_PY\n");
    return 2;
  }
  flowloader::decode::g_script = argv[1];
  return RUN_ALL_TESTS();
}
