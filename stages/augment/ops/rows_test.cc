// rows_test: the ops' two shortcuts for the eager path (python/internal/eager.cc) write
// exactly what Apply writes. Op::PointTables: the per-channel tables (composed from the
// image's value counts where the op needs them) map each value to Apply's. Op::ApplyRows:
// the nearest warps written straight between Pillow-style rows (RGB pixels of 4 bytes,
// the fourth 255; L pixels of 1) give Apply's pixels, and their fill, on odd sizes, 1x1
// included; they refuse (writing nothing) what they do not do.
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/ops/view_program.h"
#include "stages/augment/testing/op_test_util.h"

namespace flowloader::augment {
namespace {

using testing::MakeOp;

// Noise is an image whose values cover few levels in one channel (equalize's and
// autocontrast's tables then differ from the identity) and all levels in the others.
Image Noise(int width, int height, std::mt19937& gen, bool grey) {
  Image img;
  img.Resize(width, height, 3);
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    img.pixels[i] = static_cast<uint8_t>(gen());
    img.pixels[i + 1] = grey ? img.pixels[i] : static_cast<uint8_t>(40 + gen() % 90);
    img.pixels[i + 2] = grey ? img.pixels[i] : static_cast<uint8_t>(gen());
  }
  return img;
}

absl::Status ApplyTo(const Op& op, const OpParams& params, Image* img) {
  Image spare;
  OpImage image;
  image.rgb = img;
  image.spare = &spare;
  return op.Apply(params, image);
}

// Counts of each channel's values (Image.histogram).
void Count(const Image& img, Op::Histogram& h) {
  for (auto& c : h) {
    for (uint32_t& v : c) v = 0;
  }
  for (size_t i = 0; i < img.pixels.size(); ++i) ++h[i % 3][img.pixels[i]];
}

// KeepExtremes keeps each channel's lowest and highest counted value (as an
// `extremes_only` count may give them), the others 0.
void KeepExtremes(Op::Histogram& h) {
  for (auto& c : h) {
    int lo = 256, hi = -1;
    for (int v = 0; v < 256; ++v) {
      if (c[v] == 0) continue;
      lo = lo == 256 ? v : lo;
      hi = v;
    }
    for (int v = 0; v < 256; ++v) c[v] = v == lo || v == hi ? 1 : 0;
  }
}

TEST(RowsTest, PointTablesMapEachValueAsApplyDoes) {
  const char* texts[] = {"random_posterize(bits=3, p=1)", "random_posterize(bits=0, p=1)",
                         "random_solarize(threshold=100.5, p=1)",
                         "random_solarize(threshold=0, p=1)", "random_invert(p=1)",
                         "random_equalize(p=1)", "random_autocontrast(p=1)",
                         "trivial_augment_wide()"};
  std::mt19937 gen(3);
  for (const char* text : texts) {
    std::unique_ptr<Op> op = MakeOp(text);
    int tabled = 0;
    for (int k = 0; k < 60; ++k) {
      const int w = 1 + static_cast<int>(gen() % 40), h = 1 + static_cast<int>(gen() % 30);
      const Image src = Noise(w, h, gen, k % 3 == 0);
      SampleRng rng(5, 0, static_cast<uint64_t>(k), 0);
      OpParams params;
      op->Draw(w, h, rng, &params);
      uint8_t luts[3][256];
      const bool ok = op->PointTables(
          params, w, h,
          [&](Op::Histogram& counts, bool extremes_only) {
            Count(src, counts);
            if (extremes_only) KeepExtremes(counts);
          },
          luts);
      Image applied = src;
      ASSERT_TRUE(ApplyTo(*op, params, &applied).ok()) << text;
      if (!ok) continue;  // trivial_augment_wide's geometric and blending draws.
      ++tabled;
      Image mapped = src;
      for (size_t i = 0; i < mapped.pixels.size(); ++i) {
        mapped.pixels[i] = luts[i % 3][mapped.pixels[i]];
      }
      EXPECT_TRUE(mapped.pixels == applied.pixels) << text << " " << w << "x" << h;
    }
    EXPECT_GT(tabled, 10) << text;
  }
  uint8_t luts[3][256];
  OpParams none;
  EXPECT_FALSE(
      MakeOp("grayscale()")->PointTables(none, 4, 4, [](Op::Histogram&, bool) {}, luts));
}

// Rows holds a Pillow-style image: `bytes` of height rows, `bpp` bytes a pixel, and
// the row pointers.
struct Rows {
  std::vector<uint8_t> bytes;
  std::vector<uint8_t*> rows;
  RowImage image;
};

// ToRows: `ragged` spaces the rows unevenly (Pillow's images spanning arena blocks),
// else they follow each other.
Rows ToRows(const Image& img, int bpp, uint8_t unwritten, bool ragged = false) {
  Rows r;
  const size_t row_bytes = static_cast<size_t>(img.width) * bpp;
  r.bytes.assign((row_bytes + 8) * img.height, unwritten);
  size_t at = 0;
  for (int y = 0; y < img.height; ++y) {
    uint8_t* row = r.bytes.data() + at;
    at += row_bytes + (ragged ? 4 * (y % 3) : 0);
    r.rows.push_back(row);
    for (int x = 0; x < img.width && !img.pixels.empty(); ++x) {
      const uint8_t* p = img.pixels.data() + 3 * (static_cast<size_t>(y) * img.width + x);
      if (bpp == 1) {
        row[x] = p[0];
      } else {
        row[4 * x] = p[0], row[4 * x + 1] = p[1], row[4 * x + 2] = p[2], row[4 * x + 3] = 255;
      }
    }
  }
  r.image = RowImage{r.rows.data(), img.width, img.height, bpp};
  return r;
}

// Bytes is the rows' pixels, without the gaps between them.
std::vector<uint8_t> Bytes(const Rows& r) {
  std::vector<uint8_t> out;
  for (int y = 0; y < r.image.height; ++y) {
    out.insert(out.end(), r.rows[y], r.rows[y] + static_cast<size_t>(r.image.width) * r.image.bpp);
  }
  return out;
}

class RowsIsaTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { kernels::internal::SetPortableForTesting(GetParam()); }
  void TearDown() override { kernels::internal::SetPortableForTesting(false); }
};

TEST_P(RowsIsaTest, ApplyRowsWritesApplysPixels) {
  const char* texts[] = {
      "random_rotation(degrees=30)",
      "random_rotation(degrees=[170, 190], fill=[9, 80, 200])",
      "random_rotation(degrees=50, expand=true)",
      "random_affine(degrees=15, translate=[0.1, 0.1], scale=[0.9, 1.1], shear=5)",
      "random_affine(degrees=0, translate=[0.3, 0.2], fill=[1, 2, 3])",
      "random_affine(degrees=0, scale=[0.5, 2])",
      "random_affine(degrees=30, shear=[-10, 10, -20, 20], fill=77)",
      "trivial_augment_wide(fill=[10, 20, 30])",
      "trivial_augment_wide()",
  };
  std::mt19937 gen(11);
  for (const char* text : texts) {
    std::unique_ptr<Op> op = MakeOp(text);
    int written = 0;
    for (int k = 0; k < 80; ++k) {
      const int w = k == 0 ? 1 : 1 + static_cast<int>(gen() % 45);
      const int h = k == 0 ? 1 : 1 + static_cast<int>(gen() % 37);
      const bool grey = k % 4 == 1;
      const Image src = Noise(w, h, gen, grey);
      SampleRng rng(9, 0, static_cast<uint64_t>(k), 0);
      OpParams params;
      op->Draw(w, h, rng, &params);
      Image applied = src;
      ASSERT_TRUE(ApplyTo(*op, params, &applied).ok()) << text;
      const int bpp = grey ? 1 : 4;
      Rows in = ToRows(src, bpp, 0, /*ragged=*/k % 2 == 1);
      Image blank;
      blank.Resize(applied.width, applied.height, 3);
      Rows out = ToRows(blank, bpp, 0xA5);
      out.bytes.assign(out.bytes.size(), 0xA5);  // Unwritten: ApplyRows writes every byte.
      const std::vector<uint8_t> before = out.bytes;
      if (!op->ApplyRows(params, in.image, out.image)) {
        EXPECT_TRUE(out.bytes == before) << text << ": refused, yet wrote";
        continue;
      }
      ++written;
      Rows want = ToRows(applied, bpp, 0);
      EXPECT_TRUE(Bytes(out) == Bytes(want)) << text << " " << w << "x" << h << " bpp " << bpp;
    }
    // Bilinear trivial_augment_wide never takes rows; the others mostly do.
    EXPECT_GT(written, 10) << text;
  }
  // Not for another size, nor for bilinear.
  std::unique_ptr<Op> rotate = MakeOp("random_rotation(degrees=30)");
  OpParams angle;
  angle.Push(12.0);
  std::mt19937 g2(1);
  const Image src = Noise(8, 6, g2, false);
  Rows in = ToRows(src, 4, 0), out = ToRows(Noise(6, 8, g2, false), 4, 0);
  EXPECT_FALSE(rotate->ApplyRows(angle, in.image, out.image));
  Rows same = ToRows(src, 4, 0);
  EXPECT_FALSE(MakeOp("random_rotation(degrees=30, interpolation=bilinear)")
                   ->ApplyRows(angle, in.image, same.image));
  // A quarter turn of a square image is Image.rotate's transpose: Apply's own path.
  OpParams quarter;
  quarter.Push(90.0);
  const Image square = Noise(5, 5, g2, false);
  Rows sq_in = ToRows(square, 4, 0), sq_out = ToRows(square, 4, 0);
  EXPECT_FALSE(rotate->ApplyRows(quarter, sq_in.image, sq_out.image));
}

// Nearest warps of images larger than the engine's tiles (8 x 256, or 256 x 16 where the
// map is steep: more than 45° from upright), at angles on both sides of 45° and 135°,
// with widths that leave every remainder of the 16- and 8-pixel steps, rows evenly
// spaced (the 32-bit offsets) and not (the row pointers), against Apply.
TEST_P(RowsIsaTest, LargeNearestWarpsAtEveryAngle) {
  std::mt19937 gen(29);
  const std::pair<int, int> sizes[] = {{300, 270}, {523, 97}, {97, 530}, {263, 263}};
  const double angles[] = {3, 30, 44.9, 45.1, 60, 89, 91, 135.5, 200, 301};
  int k = 0;
  for (const auto& [w, h] : sizes) {
    const Image src = Noise(w, h, gen, false);
    for (const double a : angles) {
      const std::string rotate = "random_rotation(degrees=[" + std::to_string(a) + ", " +
                                 std::to_string(a) + "], fill=[3, 4, 5])";
      const std::string affine = "random_affine(degrees=[" + std::to_string(a) + ", " +
                                 std::to_string(a) + "], scale=[0.8, 1.3], shear=[-9, 9, -9, 9])";
      for (const std::string& text : {rotate, affine}) {
        ++k;
        std::unique_ptr<Op> op = MakeOp(text);
        SampleRng rng(3, 0, static_cast<uint64_t>(k), 0);
        OpParams params;
        op->Draw(w, h, rng, &params);
        Image applied = src;
        ASSERT_TRUE(ApplyTo(*op, params, &applied).ok()) << text;
        Rows in = ToRows(src, 4, 0, /*ragged=*/k % 3 == 0);
        Image blank;
        blank.Resize(applied.width, applied.height, 3);
        Rows out = ToRows(blank, 4, 0xA5);
        ASSERT_TRUE(op->ApplyRows(params, in.image, out.image)) << text;
        Rows want = ToRows(applied, 4, 0);
        EXPECT_TRUE(Bytes(out) == Bytes(want)) << text << " " << w << "x" << h;
      }
    }
  }
}

// The AVX-512 engine where the CPU has it (false), and the per-pixel engines (true).
INSTANTIATE_TEST_SUITE_P(Isa, RowsIsaTest, ::testing::Values(false, true));

}  // namespace
}  // namespace flowloader::augment
