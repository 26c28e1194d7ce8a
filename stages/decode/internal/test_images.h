// test_images.h: deterministic synthetic images and image comparisons for the tests.
//
// The "photo-like" image has what matters to a JPEG codec: smooth gradients (low
// frequencies), texture, hard edges and noise, so chroma subsampling, DCT scaling and
// cropping errors show up, while tests stay free of checked-in binaries.
//
// Thread-safety: free functions on values.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_TEST_IMAGES_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_TEST_IMAGES_H_

#include <cstdint>

#include "stages/core/image.h"

namespace flowloader::decode::testing {

// PhotoLike returns a width × height image with `channels` (1..4; the 4th is an alpha
// ramp) that depends only on the arguments.
Image PhotoLike(int width, int height, int channels, uint64_t seed = 1);

// ToRgb expands 1- or 2-channel images to RGB and drops a 2nd/4th (alpha) channel.
Image ToRgb(const Image& image);

// Psnr is the peak signal-to-noise ratio in dB of two same-shaped images (+inf if equal).
double Psnr(const ImageView& a, const ImageView& b);

// MaxAbsDiff is the largest per-sample difference of two same-shaped images.
int MaxAbsDiff(const ImageView& a, const ImageView& b);

// Crop copies [x, x + w) × [y, y + h) of `image`.
Image Crop(const ImageView& image, int x, int y, int w, int h);

// AreaResize resamples `image` to out_w × out_h, each output pixel the area-weighted
// mean of the input box it covers under the mapping (u, v) = (x · scale_x, y · scale_y),
// clipped to the image: what an ideal DCT downscale approximates.
Image AreaResize(const ImageView& image, int out_w, int out_h, double scale_x,
                 double scale_y);

}  // namespace flowloader::decode::testing

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_TEST_IMAGES_H_
