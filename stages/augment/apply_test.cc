// apply_test: Apply's pixels on inputs whose expected outputs are known exactly (copies,
// mirrors, constants, layouts, region and scaled decodes) and its input checks.
// Agreement with PIL on real resampling is resize_pil_test.
//
// Thread-safety: single-threaded except ApplyIsSafeFromManyThreads.
#include "stages/augment/transform.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/testing/test_util.h"

namespace flowloader::augment {
namespace {

using testing::ApplyU8;
using testing::FixedPlan;
using testing::ImageOf;
using testing::MakeTransform;
using testing::NoiseImage;
using testing::Options;

// Pixel value of the synthetic gradient: distinct per channel, wraps at 256.
uint8_t Gradient(int x, int y, int c) { return static_cast<uint8_t>((x + 2 * y + 60 * c) % 256); }

decode::DecodedImage GradientImage(int w, int h) { return ImageOf(w, h, Gradient); }

decode::DecodedImage ConstantImage(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  const uint8_t rgb[3] = {r, g, b};
  return ImageOf(w, h, [&rgb](int, int, int c) { return rgb[c]; });
}

// Sub-image [x0, x0 + w) × [y0, y0 + h) of `full`, as a region decode would return it.
decode::DecodedImage SubImage(const decode::DecodedImage& full, int x0, int y0, int w, int h) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    std::copy_n(full.image.pixels.data() + full.image.stride() * (y0 + y) + 3 * x0, 3 * w,
                d.image.Row(y));
  }
  d.covered = RectF{static_cast<double>(x0), static_cast<double>(y0),
                    static_cast<double>(w), static_cast<double>(h)};
  return d;
}

float Normalized(int v, int c, const TransformOptions& o) {
  return (v / 255.0f - o.mean[c]) / o.std[c];
}

std::vector<float> ApplyFloat(const Transform& t, const decode::DecodedImage& img,
                              const CropPlan& plan) {
  std::vector<float> out(t.OutputBytes() / sizeof(float));
  const absl::Status s = t.Apply(img, plan, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(ApplyTest, CenterCropAtScaleOneGivesExactNormalizedValues) {
  // 256x256 with Resize(256): no resampling, so the output is the gradient's 16-pixel
  // centre crop, normalized: every value is known exactly.
  const TransformOptions o = Options(Mode::kEval, Layout::kFloatCHW);
  auto t = MakeTransform(o);
  const auto img = GradientImage(256, 256);
  SampleRng rng(1, 0, 0);
  const std::vector<float> out = ApplyFloat(*t, img, t->Plan(256, 256, rng));
  const int n = 224;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < n; ++y) {
      for (int x = 0; x < n; ++x) {
        ASSERT_NEAR(out[(c * n + y) * n + x], Normalized(Gradient(x + 16, y + 16, c), c, o),
                    2e-6f)
            << c << "," << y << "," << x;
      }
    }
  }
}

TEST(ApplyTest, TrainCropOfOutputSizeIsACopyInEveryLayout) {
  const auto img = GradientImage(450, 380);
  const CropPlan plan = FixedPlan(37, 53, 224, 224, false);
  auto u8 = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  const TransformOptions of = Options(Mode::kTrain, Layout::kFloatCHW);
  auto f32 = MakeTransform(of);
  const std::vector<uint8_t> hwc = ApplyU8(*u8, img, plan);
  const std::vector<float> chw = ApplyFloat(*f32, img, plan);
  const int n = 224;
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(hwc[(y * n + x) * 3 + c], Gradient(x + 37, y + 53, c));
        ASSERT_NEAR(chw[(c * n + y) * n + x], Normalized(Gradient(x + 37, y + 53, c), c, of),
                    2e-6f);
      }
    }
  }
}

TEST(ApplyTest, CropReachingTheImageEdgeIsACopy) {
  // The copy path's 16-byte loads must stop short of the buffer's end (ASan checks).
  const auto img = GradientImage(230, 224);
  auto u8 = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  for (const bool flip : {false, true}) {
    const std::vector<uint8_t> hwc = ApplyU8(*u8, img, FixedPlan(6, 0, 224, 224, flip));
    for (int y = 0; y < 224; ++y) {
      for (int x = 0; x < 224; ++x) {
        const int sx = flip ? 6 + 223 - x : 6 + x;
        for (int c = 0; c < 3; ++c) ASSERT_EQ(hwc[(y * 224 + x) * 3 + c], Gradient(sx, y, c));
      }
    }
  }
}

TEST(ApplyTest, FlipMirrorsColumns) {
  const auto img = NoiseImage(450, 380, 3);
  for (const Layout layout : {Layout::kUint8HWC, Layout::kFloatCHW}) {
    auto t = MakeTransform(Options(Mode::kTrain, layout));
    // Odd sizes exercise the non-multiple-of-4 tail; several scales.
    // Downscale, upscale, whole image, and scale 1 (the copy path) for n = 224 or 37.
    for (const RectF r : {RectF{10, 20, 300, 250}, RectF{100, 50, 90, 120},
                          RectF{0, 0, 450, 380}, RectF{226, 156, 224, 224},
                          RectF{413, 5, 37, 37}}) {
      for (const int n : {224, 37}) {
        TransformOptions o = Options(Mode::kTrain, layout);
        o.image_size = n;
        auto tn = MakeTransform(o);
        const CropPlan plain = FixedPlan(r.x, r.y, r.w, r.h, false);
        const CropPlan flipped = FixedPlan(r.x, r.y, r.w, r.h, true);
        if (layout == Layout::kUint8HWC) {
          const auto a = ApplyU8(*tn, img, plain);
          const auto b = ApplyU8(*tn, img, flipped);
          for (int y = 0; y < n; ++y) {
            for (int x = 0; x < n; ++x) {
              for (int c = 0; c < 3; ++c) {
                ASSERT_EQ(a[(y * n + x) * 3 + c], b[(y * n + (n - 1 - x)) * 3 + c]);
              }
            }
          }
        } else {
          const auto a = ApplyFloat(*tn, img, plain);
          const auto b = ApplyFloat(*tn, img, flipped);
          for (int c = 0; c < 3; ++c) {
            for (int y = 0; y < n; ++y) {
              for (int x = 0; x < n; ++x) {
                ASSERT_EQ(a[(c * n + y) * n + x], b[(c * n + y) * n + (n - 1 - x)]);
              }
            }
          }
        }
      }
    }
  }
}

TEST(ApplyTest, ConstantImageStaysExactlyConstant) {
  const auto img = ConstantImage(450, 380, 37, 128, 250);
  const uint8_t rgb[3] = {37, 128, 250};
  for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
    const TransformOptions of = Options(mode, Layout::kFloatCHW);
    auto tf = MakeTransform(of);
    auto tu = MakeTransform(Options(mode, Layout::kUint8HWC));
    for (int index = 0; index < 20; ++index) {
      SampleRng rng(2, 0, index);
      const CropPlan plan = tf->Plan(450, 380, rng);
      const auto u = ApplyU8(*tu, img, plan);
      for (size_t i = 0; i < u.size(); ++i) ASSERT_EQ(u[i], rgb[i % 3]) << i;
      const auto f = ApplyFloat(*tf, img, plan);
      const size_t plane = f.size() / 3;
      for (size_t i = 0; i < f.size(); ++i) {
        const int c = static_cast<int>(i / plane);
        ASSERT_NEAR(f[i], Normalized(rgb[c], c, of), 2e-6f) << i;
      }
    }
  }
}

TEST(ApplyTest, FloatLayoutIsTheNormalizedUint8Layout) {
  // Both layouts round to 8 bits first (as ToTensor of a PIL image does), so they agree.
  const auto img = NoiseImage(450, 380, 4);
  for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
    TransformOptions of = Options(mode, Layout::kFloatCHW);
    of.mean = {0.1f, 0.5f, 0.9f};
    of.std = {0.5f, 0.25f, 2.0f};
    auto tf = MakeTransform(of);
    auto tu = MakeTransform(Options(mode, Layout::kUint8HWC));
    for (int index = 0; index < 10; ++index) {
      SampleRng rng(8, 0, index);
      const CropPlan plan = tf->Plan(450, 380, rng);
      const auto u = ApplyU8(*tu, img, plan);
      const auto f = ApplyFloat(*tf, img, plan);
      const int n = 224;
      for (int y = 0; y < n; ++y) {
        for (int x = 0; x < n; ++x) {
          for (int c = 0; c < 3; ++c) {
            ASSERT_NEAR(f[(c * n + y) * n + x], Normalized(u[(y * n + x) * 3 + c], c, of),
                        4e-6f);
          }
        }
      }
    }
  }
}

TEST(ApplyTest, EvalFromTheDecodeRequestEqualsFullDecode) {
  // Decoding only the request's pixels must not change the output: the request covers
  // every pixel the filter reads.
  const auto full = NoiseImage(500, 375, 6);
  for (const int resize : {256, 320, 480}) {
    TransformOptions o = Options(Mode::kEval, Layout::kUint8HWC);
    o.resize_size = resize;
    auto t = MakeTransform(o);
    SampleRng rng(1, 0, 0);
    const CropPlan plan = t->Plan(500, 375, rng);
    const RectF& q = plan.decode_request.region;
    const int x0 = static_cast<int>(std::floor(q.x));
    const int y0 = static_cast<int>(std::floor(q.y));
    const int x1 = static_cast<int>(std::ceil(q.x + q.w));
    const int y1 = static_cast<int>(std::ceil(q.y + q.h));
    EXPECT_EQ(ApplyU8(*t, SubImage(full, x0, y0, x1 - x0, y1 - y0), plan),
              ApplyU8(*t, full, plan))
        << "resize " << resize;
  }
}

TEST(ApplyTest, TrainFromTheCropAloneEqualsFullDecode) {
  const auto full = NoiseImage(450, 380, 7);
  auto t = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  for (int index = 0; index < 10; ++index) {
    SampleRng rng(4, 0, index);
    const CropPlan plan = t->Plan(450, 380, rng);
    const RectF& r = plan.region;
    const auto sub = SubImage(full, static_cast<int>(r.x), static_cast<int>(r.y),
                              static_cast<int>(r.w), static_cast<int>(r.h));
    EXPECT_EQ(ApplyU8(*t, sub, plan), ApplyU8(*t, full, plan)) << "index " << index;
  }
}

TEST(ApplyTest, HalfScaleDecodeMapsThroughCoveredAndScale) {
  // A DCT-scaled decode (scale 1/2, as 2x2 averages) of a smooth image must give nearly
  // the full-scale output: the plan's region is mapped through covered and scale.
  const int w = 900;
  const int h = 760;
  decode::DecodedImage full = ImageOf(w, h, [](int x, int y, int c) {
    return 127.5 + 120 * std::sin(x / (40.0 + 10 * c)) * std::cos(y / 55.0);
  });
  // Half scale of the box [100, 900) x [40, 760): 400 x 360 decoded pixels.
  decode::DecodedImage half = ImageOf(400, 360, [&full](int x, int y, int c) {
    int sum = 0;
    for (int dy = 0; dy < 2; ++dy) {
      for (int dx = 0; dx < 2; ++dx) {
        sum += full.image.Row(40 + 2 * y + dy)[3 * (100 + 2 * x + dx) + c];
      }
    }
    return (sum + 2) / 4;
  });
  half.covered = RectF{100, 40, 800, 720};
  half.scale_x = half.scale_y = 0.5;
  for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
    auto t = MakeTransform(Options(mode, Layout::kUint8HWC));
    CropPlan plan;
    if (mode == Mode::kTrain) {
      plan = FixedPlan(150, 60, 700, 640, false);
    } else {
      SampleRng rng(1, 0, 0);
      plan = t->Plan(w, h, rng);
    }
    const auto a = ApplyU8(*t, full, plan);
    const auto b = ApplyU8(*t, half, plan);
    int worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LE(worst, 3) << (mode == Mode::kTrain ? "train" : "eval");
  }
}

TEST(ApplyTest, RejectsInputsThatDoNotFitThePlan) {
  auto t = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  std::vector<uint8_t> out(t->OutputBytes());
  const auto img = NoiseImage(100, 80, 1);
  const CropPlan ok_plan = FixedPlan(10, 10, 50, 50, false);
  ASSERT_TRUE(t->Apply(img, ok_plan, out.data()).ok());

  EXPECT_EQ(t->Apply(img, ok_plan, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Apply(img, FixedPlan(60, 10, 50, 50, false), out.data()).code(),
            absl::StatusCode::kInvalidArgument);  // Past the right edge.
  EXPECT_EQ(t->Apply(img, FixedPlan(-1, 10, 50, 50, false), out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Apply(img, FixedPlan(10, 10, 0, 50, false), out.data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Apply(img, FixedPlan(10, 10, std::nan(""), 50, false), out.data()).code(),
            absl::StatusCode::kInvalidArgument);

  auto gray = img;
  gray.image.Resize(100, 80, 1);
  EXPECT_EQ(t->Apply(gray, ok_plan, out.data()).code(), absl::StatusCode::kInvalidArgument);
  auto scaled = img;
  scaled.scale_x = 0;
  EXPECT_EQ(t->Apply(scaled, ok_plan, out.data()).code(), absl::StatusCode::kInvalidArgument);
  // A region decode that does not cover the plan's region.
  auto partial = SubImage(img, 20, 20, 50, 50);
  EXPECT_EQ(t->Apply(partial, ok_plan, out.data()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ApplyTest, ApplyIsSafeFromManyThreads) {
  // Thread-local scratch: concurrent calls with different geometries give the results
  // a single thread gives.
  const auto img = NoiseImage(450, 380, 5);
  auto t = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  const int kPlans = 16;
  std::vector<CropPlan> plans;
  std::vector<std::vector<uint8_t>> expected;
  for (int i = 0; i < kPlans; ++i) {
    SampleRng rng(6, 0, i);
    plans.push_back(t->Plan(450, 380, rng));
    expected.push_back(ApplyU8(*t, img, plans.back()));
  }
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      std::vector<uint8_t> out(t->OutputBytes());
      for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < kPlans; ++i) {
          const int k = (i + th * 5) % kPlans;
          if (!t->Apply(img, plans[k], out.data()).ok() || out != expected[k]) {
            ++mismatches[th];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace flowloader::augment
