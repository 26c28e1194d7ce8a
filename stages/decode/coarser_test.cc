// coarser_test: HalveDecoded is the rounded 2×2 mean (odd edges paired with themselves)
// whatever the width's remainder against its four-pixel kernel; HalvingsFor keeps a
// view's target pixels as the decoder's DCT-scale choice does.
#include "stages/decode/coarser.h"

#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace flowloader::decode {
namespace {

DecodedImage Random(int w, int h, uint32_t seed) {
  DecodedImage d;
  d.image.Resize(w, h, 3);
  std::mt19937 rng(seed);
  for (uint8_t& v : d.image.pixels) v = static_cast<uint8_t>(rng());
  d.covered = RectF{10, 20, w / 0.5, h / 0.5};  // A region decoded at scale 1/2.
  d.scale_x = d.scale_y = 0.5;
  return d;
}

TEST(CoarserTest, HalveIsTheRounded2x2Mean) {
  for (int w : {1, 2, 3, 7, 8, 9, 10, 33}) {
    for (int h : {1, 2, 5}) {
      const DecodedImage in = Random(w, h, static_cast<uint32_t>(w * 100 + h));
      DecodedImage out;
      HalveDecoded(in, &out);
      ASSERT_EQ(out.image.width, (w + 1) / 2);
      ASSERT_EQ(out.image.height, (h + 1) / 2);
      EXPECT_EQ(out.scale_x, 0.25);
      EXPECT_EQ(out.covered.x, 10);
      EXPECT_GE(out.covered.w, in.covered.w);  // Still spans the input.
      for (int y = 0; y < out.image.height; ++y) {
        for (int x = 0; x < out.image.width; ++x) {
          for (int c = 0; c < 3; ++c) {
            const auto at = [&](int xi, int yi) {
              return int{in.image.pixels[(std::min(yi, h - 1) * w + std::min(xi, w - 1)) * 3 + c]};
            };
            const int want =
                (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) +
                 at(2 * x + 1, 2 * y + 1) + 2) >> 2;
            ASSERT_EQ(out.image.pixels[(y * out.image.width + x) * 3 + c], want)
                << w << "x" << h << " at " << x << "," << y << " channel " << c;
          }
        }
      }
    }
  }
}

TEST(CoarserTest, HalvingsKeepTheTargetsPixels) {
  DecodedImage d = Random(400, 400, 1);
  d.scale_x = d.scale_y = 1.0;
  RegionRequest r;
  r.region = RectF{0, 0, 400, 300};
  r.target_width = r.target_height = 96;
  EXPECT_EQ(HalvingsFor(d, r), 1);  // 300 / 4 = 75 < 96 rows.
  r.region.h = 400;
  EXPECT_EQ(HalvingsFor(d, r), 2);  // 100 >= 96 both ways.
  r.target_width = 224;
  EXPECT_EQ(HalvingsFor(d, r), 0);  // 200 < 224.
  d.scale_x = d.scale_y = 0.5;      // Already decoded at half scale.
  r.target_width = 96;
  EXPECT_EQ(HalvingsFor(d, r), 1);
  d.format = PixelFormat::kYcc;
  EXPECT_EQ(HalvingsFor(d, r), 0);  // Only RGB images are halved.
}

}  // namespace
}  // namespace flowloader::decode
