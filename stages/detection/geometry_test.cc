// geometry_test: boxes and masks move together, and sanitize drops every field of a box
// it drops (the parity test compares the arithmetic with torchvision v2's kernels).
#include <vector>

#include "gtest/gtest.h"
#include "stages/detection/geometry.h"
#include "stages/detection/rle.h"

namespace flowloader::detection {
namespace {

// OneBox is a 20 × 10 canvas with one instance whose mask is exactly its box.
Targets OneBox(int x1, int y1, int x2, int y2) {
  Targets t;
  t.canvas_width = 20;
  t.canvas_height = 10;
  t.boxes = {float(x1), float(y1), float(x2), float(y2)};
  t.labels = {3};
  t.iscrowd = {0};
  t.area = {float((x2 - x1) * (y2 - y1))};
  t.has_masks = true;
  t.masks.assign(200, 0);
  for (int y = y1; y < y2; ++y) {
    for (int x = x1; x < x2; ++x) t.masks[y * 20 + x] = 1;
  }
  return t;
}

// MaskBox is the tight box of instance k's mask, xyxy.
std::vector<float> MaskBox(const Targets& t, int k) {
  const Rle rle = RleFromMask(t.masks.data() + k * t.mask_plane(), t.canvas_height,
                              t.canvas_width);
  double b[4];
  RleBox(rle, b);
  return {float(b[0]), float(b[1]), float(b[0] + b[2]), float(b[1] + b[3])};
}

TEST(GeometryTest, MasksFollowBoxesThroughFlipsCropsAndPads) {
  const std::vector<Geometry> ops = {Geometry::HorizontalFlip(), Geometry::VerticalFlip(),
                                     Geometry::Crop(1, 3, 8, 15), Geometry::Pad(2, 1, 3, 4),
                                     Geometry::CenterCrop(6, 12),
                                     Geometry::Resize(12, 24)};  // 12 × 6 → ×2: exact.
  Targets t = OneBox(4, 2, 9, 7);
  for (const Geometry& g : ops) {
    Apply(g, &t);
    ASSERT_EQ(t.masks.size(), t.mask_plane());
    EXPECT_EQ(MaskBox(t, 0), t.boxes) << static_cast<int>(g.kind);
  }
  EXPECT_EQ(t.canvas_width, 24);
  EXPECT_EQ(t.canvas_height, 12);
  EXPECT_EQ(t.boxes, (std::vector<float>{12, 0, 22, 8}));
}

TEST(GeometryTest, CropClampsBoxesToTheNewCanvas) {
  Targets t = OneBox(4, 2, 9, 7);
  Apply(Geometry::Crop(3, 6, 10, 10), &t);
  EXPECT_EQ(t.boxes, (std::vector<float>{0, 0, 3, 4}));
  EXPECT_EQ(t.canvas_width, 10);
  EXPECT_EQ(t.canvas_height, 10);
  EXPECT_EQ(MaskBox(t, 0), t.boxes);
}

TEST(GeometryTest, SanitizeDropsEveryFieldOfADroppedBox) {
  Targets t = OneBox(4, 2, 9, 7);
  Targets second = OneBox(10, 1, 10, 5);  // Zero width: dropped.
  Targets third = OneBox(0, 0, 2, 2);
  for (const Targets* o : {&second, &third}) {
    t.boxes.insert(t.boxes.end(), o->boxes.begin(), o->boxes.end());
    t.labels.push_back(o->labels[0] + static_cast<int64_t>(t.labels.size()));
    t.iscrowd.push_back(static_cast<int64_t>(t.labels.size()));
    t.area.push_back(o->area[0]);
    t.masks.insert(t.masks.end(), o->masks.begin(), o->masks.end());
  }
  EXPECT_EQ(Sanitize(SanitizeOptions{}, &t), 1);
  ASSERT_EQ(t.size(), 2);
  EXPECT_EQ(t.labels, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t.iscrowd, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(t.boxes, (std::vector<float>{4, 2, 9, 7, 0, 0, 2, 2}));
  ASSERT_EQ(t.masks.size(), 2 * t.mask_plane());
  EXPECT_EQ(MaskBox(t, 1), (std::vector<float>{0, 0, 2, 2}));
  // min_area 5 drops the 2 × 2 box too.
  EXPECT_EQ(Sanitize(SanitizeOptions{1.0, 5.0}, &t), 1);
  EXPECT_EQ(t.labels, (std::vector<int64_t>{3}));
}

TEST(GeometryTest, ConvertsBoxFormatsAsTorchvision) {
  std::vector<float> b = {10, 20, 30, 60};  // xyxy
  ConvertBoxes(BoxFormat::kXYXY, BoxFormat::kCXCYWH, &b);
  EXPECT_EQ(b, (std::vector<float>{20, 40, 20, 40}));
  ConvertBoxes(BoxFormat::kCXCYWH, BoxFormat::kXYWH, &b);
  EXPECT_EQ(b, (std::vector<float>{10, 20, 20, 40}));
  ConvertBoxes(BoxFormat::kXYWH, BoxFormat::kXYXY, &b);
  EXPECT_EQ(b, (std::vector<float>{10, 20, 30, 60}));
}

}  // namespace
}  // namespace flowloader::detection
