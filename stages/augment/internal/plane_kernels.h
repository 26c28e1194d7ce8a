// plane_kernels.h: the horizontal pass of ResampleYcc (resample_ycc.h) on one plane,
// as tap tables and the AVX-512 kernel that uses them.
//
// One plane's row is a run of floats; output x is sum_k weights[x * taps + k] *
// row[first[x] + k], multiplied and added in that order (no FMA), so the AVX-512 kernel
// and resample_ycc.cc's scalar loop give the same bits. The kernel takes 16 outputs at a
// time (a group). Where the group's taps all fall within 32 consecutive floats (a
// downscale up to about 1.7x), it loads them as two registers and, per tap, gathers the
// 16 inputs with one two-register permute (vpermt2ps), then multiplies and adds. Where
// they fall within 64 (up to about 3.5x), it loads four registers and does two permutes
// and a blend per tap. Steeper groups, and the last n % 16 outputs, are left to the
// scalar loop.
//
// The kernel lives in resample_ycc_avx512.cc, compiled with AVX-512 flags like
// resample_avx512.cc, and is called only where the CPU runs AVX-512.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_PLANE_KERNELS_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_PLANE_KERNELS_H_

#include <cstdint>

namespace flowloader::augment::internal {

// Outputs per group of the AVX-512 kernel, and the span of inputs a group may read.
constexpr int kPlaneGroup = 16;
constexpr int kPlaneGroupSpan = 64;

// PlaneTaps is one plane's horizontal filter, laid out for the kernels.
struct PlaneTaps {
  int n = 0;                     // Outputs.
  int taps = 0;
  const int* first = nullptr;    // Per output: its first tap's index in the row.
  const float* weights = nullptr;  // Per output, per tap.
  // Per group g of kPlaneGroup outputs (n / kPlaneGroup of them):
  // The inputs its taps span: 1 within 32, 2 within 64 (kPlaneGroupSpan), 0 more.
  const uint8_t* fits = nullptr;
  const int* base = nullptr;            // first[kPlaneGroup * g].
  const int32_t* lanes = nullptr;       // first[x] - base, per output (kPlaneGroup per g).
  const float* group_weights = nullptr;  // Tap-major: [g][k][lane].
};

// HorizontalPlaneAvx512 writes out[x] for every x in a group that fits. `row` must
// have kPlaneGroupSpan readable floats from every fitting group's base.
void HorizontalPlaneAvx512(const float* row, const PlaneTaps& t, float* out);

// HorizontalPlanesAvx512 is HorizontalPlaneAvx512 on two rows filtered alike (Cb and Cr
// of one output row), sharing the index and weight loads; the same bits as two calls.
void HorizontalPlanesAvx512(const float* row_a, const float* row_b, const PlaneTaps& t,
                           float* out_a, float* out_b);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_PLANE_KERNELS_H_
