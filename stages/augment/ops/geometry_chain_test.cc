// geometry_chain_test: a list's geometric ops run as one chain (internal/geometry_chain.h)
// write the bytes, boxes, labels and masks they write one by one, on many draws: the
// detection recipes (large-scale jitter, SSD), other filters, and gathers alone.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/ops/internal/geometry_chain.h"
#include "stages/augment/ops/view_program.h"
#include "stages/core/resources.h"
#include "stages/core/sanitizers.h"
#include "stages/decode/decoder.h"
#include "stages/detection/targets.h"

namespace flowloader::augment {
namespace {

std::unique_ptr<ViewProgram> MakeProgram(const std::string& text) {
  absl::StatusOr<std::vector<OpText>> ops = ParseOpListText(text);
  EXPECT_TRUE(ops.ok()) << text;
  absl::StatusOr<std::unique_ptr<ViewProgram>> program = ViewProgram::Create(*ops);
  EXPECT_TRUE(program.ok()) << text << ": " << program.status();
  return *std::move(program);
}

// Smooth-ish pixels (so resizes are not all rounding) with noise on top.
decode::DecodedImage Picture(int width, int height, std::mt19937& gen) {
  decode::DecodedImage d;
  d.format = decode::PixelFormat::kRgb;
  d.image.Resize(width, height, 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        d.image.Row(y)[3 * x + c] = static_cast<uint8_t>(x * (c + 1) + 3 * y + gen() % 16);
      }
    }
  }
  return d;
}

// Boxes inside the image, each with a mask plane of its box filled (plus noise pixels).
detection::Targets Instances(int width, int height, bool masks, std::mt19937& gen) {
  detection::Targets t;
  t.canvas_width = width;
  t.canvas_height = height;
  t.has_masks = masks;
  const int k = 1 + static_cast<int>(gen() % 5);
  for (int i = 0; i < k; ++i) {
    const float x0 = static_cast<float>(gen() % width), y0 = static_cast<float>(gen() % height);
    const float x1 = std::min<float>(width, x0 + 1 + gen() % width);
    const float y1 = std::min<float>(height, y0 + 1 + gen() % height);
    t.boxes.insert(t.boxes.end(), {x0, y0, x1, y1});
    t.labels.push_back(10 + i);
    t.iscrowd.push_back(i % 2);
    t.area.push_back((x1 - x0) * (y1 - y0));
  }
  if (masks) {
    t.masks.assign(static_cast<size_t>(k) * width * height, 0);
    for (int i = 0; i < k; ++i) {
      for (int y = static_cast<int>(t.boxes[4 * i + 1]); y < t.boxes[4 * i + 3]; ++y) {
        for (int x = static_cast<int>(t.boxes[4 * i]); x < t.boxes[4 * i + 2]; ++x) {
          t.masks[(static_cast<size_t>(i) * height + y) * width + x] = 1;
        }
      }
      for (int n = 0; n < 20; ++n) {
        t.masks[(static_cast<size_t>(i) * height + gen() % height) * width + gen() % width] ^= 1;
      }
    }
  }
  return t;
}

// Windowed is `t` with windowed masks (Targets::masks_windowed): each plane's window is
// its nonzero pixels' box grown by 0-3 pixels a side (within the canvas), so windows both
// tight and with zero borders are tested; an all-zero plane gets an empty window or a
// small one of zeros.
detection::Targets Windowed(const detection::Targets& t, std::mt19937& gen) {
  detection::Targets out = t;
  out.masks.clear();
  out.masks_windowed = true;
  const int w = t.canvas_width, h = t.canvas_height;
  for (int64_t k = 0; k < t.size(); ++k) {
    const uint8_t* plane = t.masks.data() + static_cast<size_t>(k) * t.mask_plane();
    int x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        if (plane[static_cast<size_t>(y) * w + x] == 0) continue;
        x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
    }
    if (x1 < 0) x0 = y0 = 0, x1 = y1 = static_cast<int>(gen() % 2) - 1;  // Empty or 1 × 1.
    x0 = std::max(0, x0 - static_cast<int>(gen() % 4));
    y0 = std::max(0, y0 - static_cast<int>(gen() % 4));
    x1 = std::min(w - 1, x1 + static_cast<int>(gen() % 4));
    y1 = std::min(h - 1, y1 + static_cast<int>(gen() % 4));
    if (x1 < x0 || y1 < y0) x0 = y0 = 0, x1 = y1 = -1;
    out.mask_windows.insert(out.mask_windows.end(), {x0, y0, x1 - x0 + 1, y1 - y0 + 1});
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) out.masks.push_back(plane[static_cast<size_t>(y) * w + x]);
    }
  }
  return out;
}

struct Out {
  absl::Status status;
  std::vector<uint8_t> pixels;
  detection::Targets targets;
};

Out RunOnce(const ViewProgram& program, const decode::DecodedImage& decoded,
            const detection::Targets* targets, uint64_t index, bool chain) {
  internal::SetGeometryChainForTesting(chain);
  Out out;
  out.pixels.resize(program.output_bytes());
  if (targets != nullptr) out.targets = *targets;
  out.status = program.Run(decoded, nullptr, ViewProgram::SampleKey{3, 1, index}, 77,
                           out.pixels.data(), nullptr, targets != nullptr ? &out.targets : nullptr);
  internal::SetGeometryChainForTesting(true);
  return out;
}

void ExpectSame(const std::string& list, bool with_targets, bool masks, int samples) {
  std::unique_ptr<ViewProgram> program = MakeProgram(list);
  std::mt19937 gen(11);
  const int64_t chains_before = internal::GeometryChainsRunForTesting();
  int windowed_chains = 0;
  for (int s = 0; s < samples; ++s) {
    const int w = 8 + static_cast<int>(gen() % 90), h = 8 + static_cast<int>(gen() % 90);
    const decode::DecodedImage decoded = Picture(w, h, gen);
    const detection::Targets t = Instances(w, h, masks, gen);
    const Out chained = RunOnce(*program, decoded, with_targets ? &t : nullptr, s, true);
    const Out plain = RunOnce(*program, decoded, with_targets ? &t : nullptr, s, false);
    const std::string where = list + ", sample " + std::to_string(s) + " (" + std::to_string(w) +
                              "x" + std::to_string(h) + ")";
    ASSERT_EQ(chained.status.ok(), plain.status.ok()) << where << ": " << chained.status << " / "
                                                      << plain.status;
    EXPECT_TRUE(chained.pixels == plain.pixels) << where;
    if (!with_targets) continue;
    EXPECT_EQ(chained.targets.canvas_width, plain.targets.canvas_width) << where;
    EXPECT_EQ(chained.targets.canvas_height, plain.targets.canvas_height) << where;
    EXPECT_EQ(chained.targets.boxes, plain.targets.boxes) << where;
    EXPECT_EQ(chained.targets.labels, plain.targets.labels) << where;
    EXPECT_EQ(chained.targets.iscrowd, plain.targets.iscrowd) << where;
    EXPECT_EQ(chained.targets.area, plain.targets.area) << where;
    EXPECT_EQ(chained.targets.has_masks, plain.targets.has_masks) << where;
    EXPECT_TRUE(chained.targets.masks == plain.targets.masks) << where;
    if (!masks) continue;
    // Windowed masks (as the annotations stage writes them), chained and op by op, come
    // out as the same planes.
    const detection::Targets windowed = Windowed(t, gen);
    detection::Targets expanded = windowed;
    expanded.ExpandMasks();
    ASSERT_TRUE(expanded.masks == t.masks) << where;
    for (const bool chain : {true, false}) {
      const int64_t runs = internal::GeometryChainsRunForTesting();
      Out out = RunOnce(*program, decoded, &windowed, s, chain);
      ASSERT_EQ(out.status.ok(), plain.status.ok()) << where << ": " << out.status;
      if (!out.status.ok()) continue;
      // A chain keeps them windowed; an op run alone expands them first.
      const bool ran_chain = internal::GeometryChainsRunForTesting() > runs;
      if (ran_chain) windowed_chains++;
      EXPECT_EQ(out.targets.masks_windowed, ran_chain) << where;
      out.targets.ExpandMasks();
      EXPECT_EQ(out.targets.boxes, plain.targets.boxes) << where;
      EXPECT_EQ(out.targets.labels, plain.targets.labels) << where;
      EXPECT_EQ(out.targets.canvas_width, plain.targets.canvas_width) << where;
      EXPECT_TRUE(out.targets.masks == plain.targets.masks) << where << (chain ? " chained" : "");
    }
  }
  // Not vacuous: most samples ran as a chain (two or more of the ops applied).
  EXPECT_GT(internal::GeometryChainsRunForTesting() - chains_before, samples / 4) << list;
  if (masks) {
    EXPECT_GT(windowed_chains, samples / 4) << list;
  }
}

TEST(GeometryChainTest, LargeScaleJitterWithMasks) {
  ExpectSame("scale_jitter(target_size=48); random_horizontal_flip(); "
             "fixed_size_crop(size=48, fill=[123, 117, 104])",
             true, true, 300);
}

TEST(GeometryChainTest, LargeScaleJitterOtherFiltersAndSizes) {
  ExpectSame("scale_jitter(target_size=[40, 56], interpolation=bicubic); "
             "random_vertical_flip(); random_horizontal_flip(); fixed_size_crop(size=[30, 44])",
             true, true, 200);
  ExpectSame("scale_jitter(target_size=40, scale_range=[0.5, 3.0], interpolation=nearest); "
             "random_horizontal_flip(p=1); fixed_size_crop(size=40); normalize()",
             true, true, 200);
  ExpectSame("random_shortest_size(min_size=[20, 40], max_size=60); random_horizontal_flip(); "
             "fixed_size_crop(size=32, fill=9)",
             true, true, 200);
}

TEST(GeometryChainTest, SsdZoomOutIouCropFlipResize) {
  ExpectSame("random_zoom_out(fill=[123, 117, 104]); random_iou_crop(); "
             "random_horizontal_flip(); resize(size=[30, 30])",
             true, false, 300);
  ExpectSame("random_zoom_out(fill=[1, 2, 3], p=1); random_iou_crop(); "
             "random_horizontal_flip(); resize(size=[30, 30])",
             true, true, 200);
}

TEST(GeometryChainTest, GathersAloneAndWithoutTargets) {
  ExpectSame("random_crop(size=24, padding=4, fill=[5, 6, 7]); random_horizontal_flip(); "
             "normalize()",
             false, false, 200);
  ExpectSame("random_zoom_out(fill=3, p=1); random_horizontal_flip(); fixed_size_crop(size=50)",
             true, true, 200);
  ExpectSame("resize(size=[20, 31]); pad(padding=[3, 1, 2, 5], fill=[4, 5, 6]); "
             "random_vertical_flip(p=1)",
             false, false, 100);
}

TEST(GeometryChainTest, AChainOverOneLargeImageKeepsNoLargeImage) {
  if (kUnderSanitizer) GTEST_SKIP() << "a sanitizer keeps freed memory resident";
  // pad then resize then a crop: the chain makes the padded 5200 x 5200 image (77 MiB)
  // the resize reads. The thread kept it after the sample, beside the next samples'
  // images and outside the worker's memory check (peak RSS over memory_limit_mb).
  std::unique_ptr<ViewProgram> program =
      MakeProgram("pad(padding=2500); resize(size=[3000, 3000]); center_crop(size=64)");
  std::mt19937 gen(5);
  const decode::DecodedImage decoded = Picture(200, 200, gen);
  const int64_t chains = internal::GeometryChainsRunForTesting();
  const int64_t before = ResidentBytes();
  {
    const Out out = RunOnce(*program, decoded, nullptr, 0, true);
    ASSERT_TRUE(out.status.ok()) << out.status;
  }
  EXPECT_GT(internal::GeometryChainsRunForTesting(), chains);  // It ran as a chain.
  const int64_t kept = ResidentBytes() - before;
  EXPECT_LT(kept, int64_t{32} << 20) << "kept " << (kept >> 20) << " MiB";
}

}  // namespace
}  // namespace flowloader::augment
