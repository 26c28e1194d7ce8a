// colour_internal.h: the pieces colour.cc, colour_hue.cc and
// colour_sharpness.cc share: PIL's Image.blend per value and over a span, and a
// per-channel LUT pass.
//
// Thread-safety: pure functions; RowBuffer is one buffer per thread.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stages/core/image.h"

namespace flowloader::augment::kernels::internal {

// BlendValue is one value of PIL's ImagingBlend (libImaging/Blend.c) of image 1
// (`a`, ImageEnhance's degenerate) and image 2 (`b`, the image): a + alpha * (b
// - a) in float (alpha is a C float there: ImageEnhance's double factor rounds
// once), truncated; for alpha outside [0, 1] clipped to 0..255 first.
inline uint8_t BlendValue(int a, int b, float alpha) {
  const float v = static_cast<float>(a) + alpha * static_cast<float>(b - a);
  if (alpha >= 0 && alpha <= 1) return static_cast<uint8_t>(v);
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

// BlendSpan writes out[i] = BlendValue(a[i], b[i], alpha) for n values (SSE4.1
// where compiled for it: the same float operations, 16 values at a time). `out`
// may be `b`.
void BlendSpan(const uint8_t* a, const uint8_t* b, uint8_t* out, size_t n, float alpha);

// ApplyLuts maps every value of the 3-channel image through its channel's table
// (PIL's Image.point with a 768-entry table, as ImageOps._lut builds it).
void ApplyLuts(Image& img, const uint8_t (&lut)[3][256]);
// ApplyLut maps every value through one table (the same for the three
// channels).
void ApplyLut(Image& img, const uint8_t (&lut)[256]);

// GreyValue is PIL's RGB -> L (libImaging/Convert.c, rgb2l: ITU-R 601-2 luma in
// 16-bit fixed point, rounded).
inline uint8_t GreyValue(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

// RowBuffer is a per-thread scratch buffer of at least n bytes: it grows to the
// largest row seen and is then reused, so the kernels allocate nothing once
// warm.
uint8_t* RowBuffer(int which, size_t n);

}  // namespace flowloader::augment::kernels::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_INTERNAL_H_
