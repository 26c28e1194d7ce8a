// test_util.cc: see test_util.h.
#include "stages/augment/testing/test_util.h"

#include <algorithm>
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

std::vector<uint8_t> ApplyU8(const Transform& t, const decode::DecodedImage& img,
                             const CropPlan& plan) {
  std::vector<uint8_t> out(t.OutputBytes());
  const absl::Status s = t.Apply(img, plan, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

decode::DecodedImage NoiseImage(int w, int h, uint32_t seed) {
  uint32_t s = seed * 747796405u + 1;
  return ImageOf(w, h, [&s](int, int, int) {
    s = s * 1664525u + 1013904223u;
    return s >> 24;
  });
}

decode::DecodedImage YccPlanesOf(const decode::DecodedImage& rgb, int step_x, int step_y,
                                 int phase_y) {
  const Image& src = rgb.image;
  decode::DecodedImage d;
  d.format = decode::PixelFormat::kYcc;
  d.covered = rgb.covered;
  d.scale_x = rgb.scale_x;
  d.scale_y = rgb.scale_y;
  decode::ChromaPlanes& c = d.chroma;
  c.step_x = step_x;
  c.step_y = step_y;
  c.phase_y = phase_y;
  c.width = (src.width + step_x - 1) / step_x;
  c.height = (src.height + phase_y + step_y - 1) / step_y;
  const size_t luma = static_cast<size_t>(src.width) * src.height;
  const size_t plane = static_cast<size_t>(c.width) * c.height;
  d.image.width = src.width;
  d.image.height = src.height;
  d.image.channels = 1;
  d.image.pixels.resize(luma + 2 * plane);
  for (int y = 0; y < src.height; ++y) {
    for (int x = 0; x < src.width; ++x) {
      d.image.pixels[static_cast<size_t>(y) * src.width + x] = src.pixels[(y * src.stride()) + 3 * x];
    }
  }
  for (int j = 0; j < c.height; ++j) {
    const int y = std::min(std::max(j * step_y - phase_y, 0), src.height - 1);
    for (int i = 0; i < c.width; ++i) {
      const uint8_t* px = &src.pixels[y * src.stride() + 3 * (i * step_x)];
      d.image.pixels[luma + static_cast<size_t>(j) * c.width + i] = px[1];
      d.image.pixels[luma + plane + static_cast<size_t>(j) * c.width + i] = px[2];
    }
  }
  return d;
}

}  // namespace flowloader::augment::testing
