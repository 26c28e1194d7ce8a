// pillow_resample_test: PillowResample's SIMD passes give the plain passes' bytes
// (Pillow's, which resize_pil_test and head_test check against PIL) for random
// geometries: crops of windows (a stride wider than the row), boxes with fractions,
// down- and upscales, every filter, flipped or not.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"

namespace flowloader::augment {
namespace {

Image Noise(int w, int h, uint32_t seed) {
  Image img;
  img.Resize(w, h, 3);
  std::mt19937 rng(seed);
  for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(rng());
  // Runs of extremes, so that clamping at 0 and 255 is exercised.
  for (size_t i = 0; i < img.pixels.size(); i += 97) {
    const uint8_t v = (i / 97) % 2 ? 255 : 0;
    for (size_t j = i; j < std::min(img.pixels.size(), i + 40); ++j) img.pixels[j] = v;
  }
  return img;
}

Image Resample(const ImageView& src, const RectF& box, int w, int h, Interpolation f, bool flip,
          bool scalar) {
  internal::SetPillowScalarForTesting(scalar);
  Image out;
  internal::PillowResample(src, box, w, h, f, flip, &out);
  internal::SetPillowScalarForTesting(false);
  return out;
}

TEST(PillowResampleTest, SimdMatchesPlainPasses) {
  std::mt19937 rng(5);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 400; ++round) {
    const int iw = integer(1, 520), ih = integer(1, 420);
    const Image img = Noise(iw, ih, round);
    // A window of the image, as a head's clamped window is: a stride wider than its row,
    // and the image's last pixel at the window's end or not.
    const int wx = integer(0, iw - 1), wy = integer(0, ih - 1);
    const int ww = integer(1, iw - wx), wh = integer(1, ih - wy);
    const ImageView window{img.pixels.data() + wy * img.stride() + wx * 3, ww, wh, 3,
                           img.stride()};
    RectF box;
    if (round % 3 == 0) {
      box = RectF{0, 0, static_cast<double>(ww), static_cast<double>(wh)};  // F.resized_crop.
    } else {
      box.w = uniform(0.5, ww);
      box.h = uniform(0.5, wh);
      box.x = uniform(0, ww - box.w);
      box.y = uniform(0, wh - box.h);
    }
    const int ow = round % 7 == 0 ? ww : integer(1, 300);
    const int oh = round % 11 == 0 ? wh : integer(1, 300);
    const Interpolation f = round % 5 == 0 ? Interpolation::kBilinear : Interpolation::kBicubic;
    const bool flip = round % 2 == 1;
    const Image want = Resample(window, box, ow, oh, f, flip, true);
    const Image got = Resample(window, box, ow, oh, f, flip, false);
    ASSERT_EQ(got.width, want.width);
    ASSERT_EQ(got.height, want.height);
    ASSERT_TRUE(got.pixels == want.pixels)
        << "round " << round << ": " << ww << "x" << wh << " box " << box.x << "," << box.y
        << " " << box.w << "x" << box.h << " -> " << ow << "x" << oh << " filter "
        << static_cast<int>(f) << " flip " << flip;
  }
}

// DINO's geometries: 2 x 224 from 40-100% of the area, 8 x 96 from 5-40%.
TEST(PillowResampleTest, MultiCropGeometries) {
  const Image img = Noise(500, 375, 9);
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    const int n = i % 5 < 1 ? 224 : 96;
    const int side = std::uniform_int_distribution<int>(n == 224 ? 230 : 84, 370)(rng);
    const int x = std::uniform_int_distribution<int>(0, 500 - side)(rng);
    const int y = std::uniform_int_distribution<int>(0, 375 - side)(rng);
    const ImageView crop{img.pixels.data() + y * img.stride() + x * 3, side, side, 3,
                         img.stride()};
    const RectF box{0, 0, static_cast<double>(side), static_cast<double>(side)};
    const Image want = Resample(crop, box, n, n, Interpolation::kBicubic, i % 2, true);
    const Image got = Resample(crop, box, n, n, Interpolation::kBicubic, i % 2, false);
    ASSERT_TRUE(got.pixels == want.pixels) << "crop " << i << " side " << side << " -> " << n;
  }
}

}  // namespace
}  // namespace flowloader::augment
