// crop_math.h: torchvision 0.14's crop and resize arithmetic, reproduced exactly.
//
// RandomResizedCrop.get_params, Resize's output size for an int size and CenterCrop's
// offsets, including Python's round-half-to-even, so a plan agrees with torchvision's
// numbers given the same uniform draws. The draws come from SampleRng, not torch's
// generator, so the crops are distributed like torchvision's, not identical to them.
//
// Thread-safety: pure functions (RandomResizedCropBox advances only the rng it is given).
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_CROP_MATH_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_CROP_MATH_H_

#include "stages/core/rng.h"

namespace flowloader::augment::internal {

// IntBox is a crop in integer pixels, in torchvision's (top, left, height, width) terms.
struct IntBox {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// PyRound is Python 3's round() to an integer: halves go to the even neighbour. Results
// saturate at ±2^30 (Python's would grow; no image side comes near).
int PyRound(double x);

// RandomResizedCropBox is RandomResizedCrop.get_params for a width × height image: up to
// 10 attempts with area fraction U(scale_min, scale_max) and aspect ratio
// exp(U(log ratio_min, log ratio_max)), else the central crop with the ratio clamped.
IntBox RandomResizedCropBox(int width, int height, double scale_min, double scale_max,
                            double ratio_min, double ratio_max, SampleRng& rng);

// ResizeShorterSide is Resize(size)'s output size for an int `size`: the shorter side
// becomes `size`, the longer int(size * long / short) (truncated, as torchvision does),
// saturating at 2^30.
void ResizeShorterSide(int width, int height, int size, int* new_width, int* new_height);

// CenterCropOffset is CenterCrop's top (or left) offset: int(round((in - out) / 2.0)).
int CenterCropOffset(int in_size, int out_size);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_CROP_MATH_H_
