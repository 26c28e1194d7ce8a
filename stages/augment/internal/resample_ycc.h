// resample_ycc.h: ResampleRgb's resize for an image decoded as JPEG's own Y, Cb and Cr
// planes (decode::PixelFormat::kYcc), with the colour conversion done at the output's
// size.
//
// Each plane is resized on its own with ResampleRgb's filter (Pillow's antialiased
// bilinear, same tap tables, same 16-bit vertical pass), the chroma planes from their
// stored (usually half) resolution straight to the output size, so chroma is never
// upsampled to the decoded size first. Then, per output pixel, JFIF YCbCr -> RGB with
// libjpeg's coefficients, rounded half up to 8 bits and clamped, then flip,
// normalization and layout as ResampleRgb.
//
// Against decoding to RGB and resizing that (what PIL and torchvision do): chroma is
// filtered once from its samples instead of triangle-upsampled (libjpeg's fancy
// upsampling) and then filtered, and colour is converted after the resize instead of
// before, with one rounding instead of two. The outputs differ by a level or two where
// colour changes sharply; the benchmark's eval PSNR against torchvision reports it.
//
// Cost: the vertical pass reads 1.5 bytes per decoded pixel instead of 3 (4:2:0), and the
// horizontal pass is per plane: AVX-512's two-register permute gathers 16 outputs' taps
// at once (plane_kernels.h), other sets run a scalar loop with the same arithmetic.
// resize_bench, train, float CHW, 450x380: AVX-512 100 µs per image against ResampleRgb's
// 114 µs; the scalar loop ~350 µs against 132 µs for ResampleRgb with AVX2. The decoder's
// saving (no chroma upsampling or per-pixel colour conversion, ~10% of a loader's CPU)
// comes on top. The colour conversion runs 16 pixels per step for both layouts; uint8
// HWC is what a list with pixel ops (a T.Lambda) between the crop and normalize gets.
//
// Thread-safety: thread-local scratch, as ResampleRgb.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_YCC_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_YCC_H_

#include <cstdint>

#include "stages/augment/internal/resample.h"
#include "stages/core/image.h"

namespace flowloader::augment::internal {

// PlaneSpec is one plane's part of the resize: `box` of `src` (1 channel, in its own
// samples) to out_size², reading only inside the window.
struct PlaneSpec {
  ImageView src;
  RectF box;
  int win_x0 = 0;
  int win_x1 = 0;
  int win_y0 = 0;
  int win_y1 = 0;
};

// YccSpec: planes Y, Cb, Cr, in that order.
struct YccSpec {
  PlaneSpec planes[3];
  int out_size = 0;
  bool flip = false;
};

// YccResampleIsFast says whether ResampleYcc beats decoding to RGB plus ResampleRgb
// with the kernel set in use: with AVX-512 (measured: +8.6% train, +6% eval loader
// throughput). With the scalar plane filter it loses (see Cost above).
bool YccResampleIsFast();

// ResampleYcc runs the resize and writes the output as ResampleRgb does. The spec must
// be valid (boxes inside their windows up to rounding, windows inside the planes).
void ResampleYcc(const YccSpec& spec, const OutputSpec& out);

// ColourRowToUint8 is ResampleYcc's uint8 output of one row: the filtered Y, Cb and Cr
// values (n each) to n interleaved RGB pixels at d (mirrored when flip), with
// ColourFloat's arithmetic (colour_kernels.h), 16 pixels per step with AVX-512 (when
// avx512: only where the CPU runs it) or SSE4.1, the same bits either way.
void ColourRowToUint8(const float* y, const float* cb, const float* cr, int n, bool flip,
                      bool avx512, uint8_t* d);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_YCC_H_
