// rle_test: COCO RLE strings and polygon rasterisation on hand-worked cases (the parity
// test compares many more with the COCO definition and PIL).
#include <vector>

#include "gtest/gtest.h"
#include "stages/detection/rle.h"

namespace flowloader::detection {
namespace {

TEST(RleTest, DecodesHandWorkedStrings) {
  // Runs 2, 1, 1: "2", "1", "1" (no differences before the fourth run).
  absl::StatusOr<Rle> rle = RleFromString("211", 2, 2);
  ASSERT_TRUE(rle.ok()) << rle.status();
  EXPECT_EQ(rle->counts, (std::vector<uint32_t>{2, 1, 1}));
  std::vector<uint8_t> mask(4, 0);
  DecodeRleInto(*rle, mask.data());
  // Column-major: run index 2 is x = 1, y = 0.
  EXPECT_EQ(mask, (std::vector<uint8_t>{0, 1, 0, 0}));
  // 5, 30, 2, 1: 30 needs two characters ("n0"), the fourth is 1 − 30 = −29 ("SO").
  rle = RleFromString("5n02SO", 2, 19);
  ASSERT_TRUE(rle.ok()) << rle.status();
  EXPECT_EQ(rle->counts, (std::vector<uint32_t>{5, 30, 2, 1}));
  EXPECT_EQ(RleToString(*rle), "5n02SO");
  EXPECT_TRUE(CheckRle(*rle).ok());
  EXPECT_EQ(RleArea(*rle), 31);
}

TEST(RleTest, RefusesOverrunAndMalformedStrings) {
  absl::StatusOr<Rle> rle = RleFromString("25", 2, 2);  // 2 + 5 runs on 4 pixels.
  ASSERT_TRUE(rle.ok());
  absl::Status status = CheckRle(*rle);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("sum to 7"), std::string::npos) << status;
  EXPECT_FALSE(RleFromString("2\x7f", 2, 2).ok());  // Outside the alphabet.
  EXPECT_FALSE(RleFromString("n", 2, 2).ok());      // Ends inside a number.
}

TEST(RleTest, MaskRoundTripsAndBoxIsTight) {
  const int h = 5, w = 7;
  std::vector<uint8_t> mask(h * w, 0);
  for (int y = 1; y <= 3; ++y) {
    for (int x = 2; x <= 5; ++x) mask[y * w + x] = 1;
  }
  const Rle rle = RleFromMask(mask.data(), h, w);
  EXPECT_TRUE(CheckRle(rle).ok());
  std::vector<uint8_t> back(h * w, 0);
  DecodeRleInto(rle, back.data());
  EXPECT_EQ(back, mask);
  double box[4];
  RleBox(rle, box);
  EXPECT_EQ(box[0], 2);
  EXPECT_EQ(box[1], 1);
  EXPECT_EQ(box[2], 4);
  EXPECT_EQ(box[3], 3);
  absl::StatusOr<Rle> again = RleFromString(RleToString(rle), h, w);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->counts, rle.counts);
}

TEST(RleTest, PolygonCoversItsInteriorAndStaysInside) {
  // A 10 × 6 rectangle from (2, 3): COCO fills the pixels whose centres are inside.
  const Rle rle = RleFromPolygon({2, 3, 12, 3, 12, 9, 2, 9}, 16, 16);
  ASSERT_TRUE(CheckRle(rle).ok());
  double box[4];
  RleBox(rle, box);
  EXPECT_GE(box[0], 2);
  EXPECT_GE(box[1], 3);
  EXPECT_LE(box[0] + box[2], 13);
  EXPECT_LE(box[1] + box[3], 10);
  EXPECT_GE(RleArea(rle), 10 * 6 - 16);
  EXPECT_LE(RleArea(rle), 11 * 7);
  // A polygon wholly outside the canvas rasterises to nothing, not out of bounds.
  const Rle outside = RleFromPolygon({-50, -50, -40, -50, -40, -40}, 8, 8);
  EXPECT_TRUE(CheckRle(outside).ok());
  EXPECT_EQ(RleArea(outside), 0);
}

}  // namespace
}  // namespace flowloader::detection
