// head_test: a view's planned head with Pillow's bicubic (and nearest) filter, run on a
// full-scale RGB decode, gives torchvision's pixels: random_resized_crop is
// F.resized_crop of the planned box (crop, then Pillow's resize of the crop alone), byte
// for byte; resize + center_crop, planned as one resize of the crop's box, matches
// F.center_crop(F.resize(...)) within 1 level (the box's filter centres are the whole
// resize's, up to float rounding). PillowResample is Pillow's exact resize
// (resize_pil_test checks it against PIL itself). Also: a geometry op whose size
// depends on the image (random_rotation with expand) between a head and a fixed size.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stages/augment/internal/crop_math.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/augment/transform.h"

namespace flowloader::augment {
namespace {

constexpr uint64_t kSeed = 17;
constexpr uint64_t kViewStream = 1;

std::unique_ptr<ViewProgram> Program(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  EXPECT_TRUE(ops.ok()) << ops.status();
  absl::StatusOr<std::unique_ptr<ViewProgram>> p = ViewProgram::Create(*ops);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

// A full-scale RGB decode: smooth colour with noise, so that every filter tap matters.
decode::DecodedImage FullDecode(int w, int h) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  uint32_t state = 12345;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        state = state * 1664525u + 1013904223u;
        const double smooth = 127 + 110 * std::sin(x / (7.0 + c) + y / (11.0 + 2 * c));
        const int v = static_cast<int>(smooth) + static_cast<int>(state >> 27) - 16;
        d.image.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

// Runs the view on `img` (no plan: the head plans on the whole decode) and returns the
// plan it drew.
CropPlan RunView(const ViewProgram& view, const decode::DecodedImage& img, uint64_t index,
                 void* dst) {
  SampleRng rng(kSeed, 0, index, kViewStream);
  const CropPlan plan = view.head()->Plan(img.image.width, img.image.height, rng);
  const absl::Status s = view.Run(img, nullptr, {kSeed, 0, index}, kViewStream, dst);
  EXPECT_TRUE(s.ok()) << s;
  return plan;
}

// F.resized_crop on the planned box: the crop alone resized with Pillow's filter.
Image ResizedCrop(const Image& src, const CropPlan& plan, int size, Interpolation filter) {
  const RectF& r = plan.region;
  EXPECT_EQ(r.x, std::floor(r.x));
  EXPECT_EQ(r.w, std::floor(r.w));
  const int left = static_cast<int>(r.x), top = static_cast<int>(r.y);
  const ImageView crop{src.pixels.data() + top * src.stride() + left * 3,
                       static_cast<int>(r.w), static_cast<int>(r.h), 3, src.stride()};
  Image out;
  internal::PillowResample(crop, RectF{0, 0, r.w, r.h}, size, size, filter, plan.flip, &out);
  return out;
}

struct TrainCase {
  std::string list;
  Interpolation filter;
  int size;
};

TEST(HeadTest, TrainHeadIsResizedCropOfThePlannedBox) {
  const TrainCase cases[] = {
      {"random_resized_crop(size=48, interpolation=bicubic)", Interpolation::kBicubic, 48},
      {"random_resized_crop(size=40, scale=[0.4, 1.0], interpolation=bicubic); "
       "random_horizontal_flip()",
       Interpolation::kBicubic, 40},
      {"random_resized_crop(size=96, scale=[0.05, 0.4], interpolation=bicubic)",
       Interpolation::kBicubic, 96},
      {"random_resized_crop(size=36, interpolation=nearest); random_horizontal_flip()",
       Interpolation::kNearest, 36},
  };
  const decode::DecodedImage img = FullDecode(150, 110);
  for (const TrainCase& c : cases) {
    std::unique_ptr<ViewProgram> view = Program(c.list);
    ASSERT_NE(view, nullptr);
    ASSERT_NE(view->head(), nullptr) << c.list;
    std::vector<uint8_t> got(view->output_bytes());
    int flips = 0;
    for (uint64_t index = 0; index < 12; ++index) {
      const CropPlan plan = RunView(*view, img, index, got.data());
      flips += plan.flip;
      const Image want = ResizedCrop(img.image, plan, c.size, c.filter);
      ASSERT_EQ(want.pixels.size(), got.size());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.pixels.begin()))
          << c.list << " index " << index;
    }
    if (c.list.find("flip") != std::string::npos) {
      EXPECT_GT(flips, 0) << c.list;
    }
  }
}

// The same head followed by normalize: (q / 255 - mean) / std of the same pixels.
TEST(HeadTest, BicubicHeadThenNormalize) {
  std::unique_ptr<ViewProgram> view =
      Program("random_resized_crop(size=32, interpolation=bicubic); normalize()");
  ASSERT_NE(view, nullptr);
  const decode::DecodedImage img = FullDecode(97, 75);
  std::vector<float> got(3 * 32 * 32);
  const float mean[3] = {0.485f, 0.456f, 0.406f}, stddev[3] = {0.229f, 0.224f, 0.225f};
  for (uint64_t index = 0; index < 6; ++index) {
    const CropPlan plan = RunView(*view, img, index, got.data());
    const Image want = ResizedCrop(img.image, plan, 32, Interpolation::kBicubic);
    double worst = 0;
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 32 * 32; ++i) {
        const double ref = (want.pixels[3 * i + c] / 255.0 - mean[c]) / stddev[c];
        worst = std::max(worst, std::fabs(got[c * 32 * 32 + i] - ref));
      }
    }
    EXPECT_LT(worst, 1e-5) << index;
  }
}

struct EvalCase {
  int resize;
  int crop;
  Interpolation filter;
  int width;
  int height;
};

// resize(R) then center_crop(S), planned as one head: F.center_crop(F.resize(img, R), S).
TEST(HeadTest, EvalHeadIsResizeThenCenterCrop) {
  const EvalCase cases[] = {
      {64, 56, Interpolation::kBicubic, 150, 110}, {64, 56, Interpolation::kBicubic, 97, 131},
      {73, 73, Interpolation::kBicubic, 200, 90},  {40, 32, Interpolation::kNearest, 150, 110},
      {160, 128, Interpolation::kBicubic, 150, 110},  // Upscaling.
      {60, 48, Interpolation::kNearest, 160, 120},    // Exact ratios: filter centres on
      {60, 48, Interpolation::kBicubic, 160, 120},    // pixel edges.
      {112, 100, Interpolation::kNearest, 336, 224},  {90, 64, Interpolation::kNearest, 300, 500},
      {75, 50, Interpolation::kNearest, 97, 75},
  };
  for (const EvalCase& c : cases) {
    const std::string list = absl::StrCat(
        "resize(size=", c.resize, ", interpolation=",
        c.filter == Interpolation::kBicubic ? "bicubic" : "nearest",
        "); center_crop(size=", c.crop, ")");
    std::unique_ptr<ViewProgram> view = Program(list);
    ASSERT_NE(view, nullptr);
    ASSERT_NE(view->head(), nullptr) << list;
    EXPECT_EQ(view->head()->options().mode, Mode::kEval) << list;
    const decode::DecodedImage img = FullDecode(c.width, c.height);
    std::vector<uint8_t> got(view->output_bytes());
    RunView(*view, img, 0, got.data());

    int new_w = 0, new_h = 0;
    internal::ResizeShorterSide(c.width, c.height, c.resize, &new_w, &new_h);
    Image resized;
    internal::PillowResample(img.image.view(),
                             RectF{0, 0, static_cast<double>(c.width),
                                   static_cast<double>(c.height)},
                             new_w, new_h, c.filter, false, &resized);
    const int top = internal::CenterCropOffset(new_h, c.crop);
    const int left = internal::CenterCropOffset(new_w, c.crop);
    int worst = 0, off = 0;
    for (int y = 0; y < c.crop; ++y) {
      for (int x = 0; x < 3 * c.crop; ++x) {
        const int want = resized.pixels[(static_cast<size_t>(top + y) * new_w + left) * 3 + x];
        const int d = std::abs(got[static_cast<size_t>(y) * 3 * c.crop + x] - want);
        worst = std::max(worst, d);
        off += d != 0;
      }
    }
    EXPECT_LE(worst, 1) << list << " on " << c.width << "x" << c.height << " (" << off
                        << " values off)";
  }
}

// random_rotation with expand makes the size depend on the angle: a list needs a
// fixed-size op after it, and with one it runs (after a planned head).
TEST(HeadTest, RotationWithExpandNeedsAFixedSizeAfterIt) {
  absl::StatusOr<std::vector<OpText>> alone =
      ParseOpListText("random_resized_crop(size=48); random_rotation(degrees=30, expand=true)");
  ASSERT_TRUE(alone.ok());
  absl::StatusOr<std::unique_ptr<ViewProgram>> refused = ViewProgram::Create(*alone);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("depends on the image"), std::string::npos)
      << refused.status();
  std::unique_ptr<ViewProgram> view = Program(
      "random_resized_crop(size=48); random_rotation(degrees=30, expand=true); "
      "center_crop(size=40); gaussian_blur(kernel_size=9); normalize()");
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->shape(), (std::array<int64_t, 3>{3, 40, 40}));
  const decode::DecodedImage img = FullDecode(120, 90);
  std::vector<float> out(3 * 40 * 40);
  for (uint64_t index = 0; index < 4; ++index) {
    EXPECT_TRUE(view->Run(img, nullptr, {kSeed, 0, index}, kViewStream, out.data()).ok());
  }
}

}  // namespace
}  // namespace flowloader::augment
