// windowed_masks_test: windowed instance masks (Targets::masks_windowed, what the
// annotations stage writes) hold the same planes as the full ones, on generated COCO files
// with polygons (several parts, some reaching past the canvas, some degenerate) and crowds
// as RLE in both forms; Keep (sanitize) and WriteMaskPlanes (collate) agree on both forms.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "stages/detection/coco.h"
#include "stages/detection/rle.h"

namespace flowloader::detection {
namespace {

// A polygon of 3-7 points around a random centre; `spill` lets it reach past the canvas.
std::string Polygon(int w, int h, bool spill, std::mt19937& gen) {
  const double cx = gen() % w, cy = gen() % h;
  const double r = 1 + gen() % (1 + std::max(w, h) / 3);
  const int n = 3 + static_cast<int>(gen() % 5);
  std::vector<std::string> xy;
  for (int i = 0; i < n; ++i) {
    const double a = 6.283185307 * i / n + (gen() % 100) / 200.0;
    double x = cx + r * std::cos(a), y = cy + r * std::sin(a);
    if (!spill) x = std::clamp(x, 0.0, w - 0.01), y = std::clamp(y, 0.0, h - 0.01);
    xy.push_back(absl::StrCat(x));
    xy.push_back(absl::StrCat(y));
  }
  return absl::StrCat("[", absl::StrJoin(xy, ", "), "]");
}

// A crowd's RLE of a random blob, uncompressed or as COCO's string.
std::string CrowdRle(int w, int h, bool compressed, std::mt19937& gen) {
  std::vector<uint8_t> mask(static_cast<size_t>(w) * h, 0);
  const int x0 = gen() % w, y0 = gen() % h;
  const int x1 = std::min(w, x0 + 1 + static_cast<int>(gen() % w));
  const int y1 = std::min(h, y0 + 1 + static_cast<int>(gen() % h));
  for (int y = y0; y < y1; ++y) {
    for (int x = x0; x < x1; ++x) mask[static_cast<size_t>(y) * w + x] = gen() % 3 != 0;
  }
  const Rle rle = RleFromMask(mask.data(), h, w);
  const std::string size = absl::StrCat("\"size\": [", h, ", ", w, "]");
  if (compressed) {  // COCO's alphabet has '\\', which JSON escapes.
    const std::string counts = absl::StrReplaceAll(RleToString(rle), {{"\\", "\\\\"}});
    return absl::StrCat("{\"counts\": \"", counts, "\", ", size, "}");
  }
  return absl::StrCat("{\"counts\": [", absl::StrJoin(rle.counts, ", "), "], ", size, "}");
}

std::string GeneratedCoco(int images, std::mt19937& gen) {
  std::vector<std::string> image_rows, annotations;
  int id = 1;
  for (int i = 0; i < images; ++i) {
    const int w = 5 + static_cast<int>(gen() % 60), h = 5 + static_cast<int>(gen() % 60);
    image_rows.push_back(absl::StrCat("{\"id\": ", i, ", \"file_name\": \"", i,
                                      ".jpg\", \"width\": ", w, ", \"height\": ", h, "}"));
    const int k = static_cast<int>(gen() % 7);
    for (int j = 0; j < k; ++j, ++id) {
      const bool crowd = gen() % 4 == 0;
      std::string segmentation;
      if (crowd) {
        segmentation = CrowdRle(w, h, gen() % 2 == 0, gen);
      } else {
        std::vector<std::string> parts;
        const int n = 1 + static_cast<int>(gen() % 3);
        for (int p = 0; p < n; ++p) parts.push_back(Polygon(w, h, gen() % 3 == 0, gen));
        if (gen() % 8 == 0) parts.push_back("[2, 2, 2, 2, 2, 2]");  // Degenerate: a point.
        segmentation = absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
      }
      annotations.push_back(absl::StrCat(
          "{\"id\": ", id, ", \"image_id\": ", i, ", \"category_id\": 1, \"bbox\": [0, 0, ",
          w, ", ", h, "], \"iscrowd\": ", crowd ? 1 : 0, ", \"area\": 1, \"segmentation\": ",
          segmentation, "}"));
    }
  }
  return absl::StrCat("{\"images\": [", absl::StrJoin(image_rows, ", "),
                      "], \"categories\": [{\"id\": 1, \"name\": \"shape\"}], \"annotations\": [",
                      absl::StrJoin(annotations, ", "), "]}");
}

TEST(WindowedMasksTest, SamePlanesAsFullMasksThroughKeepAndCollate) {
  std::mt19937 gen(5);
  const char* dir = std::getenv("TEST_TMPDIR");
  CocoOptions options;
  options.annotations = std::string(dir != nullptr ? dir : "/tmp") + "/windowed.json";
  options.images = "images";
  std::ofstream(options.annotations) << GeneratedCoco(300, gen);
  absl::StatusOr<std::unique_ptr<CocoDataset>> coco = CocoDataset::Open(options);
  ASSERT_TRUE(coco.ok()) << coco.status();
  ASSERT_TRUE((*coco)->skipped().empty());
  int64_t instances = 0, smaller = 0;
  for (size_t i = 0; i < (*coco)->images().size(); ++i) {
    Targets full, windowed;
    (*coco)->MakeTargets(i, true, &full);
    (*coco)->MakeTargets(i, true, &windowed, /*windowed=*/true);
    ASSERT_TRUE(windowed.masks_windowed);
    ASSERT_EQ(windowed.mask_windows.size(), 4 * full.labels.size());
    instances += full.size();
    if (windowed.masks.size() < full.masks.size()) ++smaller;
    // Each window lies inside the canvas.
    for (size_t k = 0; k < full.labels.size(); ++k) {
      const int32_t* win = &windowed.mask_windows[4 * k];
      EXPECT_GE(win[0], 0);
      EXPECT_GE(win[1], 0);
      EXPECT_LE(win[0] + win[2], windowed.canvas_width);
      EXPECT_LE(win[1] + win[3], windowed.canvas_height);
    }
    // Collate's write, then Keep (sanitize) on both forms.
    std::vector<uint8_t> planes(windowed.MaskPlaneBytes(), 7);
    windowed.WriteMaskPlanes(planes.data());
    EXPECT_TRUE(planes == full.masks) << "image " << i;
    std::vector<bool> keep(full.labels.size());
    for (size_t k = 0; k < keep.size(); ++k) keep[k] = gen() % 3 != 0;
    EXPECT_EQ(windowed.Keep(keep), full.Keep(keep));
    EXPECT_TRUE(windowed.masks_windowed);
    windowed.ExpandMasks();
    EXPECT_FALSE(windowed.masks_windowed);
    EXPECT_TRUE(windowed.mask_windows.empty());
    EXPECT_TRUE(windowed.masks == full.masks) << "image " << i;
    EXPECT_EQ(windowed.labels, full.labels);
  }
  EXPECT_GT(instances, 500);
  EXPECT_GT(smaller, 200);  // Not vacuous: the windows are smaller than the planes.
}

TEST(WindowedMasksTest, DecodeIntoWindowIsTheFullDecodesPart) {
  std::mt19937 gen(9);
  for (int n = 0; n < 200; ++n) {
    const int w = 1 + static_cast<int>(gen() % 40), h = 1 + static_cast<int>(gen() % 40);
    std::vector<uint8_t> mask(static_cast<size_t>(w) * h);
    for (uint8_t& v : mask) v = gen() % 2;
    const Rle rle = RleFromMask(mask.data(), h, w);
    std::vector<uint8_t> full(mask.size(), 0);
    DecodeRleInto(rle, full.data());
    const int x = gen() % w, y = gen() % h;
    const int ww = 1 + static_cast<int>(gen() % (w - x)), wh = 1 + static_cast<int>(gen() % (h - y));
    std::vector<uint8_t> window(static_cast<size_t>(ww) * wh, 0);
    DecodeRleIntoWindow(rle, x, y, ww, wh, window.data());
    for (int r = 0; r < wh; ++r) {
      for (int c = 0; c < ww; ++c) {
        ASSERT_EQ(window[static_cast<size_t>(r) * ww + c],
                  full[static_cast<size_t>(y + r) * w + x + c])
            << w << "x" << h << " window " << x << "," << y << " " << ww << "x" << wh;
      }
    }
  }
}

}  // namespace
}  // namespace flowloader::detection
