// colour_kernels_test: the fast forms of the colour kernels against their
// literal restatements of PIL's C code, over every input that can differ (part
// of ops_test; the comparison with PIL itself is ops_parity_test's).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/kernels/colour_hue.h"
#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/kernels/colour_sharpness.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"

namespace flowloader::augment::kernels {
namespace {

using ::flowloader::augment::OpText;
using ::flowloader::augment::ParseOpListText;
using ::flowloader::augment::ViewProgram;

TEST(ColourKernelsTest, HsvTablesMatchPilForEveryColour) {
  for (int r = 0; r < 256; ++r) {
    for (int g = 0; g < 256; ++g) {
      for (int b = 0; b < 256; ++b) {
        const uint8_t rgb[3] = {uint8_t(r), uint8_t(g), uint8_t(b)};
        uint8_t want[3], got[3];
        internal::RgbToHsvLiteral(rgb, want);
        internal::RgbToHsvFast(rgb, got);
        ASSERT_TRUE(want[0] == got[0] && want[1] == got[1] && want[2] == got[2])
            << r << "," << g << "," << b;
      }
    }
  }
}

TEST(ColourKernelsTest, AdjustHueIsPilsRoundTrip) {
  // Every red and green, every third blue: 22 million pixels over the shifts.
  Image img;
  img.Resize(256 * 86, 256, 3);
  for (double hue : {0.0, 0.004, -0.004, 0.1, -0.1, 0.25, -0.37, 0.5, -0.5}) {
    const int shift = internal::HueShift(hue);
    size_t k = 0;
    for (int g = 0; g < 256; ++g) {
      for (int r = 0; r < 256; ++r) {
        for (int b = 0; b < 256; b += 3, k += 3) {
          img.pixels[k] = uint8_t(r), img.pixels[k + 1] = uint8_t(g),
          img.pixels[k + 2] = uint8_t(b);
        }
      }
    }
    const std::vector<uint8_t> before = img.pixels;
    Image portable = img;
    internal::AdjustHuePortable(portable, hue);
    AdjustHue(img, hue);  // The AVX2 path where the CPU has it.
    ASSERT_TRUE(portable.pixels == img.pixels) << "hue " << hue << ": the two paths differ";
    for (size_t i = 0; i < before.size(); i += 3) {
      uint8_t hsv[3], want[3];
      internal::RgbToHsvLiteral(&before[i], hsv);
      hsv[0] = static_cast<uint8_t>(hsv[0] + shift);
      internal::HsvToRgbLiteral(hsv, want);
      ASSERT_TRUE(want[0] == img.pixels[i] && want[1] == img.pixels[i + 1] &&
                  want[2] == img.pixels[i + 2])
          << "hue " << hue << " pixel " << int(before[i]) << "," << int(before[i + 1]) << ","
          << int(before[i + 2]);
    }
  }
}

// The vector paths AdjustHue may take that this CPU runs, with their names.
std::vector<std::pair<internal::HuePath, std::string>> VectorHuePaths() {
  std::vector<std::pair<internal::HuePath, std::string>> paths;
  if (internal::HuePathRuns(internal::HuePath::kAvx2)) {
    paths.emplace_back(internal::HuePath::kAvx2, "avx2");
  }
  if (internal::HuePathRuns(internal::HuePath::kAvx512)) {
    paths.emplace_back(internal::HuePath::kAvx512, "avx512");
  }
  return paths;
}

// An image of all 16M colours, colour c at pixel c.
Image EveryColour() {
  Image img;
  img.Resize(4096, 4096, 3);
  for (size_t k = 0, c = 0; c < (1u << 24); ++c, k += 3) {
    img.pixels[k] = uint8_t(c >> 16), img.pixels[k + 1] = uint8_t(c >> 8),
    img.pixels[k + 2] = uint8_t(c);
  }
  return img;
}

// The index of the first pixel where a and b differ, or -1.
int64_t FirstDifferentPixel(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t k = 0; k < a.size(); k += 3) {
    if (a[k] != b[k] || a[k + 1] != b[k + 1] || a[k + 2] != b[k + 2]) return int64_t(k / 3);
  }
  return -1;
}

TEST(ColourKernelsTest, AdjustHueFastPathMatchesOnEveryColour) {
  // All 16M colours, every vector path this CPU runs: their estimates decide PIL's
  // roundings except near boundaries they detect (colour_hue.cc); a wrong bound or
  // correction bit shows here.
  const Image colours = EveryColour();
  for (double hue : {0.0, 0.1, -0.37}) {
    Image portable = colours;
    internal::AdjustHuePortable(portable, hue);
    for (const auto& [path, name] : VectorHuePaths()) {
      Image img = colours;
      internal::AdjustHueOn(path, img, hue);
      EXPECT_EQ(FirstDifferentPixel(portable.pixels, img.pixels), -1)
          << name << " hue " << hue << " (the colour, as r << 16 | g << 8 | b)";
    }
  }
}

TEST(ColourKernelsTest, AdjustHueIsPilsRoundTripOnEveryPath) {
  // All 16M colours, each path this CPU runs against the literal restatement of PIL's
  // two conversions (RgbToHsvLiteral, H + shift mod 256, HsvToRgbLiteral), for shifts
  // over the whole range: every H and every sector of hsv2rgb.
  const Image colours = EveryColour();
  std::vector<uint8_t> hsv(colours.pixels.size());
  for (size_t k = 0; k < hsv.size(); k += 3) internal::RgbToHsvLiteral(&colours.pixels[k], &hsv[k]);
  auto paths = VectorHuePaths();
  paths.emplace_back(internal::HuePath::kPortable, "portable");
  std::vector<uint8_t> want(colours.pixels.size());
  for (double hue : {0.0, 0.004, 0.1, -0.37, 0.5}) {
    const int shift = internal::HueShift(hue);
    for (size_t k = 0; k < hsv.size(); k += 3) {
      const uint8_t shifted[3] = {static_cast<uint8_t>(hsv[k] + shift), hsv[k + 1], hsv[k + 2]};
      internal::HsvToRgbLiteral(shifted, &want[k]);
    }
    for (const auto& [path, name] : paths) {
      Image img = colours;
      internal::AdjustHueOn(path, img, hue);
      EXPECT_EQ(FirstDifferentPixel(want, img.pixels), -1)
          << name << " hue " << hue << " (the colour, as r << 16 | g << 8 | b)";
    }
  }
}

TEST(ColourKernelsTest, AdjustHueTailsMatchThePortablePath) {
  // Pixel counts that are not a multiple of the vector paths' 8 and 16.
  std::mt19937 gen(5);
  for (int w : {1, 3, 7, 9, 13, 15, 17, 31, 33, 47}) {
    Image img;
    img.Resize(w, 3, 3);
    for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(gen());
    Image portable = img;
    internal::AdjustHuePortable(portable, 0.3);
    for (const auto& [path, name] : VectorHuePaths()) {
      Image fast = img;
      internal::AdjustHueOn(path, fast, 0.3);
      EXPECT_TRUE(portable.pixels == fast.pixels) << name << " width " << w;
    }
    AdjustHue(img, 0.3);
    EXPECT_TRUE(portable.pixels == img.pixels) << w;
  }
}

// Every kernel's AVX2 and VBMI paths (where this CPU has them) against its portable path, on
// pixel counts around the vector widths (ops_parity_test compares the path this CPU
// takes with PIL).
TEST(ColourKernelsTest, FastPathsMatchPortablePaths) {
  std::mt19937 gen(11);
  const std::vector<std::function<void(Image&)>> kernels = {
      [](Image& i) { AdjustBrightness(i, 1.37); },
      [](Image& i) { AdjustBrightness(i, 0.61); },
      [](Image& i) { AdjustContrast(i, 0.45); },
      [](Image& i) { AdjustContrast(i, 2.2); },
      [](Image& i) { AdjustSaturation(i, 0.3); },
      [](Image& i) { AdjustSaturation(i, 1.9); },
      [](Image& i) { AdjustHue(i, -0.27); },
      [](Image& i) { AdjustSharpness(i, 0.4); },
      [](Image& i) { AdjustSharpness(i, 2.6); },
      [](Image& i) { Grayscale(i); },
      [](Image& i) { Posterize(i, 3); },
      [](Image& i) { Solarize(i, 99.5); },
      [](Image& i) { Autocontrast(i); },
      [](Image& i) { Equalize(i); },
      [](Image& i) { Invert(i); }};
  // The fast paths with and without the VBMI table lookups (where the CPU has them).
  for (bool no_vbmi : {false, true}) {
    internal::SetNoVbmiForTesting(no_vbmi);
    for (int w : {1, 5, 8, 11, 16, 37, 224}) {
      Image src;
      src.Resize(w, 9, 3);
      for (uint8_t& v : src.pixels) v = static_cast<uint8_t>(gen() % 200 + 20);
      for (size_t k = 0; k < kernels.size(); ++k) {
        Image fast = src, portable = src;
        kernels[k](fast);
        internal::SetPortableForTesting(true);
        kernels[k](portable);
        internal::SetPortableForTesting(false);
        EXPECT_TRUE(fast.pixels == portable.pixels)
            << "kernel " << k << ", width " << w << ", no_vbmi " << no_vbmi;
      }
    }
  }
  internal::SetNoVbmiForTesting(false);
}

// Saturation and contrast (the grey sum) on full-range values, factors inside and outside
// [0, 1], and every pixel count up to 100 (the VBMI paths' 16-pixel steps, their 64-byte
// loads while 64 bytes remain and masked ones after, and the tails; the AVX2 paths' 8).
TEST(ColourKernelsTest, SaturationAndContrastMatchPortableOnEveryTail) {
  std::mt19937 gen(17);
  for (bool no_vbmi : {false, true}) {
    internal::SetNoVbmiForTesting(no_vbmi);
    for (int n = 1; n <= 100; ++n) {
      for (int h : {1, 3}) {
        Image src;
        src.Resize(n, h, 3);
        for (uint8_t& v : src.pixels) v = static_cast<uint8_t>(gen());
        if (n == 7) std::fill(src.pixels.begin(), src.pixels.end(), 255);
        // Factors inside [0, 1], outside it, and beyond the VBMI path's packs (+-1000).
        for (double factor : {0.8, 0.93, 1.0 / 3, 1.07, 1.2, 1.9, -0.4, 999.9, 1000.1, -2500.0}) {
          for (int op = 0; op < 2; ++op) {
            Image fast = src, portable = src;
            auto apply = [&](Image& i) {
              if (op == 0) AdjustSaturation(i, factor);
              else AdjustContrast(i, factor);
            };
            apply(fast);
            internal::SetPortableForTesting(true);
            apply(portable);
            internal::SetPortableForTesting(false);
            EXPECT_TRUE(fast.pixels == portable.pixels)
                << (op == 0 ? "saturation " : "contrast ") << factor << ", " << n << " x " << h
                << ", no_vbmi " << no_vbmi;
          }
        }
      }
    }
  }
  internal::SetNoVbmiForTesting(false);
}

// Autocontrast (its per-channel min and max, 48 bytes a step) and equalize (the VBMI
// three-table lookup, 192 bytes a step, then 64-byte blocks and a tail) on every pixel count
// up to 140, on full-range values, narrow ranges (a stretch on every channel) and constant
// channels, against the portable paths.
TEST(ColourKernelsTest, AutocontrastAndEqualizeMatchPortableOnEveryTail) {
  std::mt19937 gen(23);
  for (bool no_vbmi : {false, true}) {
    internal::SetNoVbmiForTesting(no_vbmi);
    for (int n = 1; n <= 140; ++n) {
      for (int kind = 0; kind < 3; ++kind) {
        Image src;
        src.Resize(n, 2, 3);
        for (size_t i = 0; i < src.pixels.size(); ++i) {
          const int c = static_cast<int>(i % 3);
          src.pixels[i] = kind == 0   ? static_cast<uint8_t>(gen())
                          : kind == 1 ? static_cast<uint8_t>(40 * c + 30 + gen() % (60 + 40 * c))
                                      : static_cast<uint8_t>(c == 1 ? 77 : gen() % 9 + 120 * c);
        }
        for (int op = 0; op < 2; ++op) {
          Image fast = src, portable = src;
          auto apply = [&](Image& i) {
            if (op == 0) Autocontrast(i);
            else Equalize(i);
          };
          apply(fast);
          internal::SetPortableForTesting(true);
          apply(portable);
          internal::SetPortableForTesting(false);
          EXPECT_TRUE(fast.pixels == portable.pixels)
              << (op == 0 ? "autocontrast" : "equalize") << ", kind " << kind << ", " << n
              << " x 2, no_vbmi " << no_vbmi;
        }
      }
    }
  }
  internal::SetNoVbmiForTesting(false);
}

// Sharpness's AVX-512 rows (32 values a step, then the values before the last column one at
// a time) against the SSE4.1 / portable rows, on every width up to 80 and factors inside
// and outside [0, 1].
TEST(ColourKernelsTest, SharpnessMatchesPortableOnEveryWidth) {
  std::mt19937 gen(29);
  for (int w = 1; w <= 80; ++w) {
    for (int h : {3, 5}) {
      Image src;
      src.Resize(w, h, 3);
      for (uint8_t& v : src.pixels) v = static_cast<uint8_t>(gen());
      for (double factor : {0.0, 0.4, 0.99, 1.6, 2.6, -0.7, 1e6}) {
        Image fast = src, portable = src;
        AdjustSharpness(fast, factor);
        internal::SetPortableForTesting(true);
        AdjustSharpness(portable, factor);
        internal::SetPortableForTesting(false);
        EXPECT_TRUE(fast.pixels == portable.pixels) << factor << ", " << w << " x " << h;
      }
    }
  }
}

// Saturation on every RGB colour once (a 4096 x 4096 image), at factors either side of 1.
TEST(ColourKernelsTest, SaturationMatchesPortableOnEveryColour) {
  Image src;
  src.Resize(4096, 4096, 3);
  for (size_t i = 0; i < src.pixels.size() / 3; ++i) {
    src.pixels[3 * i] = static_cast<uint8_t>(i);
    src.pixels[3 * i + 1] = static_cast<uint8_t>(i >> 8);
    src.pixels[3 * i + 2] = static_cast<uint8_t>(i >> 16);
  }
  for (double factor : {0.83, 1.17}) {
    Image fast = src, portable = src;
    AdjustSaturation(fast, factor);
    internal::SetPortableForTesting(true);
    AdjustSaturation(portable, factor);
    internal::SetPortableForTesting(false);
    EXPECT_TRUE(fast.pixels == portable.pixels) << factor;
  }
}

TEST(ColourKernelsTest, HueShiftIsNumpysUint8) {
  // np.uint8(h * 255): truncation toward zero, then modulo 256.
  EXPECT_EQ(internal::HueShift(0.5), 127);
  EXPECT_EQ(internal::HueShift(-0.5), 129);
  EXPECT_EQ(internal::HueShift(-0.1), 231);
  EXPECT_EQ(internal::HueShift(-0.0039), 0);
  EXPECT_EQ(internal::HueShift(-0.004), 255);
}

TEST(ColourKernelsTest, IntegerSmoothIsPilsFloatSmooth) {
  std::mt19937 gen(3);
  uint8_t w[9];
  auto check = [&] {
    const unsigned sum = w[0] + w[1] + w[2] + w[3] + 5u * w[4] + w[5] + w[6] + w[7] + w[8];
    ASSERT_EQ(internal::SmoothValue(sum), internal::SmoothLiteral(w));
  };
  for (int i = 0; i < 2000000; ++i) {
    // Mostly random windows, some with few distinct values (flat and edge
    // regions).
    const int levels = i % 3 == 0 ? 256 : 2 + i % 7;
    const int base = static_cast<int>(gen() % 256);
    for (uint8_t& v : w) {
      v = levels == 256 ? gen() % 256 : std::min(255, base + static_cast<int>(gen() % levels));
    }
    check();
  }
  for (int v = 0; v < 256; ++v) {  // Every flat window, and each with a stepped centre.
    for (int c = 0; c < 256; c += 5) {
      std::fill(std::begin(w), std::end(w), uint8_t(v));
      w[4] = uint8_t(c);
      check();
    }
  }
}

TEST(ColourKernelsTest, BlendSpanIsBlendValue) {
  std::vector<uint8_t> a, b, out;
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) a.push_back(uint8_t(x)), b.push_back(uint8_t(y));
  }
  a.push_back(7), b.push_back(200);  // An odd length: the scalar tail runs too.
  out.resize(a.size());
  for (float alpha : {0.0f, 1.0f, 0.5f, 0.6f, 0.123456f, 1.4f, 2.0f, 7.5f, -0.3f, 1e9f}) {
    internal::BlendSpan(a.data(), b.data(), out.data(), a.size(), alpha);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(out[i], internal::BlendValue(a[i], b[i], alpha))
          << "alpha " << alpha << " " << int(a[i]) << " " << int(b[i]);
    }
  }
}

// Blend.c's formula itself, on values PIL gives (checked in Python with
// Pillow 9.4): Image.blend of 10 and 200 at 0.7 is 143; at 1.5, 295 clipped to
// 255; at -0.5, 0.
TEST(ColourKernelsTest, BlendValueIsBlendC) {
  EXPECT_EQ(internal::BlendValue(10, 200, 0.7f), 143);
  EXPECT_EQ(internal::BlendValue(10, 200, 1.5f), 255);
  EXPECT_EQ(internal::BlendValue(10, 200, -0.5f), 0);
  EXPECT_EQ(internal::BlendValue(200, 10, 0.3f), 143);
}

// DINO's colour ops in a view's list: they run after the planned head, change the pixels,
// and give the same bytes for the same sample.
// normalize's kernels (AVX-512 VBMI, 16 pixels a step; AVX2, 8; the portable loop) write
// the literal formula's floats, float(q) * scale + offset (a multiply, then an add), bit
// for bit and nothing past the tensor: on every pixel count up to 100 (the steps' tails),
// on the recipes' sizes, into slots 64-byte aligned (streaming stores), 32-byte aligned
// and 4-byte aligned.
TEST(NormalizeKernelsTest, EveryPathWritesTheLiteralFormula) {
  std::vector<std::pair<int, int>> sizes = {{7, 13}, {96, 96}, {176, 176}, {224, 224}};
  for (int n = 1; n <= 100; ++n) sizes.emplace_back(n, 1);
  struct Path {
    const char* name;
    bool no_vbmi, portable;
  };
  const Path paths[] = {{"fastest", false, false}, {"no vbmi", true, false},
                        {"portable", false, true}};
  const std::pair<std::string, std::pair<std::array<double, 3>, std::array<double, 3>>> lists[] =
      {{"normalize()", {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}}},
       {"normalize(mean=0.5, std=[0.25, 0.5, 3])", {{0.5, 0.5, 0.5}, {0.25, 0.5, 3}}},
       // A negative std, which torchvision takes (it refuses only 0).
       {"normalize(mean=0.5, std=[-0.25, 0.5, -3])", {{0.5, 0.5, 0.5}, {-0.25, 0.5, -3}}}};
  std::mt19937 gen(29);
  for (const auto& [text, stats] : lists) {
    absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
    ASSERT_TRUE(ops.ok()) << ops.status();
    absl::StatusOr<std::unique_ptr<augment::Op>> op =
        augment::OpRegistry::Global().Create((*ops)[0].name, (*ops)[0].args);
    ASSERT_TRUE(op.ok()) << op.status();
    // The op's per-channel factors (normalize.cc), from the float mean and std.
    float scale[3], offset[3];
    for (int c = 0; c < 3; ++c) {
      const double mean = static_cast<float>(stats.first[c]);
      const double stdev = static_cast<float>(stats.second[c]);
      scale[c] = static_cast<float>(1.0 / (255.0 * stdev));
      offset[c] = static_cast<float>(-mean / stdev);
    }
    for (const auto& [w, h] : sizes) {
      Image rgb;
      rgb.Resize(w, h, 3);
      for (uint8_t& v : rgb.pixels) v = static_cast<uint8_t>(gen());
      if (w * h >= 86) {
        for (int v = 0; v < 256; ++v) rgb.pixels[v] = static_cast<uint8_t>(v);
      }
      const size_t plane = static_cast<size_t>(w) * h;
      std::vector<float> want(3 * plane);
      for (int c = 0; c < 3; ++c) {
        for (size_t i = 0; i < plane; ++i) {
          const float scaled = static_cast<float>(rgb.pixels[3 * i + c]) * scale[c];
          want[c * plane + i] = scaled + offset[c];
        }
      }
      // aligned_alloc needs a size that is a multiple of the alignment.
      const size_t room = (3 * plane + 64 + 15) / 16 * 16;
      float* buffer = static_cast<float*>(std::aligned_alloc(64, room * sizeof(float)));
      for (const Path& path : paths) {
        for (size_t at : {0, 8, 1}) {
          std::fill(buffer, buffer + room, -7.0f);
          internal::SetNoVbmiForTesting(path.no_vbmi);
          internal::SetPortableForTesting(path.portable);
          augment::OpImage image;
          image.rgb = &rgb;
          image.chw = buffer + at;
          image.width = w;
          image.height = h;
          const absl::Status status = (*op)->Apply(augment::OpParams(), image);
          internal::SetPortableForTesting(false);
          internal::SetNoVbmiForTesting(false);
          ASSERT_TRUE(status.ok()) << status;
          EXPECT_EQ(std::memcmp(buffer + at, want.data(), want.size() * sizeof(float)), 0)
              << text << " " << w << " x " << h << ", " << path.name << ", at float " << at;
          EXPECT_TRUE(std::all_of(buffer, buffer + at, [](float v) { return v == -7.0f; }) &&
                      std::all_of(buffer + at + want.size(), buffer + room,
                                  [](float v) { return v == -7.0f; }))
              << text << " " << w << " x " << h << ", " << path.name << ": wrote outside";
        }
      }
      std::free(buffer);
    }
  }
}

TEST(ColourOpsInAViewTest, DinoListIsDeterministicAndChangesPixels) {
  auto program = [](const std::string& text) {
    absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
    EXPECT_TRUE(ops.ok()) << ops.status();
    absl::StatusOr<std::unique_ptr<ViewProgram>> p = ViewProgram::Create(*ops);
    EXPECT_TRUE(p.ok()) << p.status();
    return *std::move(p);
  };
  const std::string head =
      "random_resized_crop(size=40, scale=[0.4, 1.0]); random_horizontal_flip()";
  const std::unique_ptr<ViewProgram> plain = program(head);
  const std::unique_ptr<ViewProgram> dino =
      program(head +
              "; color_jitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1, p=0.8); "
              "random_grayscale(p=0.2); random_solarize(threshold=128, p=0.2)");
  decode::DecodedImage img;
  img.image.Resize(90, 70, 3);
  std::mt19937 gen(2);
  for (uint8_t& v : img.image.pixels) v = static_cast<uint8_t>(gen());
  img.covered = RectF{0, 0, 90, 70};
  int changed = 0;
  for (uint64_t index = 0; index < 20; ++index) {
    std::vector<uint8_t> a(dino->output_bytes()), b(dino->output_bytes()), c(a.size());
    ASSERT_TRUE(dino->Run(img, nullptr, {4, 0, index}, 1, a.data()).ok());
    ASSERT_TRUE(dino->Run(img, nullptr, {4, 0, index}, 1, b.data()).ok());
    ASSERT_TRUE(plain->Run(img, nullptr, {4, 0, index}, 1, c.data()).ok());
    EXPECT_EQ(a, b) << index;
    changed += a != c;
  }
  EXPECT_GE(changed, 14);  // color_jitter applies to ~80% of samples.
}

}  // namespace
}  // namespace flowloader::augment::kernels
