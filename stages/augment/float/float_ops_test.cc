// float_ops_test.cc: properties of the float kernels that hold whatever torch computes
// (their parity with torchvision is python/tests/test_eager_float.py's): gathers move
// elements of every size exactly, resizes to the same size are the identity, a flat
// channel survives autocontrast, and the reflect-pad limit is one line.
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

template <typename E>
void CheckGather() {
  // 2 channels of 2 x 3: a flip of the columns, the middle row, and a fill column.
  const std::vector<E> in = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<int> xs = {2, 1, 0, -1};
  const std::vector<int> ys = {1};
  const E fill[2] = {E(100), E(200)};
  std::vector<E> out(2 * 4);
  GatherPlanes(in.data(), 2, 2, 3, sizeof(E), xs.data(), 4, ys.data(), 1, fill, out.data());
  EXPECT_EQ(out, (std::vector<E>{6, 5, 4, 100, 12, 11, 10, 200}));
}

TEST(GatherPlanes, MovesElementsOfEverySize) {
  CheckGather<uint8_t>();
  CheckGather<uint16_t>();
  CheckGather<float>();
  CheckGather<double>();
}

TEST(Resize, SameSizeIsTheImage) {
  std::vector<float> in(3 * 5 * 7);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 11) / 10.0f;
  for (Mode mode : {Mode::kNearest, Mode::kBilinear, Mode::kBicubic}) {
    std::vector<float> out(in.size());
    Resize(Chw<const float>{in.data(), 3, 5, 7}, Chw<float>{out.data(), 3, 5, 7}, mode);
    EXPECT_EQ(out, in);
  }
}

TEST(Resize, ReadsACropInPlace) {
  // The 2 x 2 crop at (1, 1) of a 4 x 4 plane, strided, against the same crop dense.
  std::vector<double> big(16), dense = {5, 6, 9, 10};
  for (int i = 0; i < 16; ++i) big[i] = i;
  Chw<const double> crop{big.data() + 5, 1, 2, 2};
  crop.row_stride = 4;
  crop.plane_stride = 16;
  std::vector<double> a(9), b(9);
  Resize(crop, Chw<double>{a.data(), 1, 3, 3}, Mode::kBilinear);
  Resize(Chw<const double>{dense.data(), 1, 2, 2}, Chw<double>{b.data(), 1, 3, 3},
         Mode::kBilinear);
  EXPECT_EQ(a, b);
  ResizeAntialias(crop, Chw<double>{a.data(), 1, 3, 3}, Mode::kBicubic);
  ResizeAntialias(Chw<const double>{dense.data(), 1, 2, 2}, Chw<double>{b.data(), 1, 3, 3},
                  Mode::kBicubic);
  EXPECT_EQ(a, b);
}

TEST(Autocontrast, KeepsAFlatChannelAndStretchesTheOther) {
  const std::vector<float> in = {0.25f, 0.25f, 0.25f, 0.25f, 0.2f, 0.4f, 0.6f, 0.2f};
  std::vector<float> out(in.size());
  Autocontrast(Chw<const float>{in.data(), 2, 2, 2}, Chw<float>{out.data(), 2, 2, 2});
  EXPECT_EQ(out[0], 0.25f);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_EQ(out[6], 1.0f);
}

TEST(Autocontrast, AChannelWithANanIsOnlyClamped) {
  // torch's amin/amax of a plane holding a NaN are NaN, so torchvision's scale is not
  // finite and the channel is clamped to [0, 1], not stretched by its other pixels.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {0.2f, nan, 0.6f, 1.5f, 0.2f, 0.4f, 0.6f, 0.2f};
  std::vector<float> out(in.size());
  Autocontrast(Chw<const float>{in.data(), 2, 2, 2}, Chw<float>{out.data(), 2, 2, 2});
  EXPECT_EQ(out[0], 0.2f);
  EXPECT_NE(out[1], out[1]);
  EXPECT_EQ(out[2], 0.6f);
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[6], 1.0f);  // The other channel is still stretched.
}

TEST(GaussianBlur, ReflectPadLimitIsOneLine) {
  EXPECT_EQ(ReflectPadError(5, 5, 3, 3), "");
  const std::string error = ReflectPadError(7, 3, 10, 3);
  EXPECT_NE(error.find("kernel_size [7, 3]"), std::string::npos);
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace flowloader::augment::floats
