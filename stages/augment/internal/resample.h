// resample.h: Pillow's antialiased bilinear resize of an RGB box, fused with flip,
// rounding to 8 bits, normalization and the output layout.
//
// The filter is Pillow 9's ImagingResample (what torchvision 0.14 runs on PIL images):
// per output pixel i along an axis, centre = box0 + (i + 0.5) * scale, support =
// max(scale, 1) (bilinear support 1), taps clamped to the readable window and
// normalized to sum to 1. Pillow runs the horizontal pass first and rounds its result
// to 8 bits; here nothing is rounded between the passes, so the output differs from
// Pillow's by at most one level (about 15% of bytes on noise, no bias; resize_pil_test).
//
// Order and arithmetic (chosen by measurement, see resize_bench):
// - Vertical pass first, one output row at a time, on the source's 8-bit rows, in 16-bit
//   fixed point (14 fraction bits, pmaddwd: two source rows per instruction). Its float
//   row stays in L1 for the horizontal pass, and vertical-first keeps the costly
//   per-pixel gather of the horizontal pass to out_size rows instead of every source row.
// - Horizontal pass in float, one 4-wide multiply-add per tap and pixel (R, G, B and a
//   don't-care lane), fused with rounding, flip, normalization and the layout: four
//   pixels are transposed in registers into planar R, G, B vectors.
// - Both axes at scale 1 on an aligned box (a pure crop) skip both passes: bytes are
//   normalized or copied straight from the source.
// - Tap tables are cached per thread by geometry and rebuilt only when it changes.
// - Three kernel sets (ResampleIsa), picked once per process from the CPU: SSE4.1 (the
//   x86-64-v2 baseline), AVX2 and AVX-512, holding 1, 2 or 4 pixels per register in the
//   horizontal pass and 16 or 32 values per step in the vertical one. They do the same
//   operations in the same order on each value (no FMA), so their outputs are
//   bit-identical (resample_isa_test). The kernels are written once, in
//   resample_kernels.h, and compiled per set (resample.cc, resample_avx2.cc,
//   resample_avx512.cc). Train, float, 450x380 -> 224² on a Zen 5 core:
//   SSE4.1 85 µs, AVX2 60 µs, AVX-512 52 µs (resize_bench).
// - Output rows that all start on a vector boundary (a 64-byte aligned batch slot, and
//   an output side that is a multiple of the vector's floats, or of 16 for uint8) are
//   written with non-temporal stores, uint8 rows through an L1 staging row: a batch is
//   far larger than the caches, and streaming skips reading each destination line
//   before overwriting it (float train 99 -> 82 µs with SSE4.1,
//   69 -> 50 µs with AVX-512, writing 64 slots in turn). The writes are fenced before
//   ResampleRgb returns.
//
// Thread-safety: ResampleRgb uses thread-local scratch (tap tables, one row), so
// concurrent calls from different threads are safe; no heap allocation after a thread's
// first calls at a given size. The kernel set is process-wide (an atomic, set only by
// tests and resize_bench).
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_H_

#include <cstdint>
#include <vector>

#include "stages/core/image.h"

namespace flowloader::augment::internal {

// AxisFilter is the tap table along one axis: output i reads inputs
// [first[i], first[i] + taps) with weights[i * taps + k]. Every output has the same
// tap count (shorter windows are padded with zero weights, shifted to stay inside the
// readable window), so the inner loops have a fixed trip count.
struct AxisFilter {
  int out_size = 0;
  int taps = 0;
  int lo = 0;  // Lowest input index read by any output.
  int hi = 0;  // One past the highest.
  bool identity = false;  // Output i is exactly input lo + i (scale 1, aligned box).
  std::vector<int> first;
  std::vector<float> weights;
};

// FilterKey identifies an AxisFilter by BuildAxisFilter's arguments, so a thread resizing
// the same geometry again (every eval image of one size, every train crop of one size)
// skips rebuilding it.
struct FilterKey {
  double origin = 0;
  double length = 0;
  int out_size = 0;
  int win_lo = 0;
  int win_hi = 0;

  bool operator==(const FilterKey& o) const {
    return origin == o.origin && length == o.length && out_size == o.out_size &&
           win_lo == o.win_lo && win_hi == o.win_hi;
  }
};

// BuildAxisFilter fills `filter` for a box [origin, origin + length) resized to
// out_size samples, reading only inputs in [win_lo, win_hi). Requires length > 0,
// out_size > 0, win_lo < win_hi.
void BuildAxisFilter(double origin, double length, int out_size, int win_lo, int win_hi,
                     AxisFilter* filter);

// BuildAxisFilterScalarForTesting is BuildAxisFilter without the kernel sets' weight
// passes, one output and one tap at a time: the reference they must match bit for bit.
void BuildAxisFilterScalarForTesting(double origin, double length, int out_size,
                                     int win_lo, int win_hi, AxisFilter* filter);

// ResampleSpec says what to resize: `box` of `src` (in src pixels) to out_size²,
// reading only src pixels inside the window [win_x0, win_x1) × [win_y0, win_y1).
struct ResampleSpec {
  ImageView src;  // 3 channels.
  RectF box;
  int win_x0 = 0;
  int win_x1 = 0;
  int win_y0 = 0;
  int win_y1 = 0;
  int out_size = 0;
  bool flip = false;  // Mirror the output's columns.
};

// OutputSpec says where and how to write: kFloatCHW writes
// q * scale[c] + offset[c] (q the 8-bit rounded value) to 3 planes of out_size²
// floats; kUint8HWC writes q interleaved.
struct OutputSpec {
  enum class Kind { kFloatCHW, kUint8HWC };
  Kind kind = Kind::kUint8HWC;
  float scale[3] = {1, 1, 1};
  float offset[3] = {0, 0, 0};
  void* dst = nullptr;
};

// ResampleIsa names a set of ResampleRgb's kernels. Every set gives bit-identical
// output; they differ only in speed.
enum class ResampleIsa {
  kSse41 = 0,   // The baseline (x86-64-v2): 1 pixel per register.
  kAvx2 = 1,    // 2 pixels per register.
  kAvx512 = 2,  // AVX-512F + BW: 4 pixels per register.
};

// DetectedResampleIsa is the set ResampleRgb uses on this CPU unless a test forces one,
// chosen once: the widest it runs, except that CPUs whose clock drops under 512-bit
// float work (Skylake-SP to Cooper Lake) get kAvx2.
ResampleIsa DetectedResampleIsa();

// ResampleIsaSupported says whether this CPU (and OS) can run `isa`.
bool ResampleIsaSupported(ResampleIsa isa);

// SetResampleIsaForTesting makes every later ResampleRgb call, in every thread, use `isa`,
// so that tests and resize_bench can compare the sets. Returns false, changing nothing,
// if this CPU cannot run it. ResetResampleIsaForTesting goes back to the detected set.
// Not for production code.
bool SetResampleIsaForTesting(ResampleIsa isa);
void ResetResampleIsaForTesting();

// ActiveResampleIsa is the set in use now: the forced one, else the detected one.
ResampleIsa ActiveResampleIsa();

// Vertical weights are 16-bit fixed point with this many fraction bits: pmaddwd takes
// int16 operands, and 1.0 (16384) must fit.
constexpr int kVerticalBits = 14;

// QuantizeVerticalPairs turns each output's float taps into int16 weights whose sum is
// exactly 2^kVerticalBits (so a constant image stays exactly constant), packed as
// (w[2p], w[2p+1]) pairs in one int32 for pmaddwd, *n_pairs per output (an odd last tap
// pairs with a zero weight).
void QuantizeVerticalPairs(const AxisFilter& f, std::vector<int32_t>* pairs, int* n_pairs);

// ResampleRgb runs the resize and writes the output. The spec must be valid (box inside
// the window up to rounding, window inside src, src 3 channels); callers check.
void ResampleRgb(const ResampleSpec& spec, const OutputSpec& out);

}  // namespace flowloader::augment::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_RESAMPLE_H_
