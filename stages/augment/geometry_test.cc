// geometry_test: the affine warp's fast paths (the four-pixel AVX2 kernels, the
// eight-pixel AVX-512 bilinear and bicubic steps, the whole-pixel shift copy) against
// PIL's per-pixel filters restated in geometry.cc (the portable path, which
// ops_parity_test checks against PIL itself), byte for byte, on random matrices and
// images, edges and tiny images included; the bilinear perspective warp's vector paths
// likewise; the shuffled horizontal flip against a per-pixel one; and PilGaussianBlur's
// vector paths against its portable one.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/core/image.h"

namespace flowloader::augment {
namespace {

using kernels::internal::SetPortableForTesting;

// Noise, or (smooth) a gradient with noise: the filters' overshoot and clamping on one,
// their near-integer sums on the other.
Image RandomImage(int w, int h, bool smooth, std::mt19937& rng) {
  Image img;
  img.Resize(w, h, 3);
  std::uniform_int_distribution<int> byte(0, 255), jitter(-2, 2);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int v = smooth ? (x * 7 + y * 3 + c * 50) % 256 + jitter(rng) : byte(rng);
        img.Row(y)[3 * x + c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return img;
}

bool CpuHasAvx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Params of one F.affine call, or of F.rotate when `rotate`.
struct Warp {
  bool rotate = false, expand = false;
  double angle = 0, tx = 0, ty = 0, scale = 1, shear_x = 0, shear_y = 0;
};

void Run(const Image& src, const Warp& w, Interpolation interpolation,
         const std::array<uint8_t, 3>& fill, Image* out) {
  if (w.rotate) {
    kernels::Rotate(src, w.angle, interpolation, w.expand, fill, out);
  } else {
    kernels::Affine(src, w.angle, w.tx, w.ty, w.scale, w.shear_x, w.shear_y, interpolation,
                    fill, out);
  }
}

// Expects the fast path (kept to AVX2 when `avx2_only`) and the portable path to agree.
void ExpectSameOn(const Image& src, const Warp& w, Interpolation interpolation,
                  const std::array<uint8_t, 3>& fill, bool avx2_only) {
  Image fast, plain;
  SetPortableForTesting(false);
  kernels::SetAffineAvx2OnlyForTesting(avx2_only);
  Run(src, w, interpolation, fill, &fast);
  kernels::SetAffineAvx2OnlyForTesting(false);
  SetPortableForTesting(true);
  Run(src, w, interpolation, fill, &plain);
  SetPortableForTesting(false);
  ASSERT_EQ(fast.width, plain.width);
  ASSERT_EQ(fast.height, plain.height);
  for (int y = 0; y < fast.height; ++y) {
    for (int x = 0; x < 3 * fast.width; ++x) {
      ASSERT_EQ(fast.Row(y)[x], plain.Row(y)[x])
          << "pixel (" << x / 3 << ", " << y << ") channel " << x % 3 << " of " << fast.width << "x"
          << fast.height << " from " << src.width << "x" << src.height
          << (interpolation == Interpolation::kBicubic ? " bicubic" : " bilinear")
          << (w.rotate ? " rotate" : " affine") << " angle " << w.angle << " t " << w.tx << ","
          << w.ty << " scale " << w.scale << " shear " << w.shear_x << "," << w.shear_y
          << " expand " << w.expand << (avx2_only ? " avx2 only" : "");
    }
  }
}

// Expects the fast paths (AVX-512 where the CPU has it, and AVX2) and the portable path
// to agree on `src` under `w`.
void ExpectSame(const Image& src, const Warp& w, Interpolation interpolation,
                const std::array<uint8_t, 3>& fill) {
  for (const bool avx2_only : {false, true}) {
    ExpectSameOn(src, w, interpolation, fill, avx2_only);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

class GeometryFastPathTest : public ::testing::TestWithParam<Interpolation> {
 protected:
  void SetUp() override {
    if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2: the fast paths are the portable ones here";
  }
};

TEST_P(GeometryFastPathTest, RandomWarps) {
  std::mt19937 rng(20261205);
  std::uniform_real_distribution<double> angle(-180, 180), shear(-40, 40), unit(0, 1);
  std::uniform_int_distribution<int> side(1, 40), coin(0, 1);
  for (int i = 0; i < 600; ++i) {
    const bool big = i % 10 == 0;
    const int width = big ? 224 : side(rng), height = big ? 176 + i % 48 : side(rng);
    const Image src = RandomImage(width, height, coin(rng) == 1, rng);
    Warp w;
    w.rotate = i % 3 == 0;
    w.expand = coin(rng) == 1;
    w.angle = angle(rng);
    w.tx = (unit(rng) - 0.5) * width;
    w.ty = (unit(rng) - 0.5) * height;
    w.scale = 0.3 + 2.7 * unit(rng);
    w.shear_x = coin(rng) ? shear(rng) : 0.0;
    w.shear_y = coin(rng) ? shear(rng) : 0.0;
    const std::array<uint8_t, 3> fill{static_cast<uint8_t>(i), 7, 200};
    ExpectSame(src, w, GetParam(), fill);
    if (HasFatalFailure()) return;
  }
}

// Whole-pixel translations (ShiftCopy), and near-whole ones that must not take it.
TEST_P(GeometryFastPathTest, Translations) {
  std::mt19937 rng(7);
  const double shifts[] = {0, 1, -1, 3, -17, 0.5, -0.25, 1e-9, 2 - 1e-12, 250, -250};
  for (const int width : {1, 2, 5, 33, 224}) {
    for (const int height : {1, 3, 31, 176}) {
      const Image src = RandomImage(width, height, false, rng);
      for (const double tx : shifts) {
        for (const double ty : shifts) {
          Warp w;
          w.tx = tx;
          w.ty = ty;
          ExpectSame(src, w, GetParam(), {1, 2, 3});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Mild warps of a large image: most four-pixel steps take the vector kernel, with
// borders where they give way to the per-pixel filter.
TEST_P(GeometryFastPathTest, MildWarps) {
  std::mt19937 rng(11);
  const Image src = RandomImage(224, 224, false, rng);
  for (double angle = -30; angle <= 30; angle += 7.5) {
    for (const double shear : {-17.0, 0.0, 5.0}) {
      Warp w;
      w.angle = angle;
      w.shear_x = shear;
      w.tx = 3.3;
      w.ty = -2;
      w.scale = 1.1;
      ExpectSame(src, w, GetParam(), {0, 0, 0});
      if (HasFatalFailure()) return;
    }
  }
}

// Warps along one axis (ShearX/Y and TranslateX/Y, as the policies call them): every
// pixel's dy (or dx) is 0, which the kernels' one-pass steps take.
TEST_P(GeometryFastPathTest, AxisWarps) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> shear(-45, 45), unit(-0.5, 0.5);
  constexpr double kRad = 3.141592653589793 / 180.0;
  for (int i = 0; i < 400; ++i) {
    const int width = i % 4 == 0 ? 224 : 1 + i % 37, height = i % 4 == 0 ? 200 : 1 + i % 29;
    const Image src = RandomImage(width, height, i % 2 == 0, rng);
    Warp w;
    const double cx = width * 0.5, cy = height * 0.5;
    switch (i % 4) {
      case 0:  // ShearX about the top-left corner (policy_ops' Shear).
        w.shear_x = shear(rng);
        w.tx = -std::tan(w.shear_x * kRad) * cy;
        break;
      case 1:  // ShearY likewise.
        w.shear_y = shear(rng);
        w.ty = -(std::sin(w.shear_y * kRad) / std::cos(w.shear_y * kRad)) * cx;
        break;
      case 2:  // timm's TranslateXRel: fractional pixels.
        w.tx = unit(rng) * width;
        break;
      default:
        w.ty = unit(rng) * height;
        break;
    }
    ExpectSame(src, w, GetParam(), {9, 8, 7});
    if (HasFatalFailure()) return;
  }
}

// Steps at the edges: widths and heights about multiples of 8 and 16 (the eight-lane
// steps, then four-lane ones and the per-pixel filter), small rotations and one-axis
// warps whose windows touch the last row or column (where a step's row loads would run
// past the buffer's end), half and whole pixel shifts, and fills.
TEST_P(GeometryFastPathTest, EdgesAndOddSizes) {
  std::mt19937 rng(17);
  std::vector<Warp> warps;
  for (const double angle : {0.25, -1.0, 13.0, 90.5, -135.0}) {
    Warp w;
    w.rotate = true;
    w.angle = angle;
    warps.push_back(w);
  }
  for (const double t : {0.5, -0.5, 0.25, -3.75, 1.0, -2.0}) {
    Warp x, y, both;
    x.tx = t;
    y.ty = t;
    both.tx = t;
    both.ty = -t;
    warps.insert(warps.end(), {x, y, both});
  }
  for (const double shear : {-30.0, 0.5, 17.19}) {
    Warp x, y;
    x.shear_x = shear;
    y.shear_y = shear;
    warps.insert(warps.end(), {x, y});
  }
  for (const int width : {2, 7, 8, 9, 15, 16, 17, 31, 33, 175, 176}) {
    for (const int height : {1, 2, 3, 9, 17, 176}) {
      const Image src = RandomImage(width, height, width % 2 == 0, rng);
      const std::array<uint8_t, 3> fill{static_cast<uint8_t>(width), 128, 255};
      for (const Warp& w : warps) {
        ExpectSame(src, w, GetParam(), fill);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Filters, GeometryFastPathTest,
                         ::testing::Values(Interpolation::kBilinear, Interpolation::kBicubic));

// Expects Perspective's bilinear fast paths (AVX-512 where the CPU has it, and AVX2)
// to give the portable per-pixel path's bytes for `coeffs` on `src`.
void ExpectSamePerspective(const Image& src, const double coeffs[8],
                           const std::array<uint8_t, 3>& fill) {
  Image plain;
  SetPortableForTesting(true);
  kernels::Perspective(src, coeffs, Interpolation::kBilinear, fill, &plain);
  SetPortableForTesting(false);
  for (const bool avx2_only : {false, true}) {
    Image fast;
    kernels::SetAffineAvx2OnlyForTesting(avx2_only);
    kernels::Perspective(src, coeffs, Interpolation::kBilinear, fill, &fast);
    kernels::SetAffineAvx2OnlyForTesting(false);
    ASSERT_EQ(fast.width, plain.width);
    ASSERT_EQ(fast.height, plain.height);
    for (int y = 0; y < fast.height; ++y) {
      for (int x = 0; x < 3 * fast.width; ++x) {
        ASSERT_EQ(fast.Row(y)[x], plain.Row(y)[x])
            << "pixel (" << x / 3 << ", " << y << ") channel " << x % 3 << " of " << src.width
            << "x" << src.height << " coeffs " << coeffs[0] << " " << coeffs[1] << " "
            << coeffs[2] << " " << coeffs[3] << " " << coeffs[4] << " " << coeffs[5] << " "
            << coeffs[6] << " " << coeffs[7] << (avx2_only ? " avx2 only" : "");
      }
    }
  }
}

// RandomPerspective's maps (each corner moved inward by up to `distortion` of half the
// side, torchvision's get_params), up to corners moved past each other, on images of
// every size about the eight- and four-lane steps, and raw coefficients whose
// denominator crosses zero inside the image (infinite and NaN positions), byte for byte
// against the per-pixel path.
TEST(PerspectiveFastPathTest, RandomMapsGiveThePortableBytes) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "no AVX2: the fast paths are the portable ones here";
  std::mt19937 rng(20261206);
  std::uniform_real_distribution<double> unit(0, 1), raw(-2, 2);
  std::uniform_int_distribution<int> side(1, 45), coin(0, 1);
  for (int i = 0; i < 500; ++i) {
    const bool big = i % 25 == 0;
    const int width = big ? 224 + i % 9 : side(rng), height = big ? 160 + i % 7 : side(rng);
    const Image src = RandomImage(width, height, coin(rng) == 1, rng);
    double coeffs[8];
    if (i % 5 == 4) {
      for (double& c : coeffs) c = raw(rng) * (coin(rng) ? 1.0 : 0.01);
      coeffs[2] *= width;
      coeffs[5] *= height;
    } else {
      const double distortion = i % 5 == 3 ? 1.5 : unit(rng);
      const double w = width - 1, h = height - 1;
      const double dx = distortion * (width / 2), dy = distortion * (height / 2);
      const double start[8] = {0, 0, w, 0, w, h, 0, h};
      const double end[8] = {dx * unit(rng),     dy * unit(rng),     w - dx * unit(rng),
                             dy * unit(rng),     w - dx * unit(rng), h - dy * unit(rng),
                             dx * unit(rng),     h - dy * unit(rng)};
      if (!kernels::PerspectiveCoeffs(start, end, coeffs)) continue;
    }
    const std::array<uint8_t, 3> fill{static_cast<uint8_t>(i), 77, 250};
    ExpectSamePerspective(src, coeffs, fill);
    if (HasFatalFailure()) return;
  }
}

// HorizontalFlip (16-pixel shuffles from both row ends, overlapping blocks in the
// middle, single pixels for the rest) against the plain per-pixel reversal, for every
// width 1..70 (none, one, two overlapping blocks and each remainder) and larger ones.
TEST(HorizontalFlipTest, MatchesPixelLoop) {
  std::mt19937 rng(4);
  std::vector<int> widths;
  for (int w = 1; w <= 70; ++w) widths.push_back(w);
  for (int w : {95, 96, 97, 127, 128, 129, 223, 224, 225, 500}) widths.push_back(w);
  for (int width : widths) {
    for (int height : {1, 3}) {
      Image img = RandomImage(width, height, false, rng);
      Image want = img;
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
          for (int c = 0; c < 3; ++c) {
            want.Row(y)[3 * x + c] = img.Row(y)[3 * (width - 1 - x) + c];
          }
        }
      }
      kernels::HorizontalFlip(img);
      ASSERT_EQ(img.pixels, want.pixels) << width << "x" << height;
    }
  }
}

// PilGaussianBlur's AVX-512 and AVX2 paths against the portable one (the parity test
// checks the machine's own path against PIL): the same bytes for radii whose box is 0 to
// 4 pixels plus a fraction (the direct sums) and wider (running sums), on images whose
// rows end in every remainder of the 32- and 16-value steps, down to one pixel.
TEST(PilGaussianBlurTest, EveryPathGivesThePortableBytes) {
  std::mt19937 rng(9);
  const std::vector<std::pair<int, int>> sizes = {{1, 1},  {2, 40},  {17, 5},  {31, 9},
                                                  {33, 4}, {97, 75}, {96, 96}, {224, 224}};
  for (float radius : {0.0f, 0.1f, 0.7f, 1.2f, 1.5f, 2.0f, 3.3f, 6.0f, 9.5f, 20.0f}) {
    for (const auto& [w, h] : sizes) {
      const Image img = RandomImage(w, h, /*smooth=*/(w + h) % 2 == 0, rng);
      Image fast, avx512, avx2, portable;
      kernels::PilGaussianBlur(img, radius, &fast);
      kernels::internal::SetPilBlurNoVnniForTesting(true);
      kernels::PilGaussianBlur(img, radius, &avx512);
      kernels::internal::SetPilBlurNoVnniForTesting(false);
      kernels::internal::SetPilBlurNoAvx512ForTesting(true);
      kernels::PilGaussianBlur(img, radius, &avx2);
      kernels::internal::SetPilBlurNoAvx512ForTesting(false);
      SetPortableForTesting(true);
      kernels::PilGaussianBlur(img, radius, &portable);
      SetPortableForTesting(false);
      ASSERT_EQ(fast.pixels, portable.pixels) << "radius " << radius << ", " << w << "x" << h;
      ASSERT_EQ(avx512.pixels, portable.pixels) << "radius " << radius << ", " << w << "x" << h;
      ASSERT_EQ(avx2.pixels, portable.pixels) << "radius " << radius << ", " << w << "x" << h;
    }
  }
}

}  // namespace
}  // namespace flowloader::augment
