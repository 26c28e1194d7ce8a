// transform_test: option validation and torchvision's crop numbers (Plan). Apply's
// pixels are apply_test; agreement with PIL is resize_pil_test.
//
// Thread-safety: single-threaded tests.
#include "stages/augment/transform.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/testing/test_util.h"

namespace flowloader::augment {
namespace {

using testing::MakeTransform;
using testing::NoiseImage;
using testing::Options;

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
    [](const ::testing::TestParamInfo<BadOption>& p) { return p.param.name; });

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
  auto f = MakeTransform(Options(Mode::kTrain, Layout::kFloatCHW));
  EXPECT_EQ(f->OutputShape(), (std::array<int, 3>{3, 224, 224}));
  EXPECT_EQ(f->OutputBytes(), 3u * 224 * 224 * 4);
  auto u = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
  EXPECT_EQ(u->OutputShape(), (std::array<int, 3>{224, 224, 3}));
  EXPECT_EQ(u->OutputBytes(), 3u * 224 * 224);
}

// ---- Train plans ----------------------------------------------------------------------

TEST(TrainPlanTest, RegionIsAnIntegerBoxInsideTheImageWithinScaleAndRatio) {
  const TransformOptions o = Options(Mode::kTrain, Layout::kFloatCHW);
  auto t = MakeTransform(o);
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
  auto t = MakeTransform(o);
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
    [](const ::testing::TestParamInfo<FallbackCase>& p) { return p.param.name; });

TEST(TrainPlanTest, SameKeyGivesSamePlanAndIndicesDiffer) {
  auto t = MakeTransform(Options(Mode::kTrain, Layout::kFloatCHW));
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
    auto t = MakeTransform(o);
    const int n = 4000;
    int flips = 0;
    for (int index = 0; index < n; ++index) {
      SampleRng rng(9, 0, index);
      flips += t->Plan(450, 380, rng).flip;
    }
    // Binomial sd is at most 0.008 here; 0.03 is about 4 sd.
    EXPECT_NEAR(static_cast<double>(flips) / n, p, 0.03) << "p = " << p;
    if (p == 0.0 || p == 1.0) {
      EXPECT_EQ(flips, static_cast<int>(p * n));
    }
  }
}

TEST(TrainPlanTest, ExtremeOptionRangesStillGiveRegionsInsideTheImage) {
  // Ratios up to 1e12 make sqrt(area * ratio) overflow int: such attempts must fail and
  // fall through, not wrap around.
  TransformOptions o = Options(Mode::kTrain, Layout::kUint8HWC);
  o.ratio_min = 1e-12;
  o.ratio_max = 1e12;
  o.scale_min = 1e-9;
  auto t = MakeTransform(o);
  for (int index = 0; index < 200; ++index) {
    SampleRng rng(12, 0, index);
    const RectF r = t->Plan(450, 380, rng).region;
    ASSERT_GE(r.x, 0);
    ASSERT_GE(r.y, 0);
    ASSERT_GE(r.w, 1);
    ASSERT_GE(r.h, 1);
    ASSERT_LE(r.x + r.w, 450);
    ASSERT_LE(r.y + r.h, 380);
  }
}

TEST(TrainPlanTest, EmptyImageGivesARegionApplyRefuses) {
  auto t = MakeTransform(Options(Mode::kTrain, Layout::kUint8HWC));
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
  auto t = MakeTransform(o);
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
    [](const ::testing::TestParamInfo<EvalCase>& p) { return p.param.name; });

TEST(EvalPlanEdgeTest, AbsurdAspectStaysInsideTheImage) {
  // int(256 * 1e8 / 1) overflows int; the plan saturates instead and stays inside.
  auto t = MakeTransform(Options(Mode::kEval, Layout::kUint8HWC));
  SampleRng rng(1, 0, 0);
  for (const auto& size : {std::pair<int, int>{1, 100000000}, {100000000, 1}}) {
    const CropPlan p = t->Plan(size.first, size.second, rng);
    EXPECT_GE(p.region.x, 0);
    EXPECT_GE(p.region.y, 0);
    EXPECT_GT(p.region.w, 0);
    EXPECT_GT(p.region.h, 0);
    EXPECT_LE(p.region.x + p.region.w, size.first + 1e-6);
    EXPECT_LE(p.region.y + p.region.h, size.second + 1e-6);
  }
}

}  // namespace
}  // namespace flowloader::augment
