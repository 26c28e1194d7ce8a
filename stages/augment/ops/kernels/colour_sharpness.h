// colour_sharpness.h: PIL's SMOOTH filter, which AdjustSharpness blends with,
// exposed for the test that checks the integer form against PIL's float
// arithmetic.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_SHARPNESS_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_SHARPNESS_H_

#include <cstdint>

namespace flowloader::augment::kernels::internal {

// SmoothLiteral is one value of PIL 9.4's ImagingFilter3x3
// (libImaging/Filter.c) with ImageFilter.SMOOTH (weights 1 1 1 / 1 5 1 / 1 1 1,
// scale 13, offset 0): the kernel divided by 13 in float, rows summed bottom to
// top, plus 0.5, clipped and truncated. `w` holds the 3 × 3 window top row
// first.
uint8_t SmoothLiteral(const uint8_t (&w)[9]);
// SmoothValue is the integer form AdjustSharpness uses: (sum + 6) / 13, where
// sum weighs the centre 5 and its eight neighbours 1. It equals SmoothLiteral
// for every window: the float error (< 1e-3) never reaches the nearest
// truncation boundary (1/26 away, since sum / 13 + 0.5 is never within 1/26 of
// an integer).
inline uint8_t SmoothValue(unsigned sum) { return static_cast<uint8_t>((sum + 6) / 13); }

}  // namespace flowloader::augment::kernels::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_SHARPNESS_H_
