// pad_images_test: PadImages lays rows of different sizes out as one zero-padded tensor.
#include "stages/collate/pad_images.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

// Value is the test pattern of row r, channel c, pixel (y, x): never 0.
float Value(int64_t r, int64_t c, int64_t y, int64_t x) {
  return 1 + r * 1000 + c * 100 + y * 10 + x;
}

struct PadCase {
  bool chw;
  int64_t divisibility;
  std::vector<int64_t> sizes;  // N × 2.
  int64_t hb, wb;
  bool tight = false;  // Slots exactly Hb × Wb (else larger: the op list's bound).
};

class PadImagesTest : public ::testing::TestWithParam<PadCase> {};

TEST_P(PadImagesTest, PlacesEachImageTopLeftAndZerosTheRest) {
  const PadCase p = GetParam();
  const int64_t c = 3, n = static_cast<int64_t>(p.sizes.size() / 2);
  // Slots sized for a bound at least the batch's padded size (as the transforms stage
  // sizes them: the list's largest image, rounded up).
  const size_t slot = static_cast<size_t>((p.hb + (p.tight ? 0 : 3)) *
                                          (p.wb + (p.tight ? 0 : 5)) * c);
  std::vector<float> buffer(slot * static_cast<size_t>(n), -1.0f);
  for (int64_t r = 0; r < n; ++r) {  // Compact, at the start of each slot.
    const int64_t h = p.sizes[2 * r], w = p.sizes[2 * r + 1];
    float* row = buffer.data() + static_cast<size_t>(r) * slot;
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
          row[p.chw ? (ch * h + y) * w + x : (y * w + x) * c + ch] = Value(r, ch, y, x);
        }
      }
    }
  }
  PaddedImages images{buffer.data(), slot * sizeof(float), p.sizes, c, sizeof(float), p.chw};
  const std::vector<int64_t> shape = PadImages(images, p.divisibility);
  if (p.chw) {
    EXPECT_EQ(shape, (std::vector<int64_t>{n, c, p.hb, p.wb}));
  } else {
    EXPECT_EQ(shape, (std::vector<int64_t>{n, p.hb, p.wb, c}));
  }
  for (int64_t r = 0; r < n; ++r) {
    const int64_t h = p.sizes[2 * r], w = p.sizes[2 * r + 1];
    const float* row = buffer.data() + static_cast<size_t>(r * c * p.hb * p.wb);
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t y = 0; y < p.hb; ++y) {
        for (int64_t x = 0; x < p.wb; ++x) {
          const float got = row[p.chw ? (ch * p.hb + y) * p.wb + x : (y * p.wb + x) * c + ch];
          const float want = y < h && x < w ? Value(r, ch, y, x) : 0.0f;
          ASSERT_EQ(got, want) << "row " << r << " c " << ch << " y " << y << " x " << x;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, PadImagesTest,
    ::testing::Values(
        // Batch max exactly (0), portrait and landscape rows: Hb, Wb from different rows.
        PadCase{true, 0, {5, 7, 9, 4, 6, 6}, 9, 7},
        PadCase{false, 0, {5, 7, 9, 4, 6, 6}, 9, 7},
        // Rounded up to 4: 9 → 12, 7 → 8.
        PadCase{true, 4, {5, 7, 9, 4, 6, 6}, 12, 8},
        PadCase{false, 4, {5, 7, 9, 4, 6, 6}, 12, 8},
        // The first row the largest (its padded place is its own slot, moved in place).
        PadCase{true, 2, {9, 7, 3, 2}, 10, 8, /*tight=*/true},
        PadCase{false, 2, {3, 2, 9, 7}, 10, 8, /*tight=*/true},
        // Tiny rows beside a large one, tight and loose slots: rows whose padded place
        // starts before their slot and overlaps it (moved in place, no copy).
        PadCase{true, 0, {2, 3, 9, 9, 1, 1, 7, 2, 9, 1}, 9, 9},
        PadCase{false, 0, {2, 3, 9, 9, 1, 1, 7, 2, 9, 1}, 9, 9},
        PadCase{true, 0, {2, 3, 9, 9, 1, 1, 7, 2, 9, 1}, 9, 9, /*tight=*/true},
        PadCase{false, 3, {9, 9, 1, 1, 7, 2, 9, 1, 2, 3}, 9, 9, /*tight=*/true},
        // Already one size and divisible: nothing moves.
        PadCase{true, 4, {8, 8, 8, 8}, 8, 8, /*tight=*/true}));

TEST(PaddedSideTest, RoundsTheLargestUp) {
  EXPECT_EQ(PaddedSide({800, 1333, 1200}, 32), 1344);
  EXPECT_EQ(PaddedSide({800, 1333, 1200}, 0), 1333);
  EXPECT_EQ(PaddedSide({64}, 32), 64);
  EXPECT_EQ(PaddedSide({}, 32), 0);
}

}  // namespace
}  // namespace flowloader
