// multi_sample_test.cc: the mosaic and copy_paste kernels on images whose pixels say where
// they came from, against YOLOv5's load_mosaic placement and torchvision's _copy_paste
// rules stated independently (testdata/multi_sample_parity_test.py compares copy_paste
// with torchvision's own code).
#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "stages/detection/batch_image.h"
#include "stages/detection/copy_paste.h"
#include "stages/detection/mosaic.h"

namespace flowloader::detection {
namespace {

// Coded is a float32 [1, h, w] image whose pixel is tile · 1e6 + y · 1000 + x.
struct Coded {
  std::vector<float> pixels;
  BatchImage image;
  Coded(int tile, int w, int h) : pixels(static_cast<size_t>(w) * h) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        pixels[static_cast<size_t>(y) * w + x] = tile * 1e6f + y * 1000 + x;
      }
    }
    image = BatchImage{pixels.data(), h, w, 1, true};
  }
};

Targets Boxes(int w, int h, std::vector<float> boxes) {
  Targets t;
  t.canvas_width = w;
  t.canvas_height = h;
  t.boxes = boxes;
  for (size_t k = 0; k < boxes.size() / 4; ++k) {
    t.labels.push_back(static_cast<int64_t>(k) + 1);
    t.iscrowd.push_back(0);
    t.area.push_back(1.0f);
  }
  return t;
}

TEST(MosaicTest, EachTileMeetsTheCentreWithTheRightCorner) {
  const int w = 40, h = 30;
  std::vector<Coded> tiles;
  for (int i = 0; i < 4; ++i) tiles.emplace_back(i, w, h);
  std::array<const BatchImage*, 4> images;
  std::array<Targets, 4> targets;
  std::array<const Targets*, 4> target_ptrs;
  for (int i = 0; i < 4; ++i) {
    images[i] = &tiles[i].image;
    targets[i] = Boxes(w, h, {});
    target_ptrs[i] = &targets[i];
  }
  std::vector<float> out(static_cast<size_t>(w) * h, -1);
  const BatchImage out_image{out.data(), h, w, 1, true};
  for (const auto& [xc, yc] : std::vector<std::pair<int, int>>{{20, 15}, {33, 41}, {59, 16}}) {
    MosaicDraw d;
    d.applied = true;
    d.xc = xc, d.yc = yc;
    Targets got;
    Mosaic(d, MosaicOptions(), images, target_ptrs, out_image, &got);
    // Output (x, y) is canvas (x + w/2, y + h/2). Top-left's bottom-right corner, top-right's
    // bottom-left, bottom-left's top-right and bottom-right's top-left sit at the centre.
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const int cx = x + w / 2, cy = y + h / 2;
        const int tile = (cy >= yc ? 2 : 0) + (cx >= xc ? 1 : 0);
        const int sx = cx >= xc ? cx - xc : w - (xc - cx);
        const int sy = cy >= yc ? cy - yc : h - (yc - cy);
        const bool inside = sx >= 0 && sx < w && sy >= 0 && sy < h;
        const float want = inside ? tile * 1e6f + sy * 1000 + sx : 114.0f;
        ASSERT_EQ(out[static_cast<size_t>(y) * w + x], want) << xc << "," << yc << " at " << x
                                                               << "," << y;
      }
    }
  }
}

TEST(MosaicTest, PlaceTileIsLoadMosaicsTable) {
  // load_mosaic with s = 100 (w = h), centre (130, 70): the values worked by hand.
  TilePlacement t = PlaceTile(0, 130, 70, 100, 100);
  EXPECT_EQ(t.x1a, 30); EXPECT_EQ(t.y1a, 0); EXPECT_EQ(t.x2a, 130); EXPECT_EQ(t.y2a, 70);
  EXPECT_EQ(t.x1b, 0); EXPECT_EQ(t.y1b, 30);
  t = PlaceTile(1, 130, 70, 100, 100);
  EXPECT_EQ(t.x1a, 130); EXPECT_EQ(t.y1a, 0); EXPECT_EQ(t.x2a, 200); EXPECT_EQ(t.y2a, 70);
  EXPECT_EQ(t.x1b, 0); EXPECT_EQ(t.y1b, 30);
  t = PlaceTile(2, 130, 70, 100, 100);
  EXPECT_EQ(t.x1a, 30); EXPECT_EQ(t.y1a, 70); EXPECT_EQ(t.x2a, 130); EXPECT_EQ(t.y2a, 170);
  EXPECT_EQ(t.x1b, 0); EXPECT_EQ(t.y1b, 0);
  t = PlaceTile(3, 130, 70, 100, 100);
  EXPECT_EQ(t.x1a, 130); EXPECT_EQ(t.y1a, 70); EXPECT_EQ(t.x2a, 200); EXPECT_EQ(t.y2a, 170);
  EXPECT_EQ(t.x1b, 0); EXPECT_EQ(t.y1b, 0);
}

TEST(MosaicTest, BoxesMoveClipAndPassBoxCandidates) {
  const int w = 100, h = 100;
  Coded a(0, w, h), b(1, w, h);
  // Tile 0 (top left) with centre (100, 100): its image spans canvas [0, 100)², the
  // window [50, 150)²; tile 3 (bottom right) spans [100, 200)².
  Targets t0 = Boxes(w, h, {60, 60, 90, 80,     // Fully visible: (10, 10, 40, 30).
                            0, 0, 55, 55,       // 5 × 5 of 55 × 55 visible: 0.8% < 10%.
                            40, 70, 80, 71.5f,  // 1.5 px high: not > 2.
                            49, 10, 80, 90});   // Half visible: (0, 0, 30, 40), kept.
  Targets t3 = Boxes(w, h, {10, 20, 30, 25});   // (60, 70, 80, 75).
  Targets empty = Boxes(w, h, {});
  MosaicDraw d;
  d.applied = true;
  d.xc = 100, d.yc = 100;
  std::vector<float> out(static_cast<size_t>(w) * h);
  Targets got;
  got.image_id = 7;
  Mosaic(d, MosaicOptions(), {&a.image, &b.image, &b.image, &b.image},
         {&t0, &empty, &empty, &t3}, BatchImage{out.data(), h, w, 1, true}, &got);
  EXPECT_EQ(got.image_id, 7);
  EXPECT_EQ(got.canvas_width, w);
  ASSERT_EQ(got.labels, (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(got.boxes, (std::vector<float>{10, 10, 40, 30, 0, 0, 30, 40, 60, 70, 80, 75}));
}

TEST(MosaicTest, MasksMoveWithTheirPixels) {
  const int w = 32, h = 24;
  std::vector<Coded> tiles;
  std::array<Targets, 4> targets;
  for (int i = 0; i < 4; ++i) {
    tiles.emplace_back(i, w, h);
    targets[i] = Boxes(w, h, {0, 0, static_cast<float>(w), static_cast<float>(h)});
    targets[i].has_masks = true;
    targets[i].masks.resize(static_cast<size_t>(w) * h);
    for (size_t p = 0; p < targets[i].masks.size(); ++p) targets[i].masks[p] = (p * 7 + i) % 3 == 0;
  }
  std::vector<float> out(static_cast<size_t>(w) * h);
  MosaicDraw d;
  d.applied = true;
  d.xc = 37, d.yc = 20;
  Targets got;
  Mosaic(d, MosaicOptions(), {&tiles[0].image, &tiles[1].image, &tiles[2].image, &tiles[3].image},
         {&targets[0], &targets[1], &targets[2], &targets[3]},
         BatchImage{out.data(), h, w, 1, true}, &got);
  ASSERT_TRUE(got.has_masks);
  ASSERT_EQ(got.size(), 4);
  const size_t plane = got.mask_plane();
  for (int k = 0; k < 4; ++k) {
    const int tile = static_cast<int>(got.labels[k]) == 1 ? k : -1;
    ASSERT_GE(tile, 0);
    for (size_t p = 0; p < plane; ++p) {
      const float v = out[p];
      const int from = static_cast<int>(v / 1e6f);
      const int sy = static_cast<int>(v - from * 1e6f) / 1000, sx = static_cast<int>(v) % 1000;
      const uint8_t want = from == tile ? targets[tile].masks[static_cast<size_t>(sy) * w + sx] : 0;
      ASSERT_EQ(got.masks[k * plane + p], want) << "instance " << k << " pixel " << p;
    }
  }
}

TEST(MosaicTest, DrawsAreInRangeAndIncludeTheRow) {
  MosaicOptions o;
  o.p = 0.5;
  int applied = 0;
  for (int i = 0; i < 2000; ++i) {
    SampleRng rng(1, 0, static_cast<uint64_t>(i));
    const MosaicDraw d = DrawMosaic(o, 3, 8, 60, 80, rng);
    if (!d.applied) continue;
    ++applied;
    EXPECT_GE(d.xc, 40); EXPECT_LT(d.xc, 120); EXPECT_GE(d.yc, 30); EXPECT_LT(d.yc, 90);
    EXPECT_NE(std::find(d.tiles.begin(), d.tiles.end(), 3), d.tiles.end());
    for (int64_t t : d.tiles) EXPECT_TRUE(t >= 0 && t < 8);
  }
  EXPECT_NEAR(applied, 1000, 120);
}

// --- copy_paste ----------------------------------------------------------------------

TEST(CopyPasteTest, SelectionIsUniqueOfNDraws) {
  // E|unique(randint(0, n, n))| = n (1 - (1 - 1/n)^n).
  const int n = 6, trials = 20000;
  double total = 0;
  for (int i = 0; i < trials; ++i) {
    SampleRng rng(2, 0, static_cast<uint64_t>(i));
    const std::vector<int64_t> s = DrawSelection(n, rng);
    ASSERT_FALSE(s.empty());
    ASSERT_TRUE(std::is_sorted(s.begin(), s.end()));
    ASSERT_EQ(std::set<int64_t>(s.begin(), s.end()).size(), s.size());
    total += static_cast<double>(s.size());
  }
  EXPECT_NEAR(total / trials, n * (1 - std::pow(1 - 1.0 / n, n)), 0.03);
  SampleRng rng(2, 0, 0);
  EXPECT_TRUE(DrawSelection(0, rng).empty());
}

TEST(CopyPasteTest, BlendingIsAClipped5x5Dilation) {
  Targets paste = Boxes(9, 7, {0, 0, 1, 1});
  paste.has_masks = true;
  paste.masks.assign(63, 0);
  paste.masks[0] = 1;           // Corner (0, 0).
  paste.masks[3 * 9 + 6] = 1;   // (6, 3).
  std::vector<uint8_t> alpha;
  PasteMask(paste, {0}, true, &alpha);
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x < 9; ++x) {
      const bool near = (x <= 2 && y <= 2) || (std::abs(x - 6) <= 2 && std::abs(y - 3) <= 2);
      EXPECT_EQ(alpha[y * 9 + x], near ? 1 : 0) << x << "," << y;
    }
  }
  PasteMask(paste, {0}, false, &alpha);
  EXPECT_EQ(std::count(alpha.begin(), alpha.end(), 1), 2);
}

TEST(CopyPasteTest, OccludesRecomputesBoxesAndDropsEmptied) {
  const int w = 10, h = 8;
  std::vector<uint8_t> img(w * h * 3, 1), pimg(w * h * 3, 200);
  const BatchImage image{img.data(), h, w, 3, false}, paste_image{pimg.data(), h, w, 3, false};
  auto plane = [&](int x0, int y0, int x1, int y1) {  // Inclusive rectangle.
    std::vector<uint8_t> m(w * h, 0);
    for (int y = y0; y <= y1; ++y) for (int x = x0; x <= x1; ++x) m[y * w + x] = 1;
    return m;
  };
  Targets t = Boxes(w, h, {0, 0, 6, 8, 7, 0, 9, 3});
  t.has_masks = true;
  std::vector<uint8_t> m0 = plane(0, 0, 5, 7), m1 = plane(7, 0, 8, 2);
  t.masks = m0;
  t.masks.insert(t.masks.end(), m1.begin(), m1.end());
  Targets p = Boxes(w, h, {6.5f, 0, 9.5f, 4, 0, 5, 3, 8});
  p.labels = {10, 11};
  p.iscrowd = {1, 0};
  p.has_masks = true;
  std::vector<uint8_t> pm0 = plane(6, 0, 9, 3), pm1 = plane(0, 5, 2, 7);
  p.masks = pm0;
  p.masks.insert(p.masks.end(), pm1.begin(), pm1.end());
  std::vector<uint8_t> alpha;
  CopyPaste({0, 1}, false, paste_image, p, image, &t, &alpha);
  // Instance 1 (cols 7-8, rows 0-2) is under paste 0: dropped. Instance 0 loses rows 5-7
  // of cols 0-2: its box from the mask is still (0, 0, 5, 7), inclusive maxima.
  ASSERT_EQ(t.labels, (std::vector<int64_t>{1, 10, 11}));
  EXPECT_EQ(t.boxes, (std::vector<float>{0, 0, 5, 7, 6.5f, 0, 9.5f, 4, 0, 5, 3, 8}));
  EXPECT_EQ(t.iscrowd, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(t.area, (std::vector<float>{48 - 9, 16, 9}));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool pasted = pm0[y * w + x] || pm1[y * w + x];
      EXPECT_EQ(img[(y * w + x) * 3 + 1], pasted ? 200 : 1);
    }
  }
}

TEST(CopyPasteTest, DropsAOneColumnMaskAsDegenerate) {
  const int w = 6, h = 6;
  std::vector<float> img(w * h, 0), pimg(w * h, 1);
  Targets t = Boxes(w, h, {2, 0, 3, 6});
  t.has_masks = true;
  t.masks.assign(w * h, 0);
  for (int y = 0; y < h; ++y) t.masks[y * w + 2] = 1;  // One column: x1 == x2.
  Targets q = Boxes(w, h, {5, 5, 6, 6});
  q.has_masks = true;
  q.masks.assign(w * h, 0);
  q.masks[w * h - 1] = 1;
  std::vector<uint8_t> alpha;
  CopyPaste({0}, false, BatchImage{pimg.data(), h, w, 1, true}, q,
            BatchImage{img.data(), h, w, 1, true}, &t, &alpha);
  ASSERT_EQ(t.labels, (std::vector<int64_t>{1}));  // The pasted one; the column is gone.
  EXPECT_EQ(t.boxes, (std::vector<float>{5, 5, 6, 6}));
  EXPECT_EQ(img[w * h - 1], 1.0f);
}

}  // namespace
}  // namespace flowloader::detection
