// resample_isa_test: every kernel set this CPU runs (SSE4.1, AVX2, AVX-512) gives the
// same bytes as the SSE4.1 baseline, through Transform::Apply, for RGB images and for
// Y, Cb, Cr planes (ResampleYcc's permute kernels: spans of 32 and 64 inputs and the
// scalar fallback beyond), for both layouts, train
// and eval, flipped or not, at every kind of scale: upscale, 1:1 crops (the copy path),
// mild and heavy (> 64 taps) downscale, odd output sizes (row tails), tiny boxes (the
// scalar vertical path), into aligned and misaligned buffers (streaming stores or not).
//
// Thread-safety: single-threaded; SetResampleIsaForTesting is process-wide.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "stages/augment/internal/resample.h"
#include "stages/augment/testing/test_util.h"
#include "stages/augment/transform.h"

namespace flowloader::augment {
namespace {

using internal::ResampleIsa;
using testing::FixedPlan;
using testing::ImageOf;
using testing::MakeTransform;
using testing::NoiseImage;
using testing::Options;

// Extremes: 0 and 255 in blocks, the values where rounding and packing saturate.
decode::DecodedImage ExtremeImage(int w, int h) {
  return ImageOf(w, h, [](int x, int y, int c) {
    return (((x / (2 + c)) ^ (y / 3)) & 1) ? 255 : 0;
  });
}

// Isas lists the sets this CPU runs, the baseline first.
std::vector<ResampleIsa> Isas() {
  std::vector<ResampleIsa> isas;
  for (const ResampleIsa isa : {ResampleIsa::kSse41, ResampleIsa::kAvx2, ResampleIsa::kAvx512}) {
    if (internal::ResampleIsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

const char* Name(ResampleIsa isa) {
  switch (isa) {
    case ResampleIsa::kSse41: return "SSE4.1";
    case ResampleIsa::kAvx2: return "AVX2";
    case ResampleIsa::kAvx512: return "AVX-512";
  }
  return "?";
}

// Case is one Apply call to run under every kernel set.
struct Case {
  std::string name;
  TransformOptions options;
  CropPlan plan;
  const decode::DecodedImage* image;
};

class ResampleIsaTest : public ::testing::Test {
 protected:
  void TearDown() override { internal::ResetResampleIsaForTesting(); }

  // Run applies `c` under `isa`, writing to a buffer `offset` bytes past a 64-byte
  // boundary (batch slots are 64-byte aligned; the kernels stream aligned rows with
  // non-temporal stores and store others plainly), and returns the output.
  static std::vector<uint8_t> Run(const Case& c, ResampleIsa isa, size_t offset) {
    EXPECT_TRUE(internal::SetResampleIsaForTesting(isa));
    const auto t = MakeTransform(c.options);
    const size_t bytes = t->OutputBytes();
    std::vector<uint8_t> buffer(bytes + 64 + offset, 0xA5);
    uint8_t* dst = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) + offset;
    const absl::Status s = t->Apply(*c.image, c.plan, dst);
    EXPECT_TRUE(s.ok()) << c.name << ": " << s;
    return std::vector<uint8_t>(dst, dst + bytes);
  }

  // ExpectSameBytes runs every case under the baseline with plain stores (a buffer
  // aligned to 4 bytes only), and under every set at alignments that turn each set's
  // streaming stores on and off; each case also with its image as Y, Cb, Cr planes
  // (ResampleYcc), 4:2:0 with both chroma phases and 4:2:2.
  static void ExpectSameBytes(const std::vector<Case>& rgb_cases) {
    const std::vector<ResampleIsa> isas = Isas();
    if (isas.size() == 1) GTEST_SKIP() << "this CPU runs only the SSE4.1 kernels";
    std::vector<std::unique_ptr<decode::DecodedImage>> planes;
    std::vector<Case> cases = rgb_cases;
    for (size_t i = 0; i < rgb_cases.size(); ++i) {
      const int layouts[3][3] = {{2, 2, 0}, {2, 2, 1}, {2, 1, 0}};
      const int* l = layouts[i % 3];
      planes.push_back(std::make_unique<decode::DecodedImage>(
          testing::YccPlanesOf(*rgb_cases[i].image, l[0], l[1], l[2])));
      Case c = rgb_cases[i];
      c.name = absl::StrCat(c.name, " as YCbCr planes ", l[0], "x", l[1], " phase ", l[2]);
      c.image = planes.back().get();
      cases.push_back(c);
    }
    for (const Case& c : cases) {
      const std::vector<uint8_t> want = Run(c, ResampleIsa::kSse41, 4);
      for (const ResampleIsa isa : isas) {
        for (const size_t offset : {0, 4, 16, 32}) {
          const std::vector<uint8_t> got = Run(c, isa, offset);
          ASSERT_EQ(got.size(), want.size());
          if (std::memcmp(got.data(), want.data(), want.size()) == 0) continue;
          size_t i = 0;
          while (got[i] == want[i]) ++i;
          FAIL() << Name(isa) << " at offset " << offset << " differs from SSE4.1 in "
                 << c.name << " at byte " << i << " of " << want.size();
        }
      }
    }
  }
};

TEST_F(ResampleIsaTest, RandomPlansGiveTheSameBytes) {
  // Random image sizes, output sizes (multiples of 16 and 8, odd, tiny), modes, layouts,
  // normalizations and the plans Transform draws (flips included).
  const int kSizes[] = {1, 2, 3, 7, 8, 15, 16, 17, 24, 31, 37, 64, 100, 224, 299};
  std::vector<std::unique_ptr<decode::DecodedImage>> images;
  std::vector<Case> cases;
  SampleRng pick(11, 0, 0);
  for (int i = 0; i < 60; ++i) {
    const int w = static_cast<int>(pick.UniformInt(1, 700));
    const int h = static_cast<int>(pick.UniformInt(1, 700));
    images.push_back(std::make_unique<decode::DecodedImage>(NoiseImage(w, h, i)));
    const int size = kSizes[i % (sizeof(kSizes) / sizeof(kSizes[0]))];
    for (const Mode mode : {Mode::kTrain, Mode::kEval}) {
      for (const Layout layout : {Layout::kFloatCHW, Layout::kUint8HWC}) {
        TransformOptions o = Options(mode, layout, size);
        o.mean = {static_cast<float>(pick.Uniform(0, 1)), 0.5f, 0.3f};
        o.std = {static_cast<float>(pick.Uniform(0.1, 1)), 0.25f, 2.0f};
        const auto t = MakeTransform(o);
        ASSERT_NE(t, nullptr);
        for (int k = 0; k < 3; ++k) {
          SampleRng rng(12, i, k);
          cases.push_back(Case{absl::StrCat("image ", w, "x", h, " size ", size,
                                            mode == Mode::kTrain ? " train" : " eval",
                                            layout == Layout::kFloatCHW ? " float" : " uint8",
                                            " draw ", k),
                               o, t->Plan(w, h, rng), images.back().get()});
        }
      }
    }
  }
  ExpectSameBytes(cases);
}

TEST_F(ResampleIsaTest, EveryScaleGivesTheSameBytes) {
  const auto noise = NoiseImage(450, 380, 1);
  const auto extreme = ExtremeImage(450, 380);
  const auto big = NoiseImage(2400, 1600, 2);
  struct Geometry {
    const char* name;
    const decode::DecodedImage* image;
    RectF box;
    int size;
  };
  const Geometry geometries[] = {
      {"upscale x8", &noise, {100, 50, 28, 28}, 224},
      {"upscale fractional", &noise, {10.25, 20.5, 33.5, 41.75}, 224},
      {"1:1 crop (copy path)", &noise, {37, 53, 224, 224}, 224},
      {"1:1 crop at the right edge", &noise, {226, 156, 224, 224}, 224},
      {"1:1 crop, odd size", &noise, {3, 4, 37, 37}, 37},
      {"mild downscale", &noise, {10, 20, 300, 250}, 224},
      {"mild downscale, extremes", &extreme, {0, 0, 450, 380}, 224},
      {"one axis 1:1", &noise, {0, 0, 224, 380}, 224},
      {"downscale x2 odd output", &noise, {0, 0, 450, 380}, 225},
      {"heavy downscale (> 64 taps)", &big, {0, 0, 2400, 1600}, 16},
      {"heavy downscale, 8-pixel tail", &big, {5, 7, 2390, 1590}, 24},
      {"heavy downscale, extremes", &extreme, {0, 0, 450, 380}, 3},
      {"tiny box (scalar vertical)", &noise, {200, 100, 4, 3}, 224},
      {"thin column", &noise, {200, 0, 2, 380}, 64},
      {"whole image to 1 pixel", &noise, {0, 0, 450, 380}, 1},
  };
  std::vector<Case> cases;
  for (const Geometry& g : geometries) {
    for (const Layout layout : {Layout::kFloatCHW, Layout::kUint8HWC}) {
      for (const bool flip : {false, true}) {
        cases.push_back(Case{absl::StrCat(g.name, layout == Layout::kFloatCHW ? " float" : " uint8",
                                          flip ? " flipped" : ""),
                             Options(Mode::kTrain, layout, g.size),
                             FixedPlan(g.box.x, g.box.y, g.box.w, g.box.h, flip), g.image});
      }
    }
  }
  // Eval on the big image: a fractional box with margins read outside it.
  for (const Layout layout : {Layout::kFloatCHW, Layout::kUint8HWC}) {
    for (const int size : {16, 224, 299}) {
      TransformOptions o = Options(Mode::kEval, layout, size);
      const auto t = MakeTransform(o);
      ASSERT_NE(t, nullptr);
      SampleRng rng(1, 0, 0);
      cases.push_back(Case{absl::StrCat("eval 2400x1600 size ", size), o,
                           t->Plan(2400, 1600, rng), &big});
    }
  }
  ExpectSameBytes(cases);
}

// Every set's weight pass (tap_kernels.h) gives BuildAxisFilterScalarForTesting's filter
// bit for bit: tap counts, windows, weights and the identity flag, over random crops
// (upscale and 3- to 9-tap downscale, whole and fractional origins as DCT-scaled and
// chroma boxes have), odd output sizes (partial last register), boxes against and past
// the window's ends (shifted windows, the nearest-pixel fallback) and identity crops.
TEST_F(ResampleIsaTest, AxisFilterMatchesScalar) {
  uint32_t state = 2024;
  const auto next = [&state](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<uint32_t>(n));
  };
  struct Axis {
    double origin, length;
    int out, lo, hi;
  };
  std::vector<Axis> axes;
  for (int t = 0; t < 3000; ++t) {
    const int win = 8 + next(600);
    const int out = t % 4 == 0 ? 1 + next(300) : 176;
    const double length = 1 + next(win * 8) / 8.0;
    const double origin = next(win * 8) / 8.0 - (t % 5 == 0 ? 4 : 0);
    const int lo = t % 7 == 0 ? next(win / 2 + 1) : 0;
    axes.push_back(Axis{origin, length, out, lo, win});
  }
  axes.push_back(Axis{5, 176, 176, 0, 400});      // Identity.
  axes.push_back(Axis{5.5, 176, 176, 0, 400});    // Scale 1, half-pixel phase.
  axes.push_back(Axis{-50, 20, 176, 0, 10});      // Mostly outside the window.
  axes.push_back(Axis{390, 30, 64, 0, 400});      // Past win_hi.
  axes.push_back(Axis{0, 400, 3, 0, 400});        // Past 9 taps: the scalar builder.
  for (const ResampleIsa isa : Isas()) {
    ASSERT_TRUE(internal::SetResampleIsaForTesting(isa));
    for (const Axis& a : axes) {
      internal::AxisFilter want, got;
      internal::BuildAxisFilterScalarForTesting(a.origin, a.length, a.out, a.lo, a.hi, &want);
      internal::BuildAxisFilter(a.origin, a.length, a.out, a.lo, a.hi, &got);
      const std::string at = absl::StrCat(Name(isa), " origin ", a.origin, " length ",
                                          a.length, " out ", a.out, " window ", a.lo, "-", a.hi);
      ASSERT_EQ(got.taps, want.taps) << at;
      ASSERT_EQ(got.lo, want.lo) << at;
      ASSERT_EQ(got.hi, want.hi) << at;
      ASSERT_EQ(got.identity, want.identity) << at;
      ASSERT_EQ(got.first, want.first) << at;
      ASSERT_EQ(got.weights.size(), want.weights.size()) << at;
      ASSERT_EQ(std::memcmp(got.weights.data(), want.weights.data(),
                            want.weights.size() * sizeof(float)),
                0)
          << at;
    }
  }
}

TEST_F(ResampleIsaTest, UnsupportedSetIsRefused) {
  EXPECT_TRUE(internal::SetResampleIsaForTesting(ResampleIsa::kSse41));
  for (const ResampleIsa isa : {ResampleIsa::kAvx2, ResampleIsa::kAvx512}) {
    EXPECT_EQ(internal::SetResampleIsaForTesting(isa), internal::ResampleIsaSupported(isa));
  }
  EXPECT_TRUE(internal::ResampleIsaSupported(internal::DetectedResampleIsa()));
}

}  // namespace
}  // namespace flowloader::augment
