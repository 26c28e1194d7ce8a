// transform_test: option validation, torchvision's crop numbers, and Apply's pixels on
// inputs whose expected outputs are known exactly. PIL agreement is resize_pil_test.
//
// Thread-safety: single-threaded except ApplyIsSafeFromManyThreads.
#include "stages/augment/transform.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader::augment {
namespace {

std::unique_ptr<Transform> Make(const TransformOptions& o) {
  auto t = Transform::Create(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(t).value() : nullptr;
}

TransformOptions Options(Mode mode, Layout layout) {
  TransformOptions o;
  o.mode = mode;
  o.layout = layout;
  return o;
}

// Pixel value of the synthetic gradient: distinct per channel, wraps at 256.
uint8_t Gradient(int x, int y, int c) { return static_cast<uint8_t>((x + 2 * y + 60 * c) % 256); }

decode::DecodedImage GradientImage(int w, int h) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) d.image.Row(y)[3 * x + c] = Gradient(x, y, c);
    }
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

decode::DecodedImage NoiseImage(int w, int h, uint32_t seed) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  uint32_t s = seed * 747796405u + 1;
  for (auto& p : d.image.pixels) {
    s = s * 1664525u + 1013904223u;
    p = static_cast<uint8_t>(s >> 24);
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

decode::DecodedImage ConstantImage(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  for (size_t i = 0; i < d.image.pixels.size(); i += 3) {
    d.image.pixels[i] = r;
    d.image.pixels[i + 1] = g;
    d.image.pixels[i + 2] = b;
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
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

std::vector<uint8_t> ApplyU8(const Transform& t, const decode::DecodedImage& img,
                             const CropPlan& plan) {
  std::vector<uint8_t> out(t.OutputBytes());
  const absl::Status s = t.Apply(img, plan, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<float> ApplyFloat(const Transform& t, const decode::DecodedImage& img,
                              const CropPlan& plan) {
  std::vector<float> out(t.OutputBytes() / sizeof(float));
  const absl::Status s = t.Apply(img, plan, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

CropPlan FixedPlan(double x, double y, double w, double h, bool flip) {
  CropPlan p;
  p.region = RectF{x, y, w, h};
  p.clamp_to_region = true;
  p.flip = flip;
  return p;
}

// ---- Create -------------------------------------------------------------------------

struct BadOption {
  const char* name;
  std::function<void(TransformOptions&)> mutate;
  const char* message;  // Expected substring of the error.
};

void PrintTo(const BadOption& b, std::ostream* os) { *os << b.name; }

class CreateRejectsTest : public ::testing::TestWithParam<BadOption> {};

TEST_P(CreateRejectsTest, RejectsWithInvalidArgumentNamingTheField) {
  TransformOptions o;
  GetParam().mutate(o);
  const auto t = Transform::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(t.status().message()).find(GetParam().message), std::string::npos)
      << t.status();
}

const double kNaN = std::nan("");
const double kInf = HUGE_VAL;

INSTANTIATE_TEST_SUITE_P(
    BadOptions, CreateRejectsTest,
    ::testing::Values(
        BadOption{"ZeroImageSize", [](TransformOptions& o) { o.image_size = 0; }, "image_size"},
        BadOption{"NegativeImageSize", [](TransformOptions& o) { o.image_size = -3; },
                  "image_size"},
        BadOption{"HugeImageSize", [](TransformOptions& o) { o.image_size = 1 << 20; },
                  "image_size"},
        BadOption{"ResizeBelowImageSize", [](TransformOptions& o) { o.resize_size = 200; },
                  "resize_size"},
        BadOption{"NegativeResize", [](TransformOptions& o) { o.resize_size = -1; },
                  "resize_size"},
        BadOption{"ZeroScaleMin", [](TransformOptions& o) { o.scale_min = 0; }, "scale"},
        BadOption{"ScaleMinAboveMax",
                  [](TransformOptions& o) {
                    o.scale_min = 0.6;
                    o.scale_max = 0.5;
                  },
                  "scale"},
        BadOption{"ScaleMaxAboveOne", [](TransformOptions& o) { o.scale_max = 1.5; }, "scale"},
        BadOption{"NaNScale", [](TransformOptions& o) { o.scale_min = kNaN; }, "scale"},
        BadOption{"ZeroRatio", [](TransformOptions& o) { o.ratio_min = 0; }, "ratio"},
        BadOption{"RatioMinAboveMax",
                  [](TransformOptions& o) {
                    o.ratio_min = 2;
                    o.ratio_max = 1;
                  },
                  "ratio"},
        BadOption{"InfiniteRatio", [](TransformOptions& o) { o.ratio_max = kInf; }, "ratio"},
        BadOption{"NegativeFlip", [](TransformOptions& o) { o.flip_p = -0.1; }, "flip_p"},
        BadOption{"FlipAboveOne", [](TransformOptions& o) { o.flip_p = 1.01; }, "flip_p"},
        BadOption{"NaNFlip", [](TransformOptions& o) { o.flip_p = kNaN; }, "flip_p"},
        BadOption{"ZeroStd", [](TransformOptions& o) { o.std[1] = 0; }, "std[1]"},
        BadOption{"NegativeStd", [](TransformOptions& o) { o.std[2] = -0.2f; }, "std[2]"},
        BadOption{"NaNStd", [](TransformOptions& o) { o.std[0] = std::nanf(""); }, "std[0]"},
        BadOption{"InfiniteMean", [](TransformOptions& o) { o.mean[0] = HUGE_VALF; },
                  "mean[0]"},
        BadOption{"UnknownMode", [](TransformOptions& o) { o.mode = static_cast<Mode>(9); },
                  "mode"},
        BadOption{"UnknownLayout",
                  [](TransformOptions& o) { o.layout = static_cast<Layout>(9); }, "layout"}),
    [](const ::testing::TestParamInfo<BadOption>& info) { return info.param.name; });

TEST(CreateTest, AcceptsDefaultsAndBoundaryValues) {
  EXPECT_TRUE(Transform::Create(TransformOptions{}).ok());
  TransformOptions o;
  o.scale_min = o.scale_max = 1.0;
  o.ratio_min = o.ratio_max = 1.0;
  o.flip_p = 1.0;
  o.resize_size = o.image_size;
  EXPECT_TRUE(Transform::Create(o).ok());
  o.flip_p = 0.0;
  o.image_size = 1;
  o.resize_size = 0;
  EXPECT_TRUE(Transform::Create(o).ok());
}

TEST(CreateTest, OutputShapeAndBytesFollowTheLayout) {
  auto f = Make(Options(Mode::kTrain, Layout::kFloatCHW));
  EXPECT_EQ(f->OutputShape(), (std::array<int, 3>{3, 224, 224}));
  EXPECT_EQ(f->OutputBytes(), 3u * 224 * 224 * 4);
  auto u = Make(Options(Mode::kTrain, Layout::kUint8HWC));
  EXPECT_EQ(u->OutputShape(), (std::array<int, 3>{224, 224, 3}));
  EXPECT_EQ(u->OutputBytes(), 3u * 224 * 224);
}

// ---- Train plans ----------------------------------------------------------------------

TEST(TrainPlanTest, RegionIsAnIntegerBoxInsideTheImageWithinScaleAndRatio) {
  const TransformOptions o = Options(Mode::kTrain, Layout::kFloatCHW);
  auto t = Make(o);
  const int sizes[][2] = {{450, 380}, {500, 375}, {375, 500}, {224, 224}, {1920, 1080}};
  for (const auto& size : sizes) {
    const int w = size[0];
    const int h = size[1];
    for (int index = 0; index < 500; ++index) {
      SampleRng rng(3, 1, index);
      const CropPlan p = t->Plan(w, h, rng);
      const RectF& r = p.region;
      SCOPED_TRACE(::testing::Message() << w << "x" << h << " index " << index);
      EXPECT_EQ(r.x, std::floor(r.x));
      EXPECT_EQ(r.y, std::floor(r.y));
      EXPECT_EQ(r.w, std::floor(r.w));
      EXPECT_EQ(r.h, std::floor(r.h));
      EXPECT_GE(r.x, 0);
      EXPECT_GE(r.y, 0);
      EXPECT_GE(r.w, 1);
      EXPECT_GE(r.h, 1);
      EXPECT_LE(r.x + r.w, w);
      EXPECT_LE(r.y + r.h, h);
      // w and h are rounded from the drawn area and ratio, so allow half a pixel.
      const double area = static_cast<double>(w) * h;
      EXPECT_LE((r.w - 0.5) * (r.h - 0.5), o.scale_max * area);
      EXPECT_GE((r.w + 0.5) * (r.h + 0.5), o.scale_min * area);
      EXPECT_LE((r.w - 0.5) / (r.h + 0.5), o.ratio_max);
      EXPECT_GE((r.w + 0.5) / (r.h - 0.5), o.ratio_min);
      EXPECT_TRUE(p.clamp_to_region);
      EXPECT_EQ(p.decode_request.region.x, r.x);
      EXPECT_EQ(p.decode_request.region.w, r.w);
      EXPECT_EQ(p.decode_request.region.y, r.y);
      EXPECT_EQ(p.decode_request.region.h, r.h);
      EXPECT_EQ(p.decode_request.target_width, 224);
      EXPECT_EQ(p.decode_request.target_height, 224);
    }
  }
}

struct FallbackCase {
  const char* name;
  int width, height;
  double scale_min, scale_max, ratio_min, ratio_max;
  RectF expected;  // torchvision's central crop, computed by hand.
};

void PrintTo(const FallbackCase& c, std::ostream* os) { *os << c.name; }

class TrainFallbackTest : public ::testing::TestWithParam<FallbackCase> {};

TEST_P(TrainFallbackTest, FallsBackToTorchvisionCentralCrop) {
  const FallbackCase& c = GetParam();
  TransformOptions o = Options(Mode::kTrain, Layout::kFloatCHW);
  o.scale_min = c.scale_min;
  o.scale_max = c.scale_max;
  o.ratio_min = c.ratio_min;
  o.ratio_max = c.ratio_max;
  auto t = Make(o);
  for (int index = 0; index < 50; ++index) {
    SampleRng rng(5, 0, index);
    const RectF r = t->Plan(c.width, c.height, rng).region;
    EXPECT_EQ(std::tie(r.x, r.y, r.w, r.h),
              std::tie(c.expected.x, c.expected.y, c.expected.w, c.expected.h))
        << "index " << index << ": got " << r.x << "," << r.y << " " << r.w << "x" << r.h;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ExtremeAspect, TrainFallbackTest,
    ::testing::Values(
        // Wide: in_ratio 100 > 4/3, so h = 20, w = round(20 * 4/3) = 27, centred.
        FallbackCase{"Wide", 2000, 20, 0.08, 1.0, 3.0 / 4, 4.0 / 3, RectF{986, 0, 27, 20}},
        // Tall: in_ratio 0.01 < 3/4, so w = 20, h = round(20 / 0.75) = 27, centred.
        FallbackCase{"Tall", 20, 2000, 0.08, 1.0, 3.0 / 4, 4.0 / 3, RectF{0, 986, 20, 27}},
        // Whole area at ratio >= 1.5 never fits a 100x150 image: w = 100,
        // h = round(100 / 1.5) = 67, top = (150 - 67) // 2 = 41.
        FallbackCase{"RatioOutOfReach", 100, 150, 1.0, 1.0, 1.5, 2.0, RectF{0, 41, 100, 67}}),
    [](const ::testing::TestParamInfo<FallbackCase>& info) { return info.param.name; });

TEST(TrainPlanTest, SameKeyGivesSamePlanAndIndicesDiffer) {
  auto t = Make(Options(Mode::kTrain, Layout::kFloatCHW));
  std::set<std::tuple<double, double, double, double>> distinct;
  for (int index = 0; index < 100; ++index) {
    SampleRng a(11, 2, index);
    SampleRng b(11, 2, index);
    const CropPlan pa = t->Plan(450, 380, a);
    const CropPlan pb = t->Plan(450, 380, b);
    EXPECT_EQ(std::tie(pa.region.x, pa.region.y, pa.region.w, pa.region.h, pa.flip),
              std::tie(pb.region.x, pb.region.y, pb.region.w, pb.region.h, pb.flip));
    distinct.insert({pa.region.x, pa.region.y, pa.region.w, pa.region.h});
  }
  EXPECT_GE(distinct.size(), 95u);
  // A different epoch reshuffles the crops of the same index.
  SampleRng e0(11, 0, 7);
  SampleRng e1(11, 1, 7);
  const RectF r0 = t->Plan(450, 380, e0).region;
  const RectF r1 = t->Plan(450, 380, e1).region;
  EXPECT_NE(std::tie(r0.x, r0.y, r0.w, r0.h), std::tie(r1.x, r1.y, r1.w, r1.h));
}

TEST(TrainPlanTest, FlipFrequencyMatchesP) {
  for (const double p : {0.0, 0.2, 0.5, 1.0}) {
    TransformOptions o = Options(Mode::kTrain, Layout::kFloatCHW);
    o.flip_p = p;
    auto t = Make(o);
    const int n = 4000;
    int flips = 0;
    for (int index = 0; index < n; ++index) {
      SampleRng rng(9, 0, index);
      flips += t->Plan(450, 380, rng).flip;
    }
    // Binomial sd is at most 0.008 here; 0.03 is about 4 sd.
    EXPECT_NEAR(static_cast<double>(flips) / n, p, 0.03) << "p = " << p;
    if (p == 0.0 || p == 1.0) EXPECT_EQ(flips, static_cast<int>(p * n));
  }
}

TEST(TrainPlanTest, EmptyImageGivesARegionApplyRefuses) {
  auto t = Make(Options(Mode::kTrain, Layout::kUint8HWC));
  SampleRng rng(1, 0, 0);
  const CropPlan p = t->Plan(0, 100, rng);
  EXPECT_EQ(p.region.w, 0);
  std::vector<uint8_t> out(t->OutputBytes());
  EXPECT_EQ(t->Apply(NoiseImage(10, 10, 1), p, out.data()).code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Eval plans -----------------------------------------------------------------------

struct EvalCase {
  const char* name;
  int width, height, image_size, resize_size;
  // torchvision's numbers, worked out by hand: Resize output and CenterCrop offsets.
  int new_w, new_h, left, top;
};

void PrintTo(const EvalCase& c, std::ostream* os) { *os << c.name; }

class EvalPlanTest : public ::testing::TestWithParam<EvalCase> {};

TEST_P(EvalPlanTest, RegionIsTorchvisionResizeThenCenterCrop) {
  const EvalCase& c = GetParam();
  TransformOptions o = Options(Mode::kEval, Layout::kFloatCHW);
  o.image_size = c.image_size;
  o.resize_size = c.resize_size;
  auto t = Make(o);
  SampleRng rng(1, 0, 0);
  const CropPlan p = t->Plan(c.width, c.height, rng);
  const double sx = static_cast<double>(c.width) / c.new_w;
  const double sy = static_cast<double>(c.height) / c.new_h;
  EXPECT_DOUBLE_EQ(p.region.x, c.left * sx);
  EXPECT_DOUBLE_EQ(p.region.y, c.top * sy);
  EXPECT_DOUBLE_EQ(p.region.w, c.image_size * sx);
  EXPECT_DOUBLE_EQ(p.region.h, c.image_size * sy);
  EXPECT_FALSE(p.clamp_to_region);
  EXPECT_FALSE(p.flip);
  // The request is the region grown by the filter's reach, max(scale, 1), clipped to
  // the image.
  const RectF& q = p.decode_request.region;
  EXPECT_DOUBLE_EQ(q.x, std::max(0.0, p.region.x - std::max(sx, 1.0)));
  EXPECT_DOUBLE_EQ(q.y, std::max(0.0, p.region.y - std::max(sy, 1.0)));
  EXPECT_DOUBLE_EQ(q.x + q.w,
                   std::min<double>(c.width, p.region.x + p.region.w + std::max(sx, 1.0)));
  EXPECT_DOUBLE_EQ(q.y + q.h,
                   std::min<double>(c.height, p.region.y + p.region.h + std::max(sy, 1.0)));
  // Target: the region itself maps to image_size decoded pixels or more.
  EXPECT_GE(p.decode_request.target_width * p.region.w / q.w, c.image_size - 1e-9);
  EXPECT_GE(p.decode_request.target_height * p.region.h / q.h, c.image_size - 1e-9);
  EXPECT_LE(p.decode_request.target_width * p.region.w / q.w, c.image_size + 1);
}

INSTANTIATE_TEST_SUITE_P(
    Torchvision, EvalPlanTest,
    ::testing::Values(
        // 500x375: short 375 -> 256, long int(256 * 500 / 375) = 341; left = round(58.5)
        // = 58 (half to even), top = 16.
        EvalCase{"Landscape500x375", 500, 375, 224, 256, 341, 256, 58, 16},
        EvalCase{"Portrait375x500", 375, 500, 224, 256, 256, 341, 16, 58},
        // resize_size 0 means round(224 * 256 / 224) = 256.
        EvalCase{"DefaultResize", 500, 375, 224, 0, 341, 256, 58, 16},
        // 450x380: long int(303.16) = 303, left = round(39.5) = 40.
        EvalCase{"Imagenetish450x380", 450, 380, 224, 256, 303, 256, 40, 16},
        // Already 256 on the short side: no resize, a plain 16-pixel crop.
        EvalCase{"NoResize256x256", 256, 256, 224, 256, 256, 256, 16, 16},
        // 1000x120: long int(2133.33) = 2133, left = round(954.5) = 954.
        EvalCase{"ExtremeAspect", 1000, 120, 224, 256, 2133, 256, 954, 16},
        // Upscaling: 100x80 -> int(256 * 100 / 80) = 320 x 256, left = 48, top = 16.
        EvalCase{"Upscale100x80", 100, 80, 224, 256, 320, 256, 48, 16},
        // image_size 160, resize 182 on 640x480: int(242.67) = 242, left 41, top 11.
        EvalCase{"Size160", 640, 480, 160, 182, 242, 182, 41, 11},
        // image_size 160, default resize round(160 * 256 / 224) = round(182.86) = 183:
        // 640x480 -> int(244) = 244 x 183, left 42, top round(11.5) = 12.
        EvalCase{"Size160DefaultResize", 640, 480, 160, 0, 244, 183, 42, 12}),
    [](const ::testing::TestParamInfo<EvalCase>& info) { return info.param.name; });

// ---- Apply ----------------------------------------------------------------------------

TEST(ApplyTest, CenterCropAtScaleOneGivesExactNormalizedValues) {
  // 256x256 with Resize(256): no resampling, so the output is the gradient's 16-pixel
  // centre crop, normalized: every value is known exactly.
  const TransformOptions o = Options(Mode::kEval, Layout::kFloatCHW);
  auto t = Make(o);
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
  auto u8 = Make(Options(Mode::kTrain, Layout::kUint8HWC));
  const std::vector<uint8_t> hwc = ApplyU8(*u8, img, plan);
  for (int y = 0; y < 224; ++y) {
    for (int x = 0; x < 224; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(hwc[(y * 224 + x) * 3 + c], Gradient(x + 37, y + 53, c));
      }
    }
  }
}

TEST(ApplyTest, FlipMirrorsColumns) {
  const auto img = NoiseImage(450, 380, 3);
  for (const Layout layout : {Layout::kUint8HWC, Layout::kFloatCHW}) {
    auto t = Make(Options(Mode::kTrain, layout));
    // Odd sizes exercise the non-multiple-of-4 tail; several scales.
    for (const RectF r : {RectF{10, 20, 300, 250}, RectF{100, 50, 90, 120},
                          RectF{0, 0, 450, 380}}) {
      for (const int n : {224, 37}) {
        TransformOptions o = Options(Mode::kTrain, layout);
        o.image_size = n;
        auto tn = Make(o);
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
    auto tf = Make(of);
    auto tu = Make(Options(mode, Layout::kUint8HWC));
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
    auto tf = Make(of);
    auto tu = Make(Options(mode, Layout::kUint8HWC));
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
    auto t = Make(o);
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
  auto t = Make(Options(Mode::kTrain, Layout::kUint8HWC));
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
  decode::DecodedImage full;
  full.image.Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        full.image.Row(y)[3 * x + c] = static_cast<uint8_t>(
            127.5 + 120 * std::sin(x / (40.0 + 10 * c)) * std::cos(y / 55.0));
      }
    }
  }
  full.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  // Half scale of the box [100, 900) x [40, 760): 400 x 360 decoded pixels.
  decode::DecodedImage half;
  half.image.Resize(400, 360, 3);
  for (int y = 0; y < 360; ++y) {
    for (int x = 0; x < 400; ++x) {
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int dy = 0; dy < 2; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            sum += full.image.Row(40 + 2 * y + dy)[3 * (100 + 2 * x + dx) + c];
          }
        }
        half.image.Row(y)[3 * x + c] = static_cast<uint8_t>((sum + 2) / 4);
      }
    }
  }
  half.covered = RectF{100, 40, 800, 720};
  half.scale_x = half.scale_y = 0.5;
  for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
    auto t = Make(Options(mode, Layout::kUint8HWC));
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
  auto t = Make(Options(Mode::kTrain, Layout::kUint8HWC));
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
  auto t = Make(Options(Mode::kTrain, Layout::kUint8HWC));
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
