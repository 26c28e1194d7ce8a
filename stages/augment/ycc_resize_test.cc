// ycc_resize_test.cc: Transform::Apply on Y, Cb, Cr planes (decode::PixelFormat::kYcc,
// internal/resample_ycc.h) gives the picture Apply gives on the same image as RGB:
// up to rounding where chroma is full size, up to chroma subsampling's own loss where it
// is not, and, through the real decoder, to within 40 dB of the RGB decode's output. Its
// uint8 row kernel gives, bit for bit, the per-pixel arithmetic it vectorizes.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stages/augment/internal/colour_kernels.h"
#include "stages/augment/internal/resample_ycc.h"
#include "stages/augment/testing/test_util.h"
#include "stages/augment/transform.h"
#include "stages/core/rng.h"
#include "stages/decode/decoder.h"
#include "stages/decode/encoder.h"
#include "stages/decode/internal/test_images.h"

namespace flowloader::augment {
namespace {

using testing::ApplyU8;
using testing::FixedPlan;
using testing::MakeTransform;
using testing::Options;

// Ycc is a JFIF YCbCr triple (full range), unrounded.
struct Ycc {
  double y, cb, cr;
};

Ycc FromRgb(double r, double g, double b) {
  return Ycc{0.299 * r + 0.587 * g + 0.114 * b,
             128 - 0.168735892 * r - 0.331264108 * g + 0.5 * b,
             128 + 0.5 * r - 0.418687589 * g - 0.081312411 * b};
}

uint8_t Byte(double v) { return static_cast<uint8_t>(std::lround(std::fmin(255, std::fmax(0, v)))); }

// Planes builds a kYcc image of w x h from a per-pixel YCbCr function: Y per pixel, each
// chroma sample the mean of the function over the luma pixels it covers (what an
// encoder's box downsampling stores).
template <class Fn>
decode::DecodedImage Planes(int w, int h, int step_x, int step_y, int phase_y, Fn&& f) {
  decode::DecodedImage d;
  d.format = decode::PixelFormat::kYcc;
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  decode::ChromaPlanes& c = d.chroma;
  c.step_x = step_x;
  c.step_y = step_y;
  c.phase_y = phase_y;
  c.width = (w + step_x - 1) / step_x;
  c.height = (h + phase_y + step_y - 1) / step_y;
  d.image.width = w;
  d.image.height = h;
  d.image.channels = 1;
  const size_t luma = static_cast<size_t>(w) * h;
  const size_t plane = static_cast<size_t>(c.width) * c.height;
  d.image.pixels.resize(luma + 2 * plane);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) d.image.pixels[static_cast<size_t>(y) * w + x] = Byte(f(x, y).y);
  }
  for (int j = 0; j < c.height; ++j) {
    for (int i = 0; i < c.width; ++i) {
      double cb = 0, cr = 0;
      int count = 0;
      for (int y = j * step_y - phase_y; y < (j + 1) * step_y - phase_y; ++y) {
        for (int x = i * step_x; x < (i + 1) * step_x; ++x) {
          if (x >= w || y < 0 || y >= h) continue;
          cb += f(x, y).cb;
          cr += f(x, y).cr;
          ++count;
        }
      }
      d.image.pixels[luma + static_cast<size_t>(j) * c.width + i] = Byte(cb / count);
      d.image.pixels[luma + plane + static_cast<size_t>(j) * c.width + i] = Byte(cr / count);
    }
  }
  return d;
}

// Stats compares two uint8 outputs.
struct Stats {
  int max_diff = 0;
  double mean_diff = 0;
};

Stats Compare(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  Stats s;
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    s.max_diff = std::max(s.max_diff, d);
    sum += d;
  }
  s.mean_diff = sum / a.size();
  return s;
}

// Full-size chroma: the only differences are where the RGB path rounds (the input RGB,
// and converted colour before the resize) and the YCbCr path does not.
TEST(YccResizeTest, FullSizeChromaMatchesRgbUpToRounding) {
  const decode::DecodedImage rgb = testing::NoiseImage(300, 260, 5);
  const auto f = [&](int x, int y) {
    const uint8_t* p = &rgb.image.pixels[y * rgb.image.stride() + 3 * x];
    return FromRgb(p[0], p[1], p[2]);
  };
  const decode::DecodedImage ycc = Planes(300, 260, 1, 1, 0, f);
  const auto train = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC, 96));
  const auto eval = MakeTransform(Options(Mode::kEval, Layout::kUint8HWC, 96));
  SampleRng rng(4, 0, 0);
  for (int i = 0; i < 10; ++i) {
    for (const Transform* t : {train.get(), eval.get()}) {
      const CropPlan plan = t->Plan(300, 260, rng);
      const Stats s = Compare(ApplyU8(*t, rgb, plan), ApplyU8(*t, ycc, plan));
      // Noise: input rounding of +-0.5 per channel becomes up to about 1.5 after the
      // colour transform; the filter averages it down.
      EXPECT_LE(s.max_diff, 3) << "draw " << i;
      EXPECT_LT(s.mean_diff, 0.5) << "draw " << i;
    }
  }
}

// Subsampled chroma of smooth colour: the planes' chroma geometry (steps, phase) must
// put every sample where it belongs. A one-row or one-column slip shows as several
// levels on these gradients (up to 12 levels per pixel).
TEST(YccResizeTest, SubsampledChromaLandsWhereItBelongs) {
  constexpr int kW = 240, kH = 200;
  const auto f = [](int x, int y) {
    return Ycc{128 + 60 * std::sin(x / 23.0 + y / 31.0), 128 + 45 * std::sin(x / 7.0),
               128 + 45 * std::cos(y / 6.0)};
  };
  decode::DecodedImage rgb;
  rgb.image.Resize(kW, kH, 3);
  for (int y = 0; y < kH; ++y) {
    for (int x = 0; x < kW; ++x) {
      const Ycc c = f(x, y);
      uint8_t* p = rgb.image.Row(y) + 3 * x;
      p[0] = Byte(c.y + 1.402 * (c.cr - 128));
      p[1] = Byte(c.y - 0.344136 * (c.cb - 128) - 0.714136 * (c.cr - 128));
      p[2] = Byte(c.y + 1.772 * (c.cb - 128));
    }
  }
  rgb.covered = RectF{0, 0, kW, kH};
  const int layouts[4][3] = {{2, 2, 0}, {2, 2, 1}, {2, 1, 0}, {1, 2, 1}};
  for (const auto& l : layouts) {
    const decode::DecodedImage ycc = Planes(kW, kH, l[0], l[1], l[2], f);
    for (const bool flip : {false, true}) {
      for (const int size : {64, 224}) {
        const auto t = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC, size));
        // Boxes away from the edges (where the window's clamping differs per plane).
        const CropPlan plan = FixedPlan(20.5, 17.25, 190, 150, flip);
        const Stats s = Compare(ApplyU8(*t, rgb, plan), ApplyU8(*t, ycc, plan));
        const std::string what = absl::StrCat("steps ", l[0], "x", l[1], " phase ", l[2],
                                              flip ? " flipped" : "", " size ", size);
        EXPECT_LE(s.max_diff, 4) << what;
        EXPECT_LT(s.mean_diff, 0.8) << what;
      }
    }
  }
}

// Through the real decoder: a 4:2:0 JPEG decoded as planes and resized, against the
// same file decoded to RGB (libjpeg's fancy upsampling) and resized.
TEST(YccResizeTest, DecodedPlanesAgreeWithRgbDecode) {
  const Image photo = decode::testing::PhotoLike(451, 379, 3, 9);
  absl::StatusOr<std::string> jpeg = decode::EncodeJpeg(photo.view(), {});
  ASSERT_TRUE(jpeg.ok()) << jpeg.status();
  auto decoder = decode::Decoder::Create({});
  ASSERT_TRUE(decoder.ok());
  for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
    const auto t = MakeTransform(Options(mode, Layout::kUint8HWC, 224));
    SampleRng rng(8, 0, 0);
    for (int i = 0; i < 8; ++i) {
      CropPlan plan = t->Plan(451, 379, rng);
      decode::DecodedImage as_rgb, as_planes;
      plan.decode_request.accept_ycc = false;
      ASSERT_TRUE((*decoder)->Decode(*jpeg, {}, &plan.decode_request, &as_rgb).ok());
      plan.decode_request.accept_ycc = true;
      ASSERT_TRUE((*decoder)->Decode(*jpeg, {}, &plan.decode_request, &as_planes).ok());
      ASSERT_EQ(as_planes.format, decode::PixelFormat::kYcc);
      const std::vector<uint8_t> a = ApplyU8(*t, as_rgb, plan);
      const std::vector<uint8_t> b = ApplyU8(*t, as_planes, plan);
      const Image ia{a, 224, 224, 3};
      const Image ib{b, 224, 224, 3};
      EXPECT_GE(decode::testing::Psnr(ia.view(), ib.view()), 40.0)
          << (mode == Mode::kTrain ? "train" : "eval") << " draw " << i;
    }
  }
}

// The per-pixel arithmetic of ColourFloat (colour_kernels.h), to 8 bits.
uint8_t ReferenceChannel(float y, float cb, float cr, int c) {
  const float b = cb + -128.0f;
  const float r = cr + -128.0f;
  const float v = c == 0 ? y + r * internal::kCrToR
                  : c == 1 ? (y + b * internal::kCbToG) + r * internal::kCrToG
                           : y + b * internal::kCbToB;
  return static_cast<uint8_t>(std::fmin(std::fmax(std::floor(v + 0.5f), 0.0f), 255.0f));
}

TEST(YccResizeTest, Uint8RowKernelEqualsThePerPixelArithmetic) {
  SampleRng rng(3, 0, 0);
  for (int n : {1, 15, 16, 17, 31, 32, 48, 63, 224, 225}) {
    std::vector<float> y(n), cb(n), cr(n);
    for (int x = 0; x < n; ++x) {
      // Filter outputs overshoot [0, 255]; some land on .5 after the conversion.
      y[x] = static_cast<float>(rng.Uniform(-20, 275));
      cb[x] = x % 7 == 0 ? 128.0f : static_cast<float>(rng.Uniform(-20, 275));
      cr[x] = x % 5 == 0 ? 128.0f : static_cast<float>(rng.Uniform(-20, 275));
      if (x % 11 == 0) y[x] = std::floor(y[x]) + 0.5f;
    }
    for (bool avx512 : {false, true}) {
      if (avx512 && !internal::ResampleIsaSupported(internal::ResampleIsa::kAvx512)) continue;
      for (bool flip : {false, true}) {
        std::vector<uint8_t> got(3 * n + 1, 0xAB);
        internal::ColourRowToUint8(y.data(), cb.data(), cr.data(), n, flip, avx512, got.data());
        for (int x = 0; x < n; ++x) {
          const int at = 3 * (flip ? n - 1 - x : x);
          for (int c = 0; c < 3; ++c) {
            ASSERT_EQ(got[at + c], ReferenceChannel(y[x], cb[x], cr[x], c))
                << "n " << n << " flip " << flip << " avx512 " << avx512 << " x " << x
                << " c " << c;
          }
        }
        EXPECT_EQ(got[3 * n], 0xAB) << "wrote past the row, n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace flowloader::augment
