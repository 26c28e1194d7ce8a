// test_util.cc: see test_util.h.
#include "stages/augment/testing/test_util.h"

#include <utility>

#include "gtest/gtest.h"

namespace flowloader::augment::testing {

std::unique_ptr<Transform> MakeTransform(const TransformOptions& options) {
  auto t = Transform::Create(options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(t).value() : nullptr;
}

TransformOptions Options(Mode mode, Layout layout, int image_size, int resize_size) {
  TransformOptions o;
  o.mode = mode;
  o.layout = layout;
  o.image_size = image_size;
  o.resize_size = resize_size;
  return o;
}

CropPlan FixedPlan(double x, double y, double w, double h, bool flip) {
  CropPlan p;
  p.region = RectF{x, y, w, h};
  p.clamp_to_region = true;
  p.flip = flip;
  return p;
}

decode::DecodedImage NoiseImage(int w, int h, uint32_t seed) {
  uint32_t s = seed * 747796405u + 1;
  return ImageOf(w, h, [&s](int, int, int) {
    s = s * 1664525u + 1013904223u;
    return s >> 24;
  });
}

}  // namespace flowloader::augment::testing
