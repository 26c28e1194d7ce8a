// pillow_resample_test: PillowResample's SIMD passes (AVX2, and AVX-512 VNNI's vpdpwssd
// and vpdpbusd kernels where the CPU has them) give the plain passes' bytes (Pillow's,
// which resize_pil_test and head_test check against PIL) for random geometries: crops of
// windows (a stride wider than the row), boxes with fractions, down- and upscales, every
// filter, flipped or not. And its tap tables (PrecomputePillowTaps, several taps at a
// time) against Pillow's precompute_coeffs + normalize_coeffs_8bpc as Resample.c writes
// them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/transform.h"
#include "stages/core/image.h"
#include "stages/core/resources.h"
#include "stages/core/sanitizers.h"

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

// Passes: the plain ones, AVX2 only, or the best this CPU has (the horizontal pass's
// AVX-512 VNNI kernels where present; AVX2 again elsewhere).
// The VNNI passes with vpdpwssd only (where the CPU has the vpdpbusd kernel too).
enum class Passes { kPlain, kAvx2, kVnni, kBest };

Image Resample(const ImageView& src, const RectF& box, int w, int h, Interpolation f, bool flip,
               Passes passes) {
  internal::SetPillowScalarForTesting(passes == Passes::kPlain);
  internal::SetPillowNoVnniForTesting(passes == Passes::kAvx2);
  internal::SetPillowNoBusdForTesting(passes == Passes::kVnni);
  Image out;
  internal::PillowResample(src, box, w, h, f, flip, &out);
  internal::SetPillowScalarForTesting(false);
  internal::SetPillowNoVnniForTesting(false);
  internal::SetPillowNoBusdForTesting(false);
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
    const Image want = Resample(window, box, ow, oh, f, flip, Passes::kPlain);
    for (const Passes passes : {Passes::kAvx2, Passes::kVnni, Passes::kBest}) {
      const Image got = Resample(window, box, ow, oh, f, flip, passes);
      ASSERT_EQ(got.width, want.width);
      ASSERT_EQ(got.height, want.height);
      ASSERT_TRUE(got.pixels == want.pixels)
          << "round " << round << ": " << ww << "x" << wh << " box " << box.x << "," << box.y
          << " " << box.w << "x" << box.h << " -> " << ow << "x" << oh << " filter "
          << static_cast<int>(f) << " flip " << flip << " passes " << static_cast<int>(passes);
    }
  }
}

// Each SIMD kernel variant against the plain passes: the horizontal kernel unrolled for
// 1 to 4 tap groups and the generic loop for more, its eight-output blocks (a 32-byte
// store over the next outputs' bytes) and four- and one-output tails (every out_w from 1
// to 41), the vertical pass's 32-value blocks, 8-value and byte tails, with the source
// row's end at the image's last byte or inside a wider window.
TEST(PillowResampleTest, FastPathsEveryGroupCountAndTail) {
  std::mt19937 rng(17);
  // Scales whose bicubic tap counts (about 4 x scale + 1) span 1 to 7 groups of four.
  const double scales[] = {0.6, 0.9, 1.3, 1.8, 2.4, 3.3, 4.2, 5.6, 6.8};
  int round = 0;
  for (const double scale : scales) {
    for (int ow = 1; ow <= 41; ++ow, ++round) {
      const int ww = std::max(1, static_cast<int>(ow * scale + 0.5));
      const int oh = std::uniform_int_distribution<int>(1, 13)(rng);
      const int wh = std::max(1, static_cast<int>(oh * scale + 0.5));
      const int pad = round % 2 ? 0 : 3;  // The window ends at the image's last byte or not.
      const Image img = Noise(ww + pad, wh + pad, 100 + round);
      const ImageView window{img.pixels.data(), ww, wh, 3, img.stride()};
      RectF box{0, 0, static_cast<double>(ww), static_cast<double>(wh)};
      if (round % 3 == 1) box = RectF{0.25, 0.5, ww - 0.5, wh - 0.75};
      for (const Interpolation f : {Interpolation::kBicubic, Interpolation::kBilinear}) {
        for (const bool flip : {false, true}) {
          const Image want = Resample(window, box, ow, oh, f, flip, Passes::kPlain);
          for (const Passes passes : {Passes::kAvx2, Passes::kVnni, Passes::kBest}) {
            const Image got = Resample(window, box, ow, oh, f, flip, passes);
            ASSERT_TRUE(got.pixels == want.pixels)
                << "scale " << scale << ": " << ww << "x" << wh << " -> " << ow << "x" << oh
                << " filter " << static_cast<int>(f) << " flip " << flip << " passes "
                << static_cast<int>(passes);
          }
        }
      }
    }
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
    const Image want = Resample(crop, box, n, n, Interpolation::kBicubic, i % 2, Passes::kPlain);
    for (const Passes passes : {Passes::kAvx2, Passes::kVnni, Passes::kBest}) {
      const Image got = Resample(crop, box, n, n, Interpolation::kBicubic, i % 2, passes);
      ASSERT_TRUE(got.pixels == want.pixels)
          << "crop " << i << " side " << side << " -> " << n << " passes "
          << static_cast<int>(passes);
    }
  }
}

// PillowTapsReference is Resample.c's precompute_coeffs + normalize_coeffs_8bpc, one
// value at a time, as PillowResample computed them before its taps took SSE4.1.
internal::PillowTaps PillowTapsReference(int in_size, double in0, double in1, int out_size,
                                         bool bicubic) {
  auto bilinear = [](double x) {
    if (x < 0.0) x = -x;
    return x < 1.0 ? 1.0 - x : 0.0;
  };
  auto bicubic_filter = [](double x) {
    constexpr double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
  };
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = (bicubic ? 2.0 : 1.0) * filterscale;
  internal::PillowTaps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.bounds.resize(2 * out_size);
  t.k.assign(static_cast<size_t>(out_size) * t.ksize, 0);
  std::vector<double> w(t.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(0, static_cast<int>(center - support + 0.5));
    const int xmax = std::min(in_size, static_cast<int>(center + support + 0.5)) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double arg = (x + xmin - center + 0.5) * ss;
      w[x] = bicubic ? bicubic_filter(arg) : bilinear(arg);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      double v = ww != 0.0 ? w[x] / ww : w[x];
      v *= (1 << 22);
      t.k[static_cast<size_t>(xx) * t.ksize + x] =
          static_cast<int>(v < 0 ? std::trunc(-0.5 + v) : std::trunc(0.5 + v));
    }
    t.bounds[2 * xx] = xmin;
    t.bounds[2 * xx + 1] = xmax;
  }
  return t;
}

// The taps of random spans (whole and fractional, inside and reaching past the edges),
// down- and upscales to odd and even sizes, with one table reused throughout (stale
// entries must all be rewritten); the AVX2 path (where the CPU has it), then the SSE4.1
// one (which the plain passes take).
TEST(PillowResampleTest, TapsMatchPillowCoefficients) {
  std::mt19937 rng(11);
  internal::PillowTaps taps;
  for (int i = 0; i < 8000; ++i) {
    internal::SetPillowScalarForTesting(i >= 4000);
    const int in_size = 1 + static_cast<int>(rng() % (i % 3 == 0 ? 40 : 1200));
    const int out_size = 1 + static_cast<int>(rng() % (i % 5 == 0 ? 9 : 300));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double in0 = unit(rng) * in_size * 0.5, in1 = in0 + unit(rng) * (in_size - in0);
    if (i % 2 == 0) {  // RandomResizedCrop's integer boxes.
      in0 = std::floor(in0);
      in1 = std::max(in0 + 1, std::floor(in1));
    }
    if (in1 <= in0) in1 = in0 + 0.5;
    const bool bicubic = i % 4 != 3;
    internal::PrecomputePillowTaps(in_size, in0, in1, out_size, bicubic, &taps);
    const internal::PillowTaps want = PillowTapsReference(in_size, in0, in1, out_size, bicubic);
    ASSERT_EQ(taps.ksize, want.ksize) << i;
    ASSERT_EQ(taps.bounds, want.bounds) << i;
    ASSERT_EQ(taps.k, want.k) << i << ": " << in_size << " [" << in0 << ", " << in1 << ") -> "
                              << out_size;
  }
  internal::SetPillowScalarForTesting(false);
}

TEST(PillowResampleTest, AResizeOfOneLargeImageKeepsNoLargeScratch) {
  if (kUnderSanitizer) GTEST_SKIP() << "a sanitizer keeps freed memory resident";
  // A 100 x 4000 image widened to 8192: the horizontal pass writes 8192 x 4000 x 3 bytes
  // (94 MiB). The thread kept that pass's image after the call, beside the next samples'
  // images and outside the worker's memory check (peak RSS over memory_limit_mb).
  Image src;
  src.Resize(100, 4000, 3);
  std::fill(src.pixels.begin(), src.pixels.end(), uint8_t{77});
  const int64_t before = ResidentBytes();
  {
    Image dst;
    internal::PillowResample(src.view(), RectF{0, 0, 100, 4000}, 8192, 4000,
                             Interpolation::kBilinear, false, &dst);
    ASSERT_EQ(dst.width, 8192);
    EXPECT_EQ(dst.pixels[12345], 77);
  }
  const int64_t kept = ResidentBytes() - before;
  EXPECT_LT(kept, int64_t{32} << 20) << "kept " << (kept >> 20) << " MiB";
}

}  // namespace
}  // namespace flowloader::augment
