// pillow_resample.h: Pillow 9's Image.resize on 8-bit RGB, with its exact arithmetic,
// for every filter torchvision's InterpolationMode names on PIL images.
//
// Bilinear and bicubic are ImagingResample: per axis, taps from the filter centred at
// box0 + (i + 0.5) * scale with support × max(scale, 1), normalized to sum 1 in double,
// then 22-bit fixed point (PRECISION_BITS = 32 - 8 - 2); the horizontal pass runs first
// over the rows the vertical pass reads and rounds to 8 bits, then the vertical pass.
// Nearest is Pillow's affine nearest (ImagingScaleAffine): source column
// int(box0 + scale * 0.5 + i * scale), accumulated in double as Pillow does.
// The filter reads pixels outside `box` up to the image's edge, as Pillow's resize with a
// box does; torchvision crops first (F.resized_crop), so callers pass the crop itself.
//
// Where the CPU has AVX2, both passes run pillow_kernels.h's SIMD kernels (the horizontal
// one with vpdpwssd where it also has AVX-512 VNNI and VL, with vpdpbusd where it also
// has BW and VBMI), with the same integer sums
// (so the same bytes) as the plain passes, which run elsewhere.
//
// Thread-safety: safe from any number of threads (its intermediate image, row buffers
// and tap tables are thread-local).
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_RESAMPLE_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_RESAMPLE_H_

#include <vector>

#include "stages/augment/transform.h"
#include "stages/core/image.h"

namespace flowloader::augment::internal {

// PillowResample resizes `box` of `src` (3 channels) to out_width × out_height into
// `dst` (resized to fit), mirrored horizontally when `flip`.
void PillowResample(const ImageView& src, const RectF& box, int out_width, int out_height,
                    Interpolation filter, bool flip, Image* dst);

// PillowResampleWindow writes columns [x, x + width) and rows [y, y + height) of what
// PillowResample(src, all of src, out_width, out_height, filter, no flip) writes, the
// same bytes, computing only those: resize-then-crop (scale_jitter then fixed_size_crop)
// at the cost of the crop.
void PillowResampleWindow(const ImageView& src, int out_width, int out_height,
                          Interpolation filter, int x, int y, int width, int height,
                          Image* dst);

// PillowFilter names Pillow's other resampling filters (Image.BOX, HAMMING, LANCZOS),
// torchvision's InterpolationMode.BOX / HAMMING / LANCZOS on PIL images; the loader's
// Interpolation has the three its fused paths also take.
enum class PillowFilter { kBox, kHamming, kLanczos };

// PillowResampleFilter is PillowResample with one of those filters (Resample.c's
// box_filter, hamming_filter and lanczos_filter, supports 0.5, 1 and 3, the same
// passes), no flip.
void PillowResampleFilter(const ImageView& src, const RectF& box, int out_width,
                          int out_height, PillowFilter filter, Image* dst);

// PillowTaps is one axis's resampling taps: per output, the first source pixel and the
// tap count (bounds: xmin, count), and ksize weights in 22-bit fixed point (k: ksize per
// output, 0 past its count).
struct PillowTaps {
  int ksize = 0;
  std::vector<int> bounds;
  std::vector<int> k;
};

// PrecomputePillowTaps is Resample.c's precompute_coeffs + normalize_coeffs_8bpc for the
// source span [in0, in1) of an axis of in_size pixels resized to out_size (bicubic, else
// bilinear): the same weights (SSE4.1, several at a time). `t`'s storage is reused.
void PrecomputePillowTaps(int in_size, double in0, double in1, int out_size, bool bicubic,
                          PillowTaps* t);

// SetPillowScalarForTesting(true) makes every later call, in every thread, take the
// plain passes (what the SIMD ones are compared with); false goes back.
void SetPillowScalarForTesting(bool scalar);

// SetPillowNoVnniForTesting(true) keeps the SIMD passes to AVX2 where the CPU has AVX-512
// VNNI (the horizontal pass's vpdpwssd kernels); false goes back.
void SetPillowNoVnniForTesting(bool no_vnni);

// SetPillowNoBusdForTesting(true) keeps the horizontal pass to its vpdpwssd kernels where
// the CPU has its vpdpbusd one (AVX-512 VNNI, VL, BW and VBMI); false goes back.
void SetPillowNoBusdForTesting(bool no_busd);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_RESAMPLE_H_
