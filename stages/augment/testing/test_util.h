// test_util.h: helpers shared by the augment tests: a checked Transform factory, options
// and fixed crop plans, and synthetic decoded images.
//
// Thread-safety: the functions are stateless; call them from any thread.
#ifndef FLOWLOADER_STAGES_AUGMENT_TESTING_TEST_UTIL_H_
#define FLOWLOADER_STAGES_AUGMENT_TESTING_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "stages/augment/transform.h"
#include "stages/core/image.h"
#include "stages/decode/decoder.h"

namespace flowloader::augment::testing {

// MakeTransform returns Transform::Create(options); if that fails it fails the current
// test (EXPECT, with the status) and returns nullptr.
std::unique_ptr<Transform> MakeTransform(const TransformOptions& options);

// Options is TransformOptions{} with mode, layout, image_size and resize_size set (the
// last two default to TransformOptions' own defaults).
TransformOptions Options(Mode mode, Layout layout, int image_size = 224, int resize_size = 0);

// FixedPlan is a train-style plan (clamped to its region) of the box (x, y, w, h), in
// source pixels, flipped or not.
CropPlan FixedPlan(double x, double y, double w, double h, bool flip);

// ImageOf is a w × h RGB image whose byte (x, y, c) is value(x, y, c), covering the whole
// image at scale 1. `value` is called once per byte in memory order (row by row, pixel by
// pixel, channel by channel), so a stateful `value` (a noise generator) is deterministic.
template <class Fn>
decode::DecodedImage ImageOf(int w, int h, Fn&& value) {
  decode::DecodedImage d;
  d.image.Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    uint8_t* row = d.image.Row(y);
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) row[3 * x + c] = static_cast<uint8_t>(value(x, y, c));
    }
  }
  d.covered = RectF{0, 0, static_cast<double>(w), static_cast<double>(h)};
  return d;
}

// ApplyU8 runs t.Apply into a fresh buffer of t.OutputBytes() bytes and returns it; a
// failed Apply fails the current test (EXPECT, with the status). For uint8 layouts,
// or to compare float outputs byte for byte.
std::vector<uint8_t> ApplyU8(const Transform& t, const decode::DecodedImage& img,
                             const CropPlan& plan);

// NoiseImage is a w × h RGB image of uniform 8-bit noise, the same for the same seed.
decode::DecodedImage NoiseImage(int w, int h, uint32_t seed);

// YccPlanesOf is a decode::PixelFormat::kYcc image with the same geometry as `rgb`
// (covered, scale) and the given chroma layout, whose Y plane is rgb's red channel and
// whose chroma sample (i, j) is green (Cb) and blue (Cr) of the pixel at its top-left
// corner (clamped to the image): arbitrary bytes, for tests where only the geometry and
// the arithmetic matter.
decode::DecodedImage YccPlanesOf(const decode::DecodedImage& rgb, int step_x, int step_y,
                                 int phase_y);

}  // namespace flowloader::augment::testing

#endif  // FLOWLOADER_STAGES_AUGMENT_TESTING_TEST_UTIL_H_
