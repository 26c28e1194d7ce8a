// pillow_kernels.h: the SIMD passes of PillowResample (pillow_resample.h), Pillow's
// 22-bit fixed-point resample with the same integer sums, for 8-bit RGB.
//
// Horizontal pass: each 22-bit weight k is split as k = hi * 2^15 + lo (lo = k & 0x7FFF,
// hi = k >> 15, both int16), so that pmaddwd's 16 x 16 -> 32-bit products sum two taps
// of one channel at a time, exactly: sum(p * k) = 2^15 * sum(p * hi) + sum(p * lo), both
// partial sums far inside int32 for up to kMaxSimdTaps taps (255 * 32767 * 256 < 2^31),
// and the final sum is Pillow's int32 sum (wrapping arithmetic, whose true value fits).
// Taps come in groups of four (AVX2): one 16-byte load holds four RGB pixels, a byte
// shuffle spreads them into word pairs (R0 R1 G0 G1 B0 B1 0 0 | R2 R3 G2 G3 B2 B3 0 0)
// and two pmaddwd multiply them by the group's packed lo and hi weights. Weights past a
// tap count are 0, so a group may read past the taps it uses (the caller pads the row).
// The kernel is unrolled for 1 to 4 groups, takes two rows per call (1 to 3 groups) so
// that each weight vector is loaded once for both, and packs eight outputs per 32-byte
// store. Where the CPU has AVX-512 VNNI (and VL), pillow_vnni.cc's copy fuses each
// pmaddwd + paddd into one 256-bit vpdpwssd. Where it also has BW and VBMI,
// pillow_busd.cc's kernel replaces both: weights split in three signed bytes, vpdpbusd
// sums four taps of one channel per int32 lane (0.75 multiply lanes per tap, not 1), an
// output's sums end in one 128-bit lane (no lane sums), the two lanes of a register are
// two rows, and four rows share each weight load (two rows per call were load-bound).
//
// Vertical pass: one output row at a time, taps outer in registers, 32 values per step:
// int32 multiply-adds of the 8-bit rows (vpmovzxbd from memory) by each 22-bit weight,
// the same sums as Pillow. (pmaddwd or vpdpwssd over pairs of rows with the 15-bit
// weight halves measured no faster on Zen 4, whose vpmulld is one uop.)
//
// Both round as Pillow (start at 2^21, >> 22, clamp to [0, 255]).
//
// Measured (pillow_bench -c opt, one Zen 4 core, thread CPU time per crop):
//   plain passes -> first AVX2 passes: 366² -> 224² 910 -> 238 us, 207² -> 96² 227 ->
//   74 us, 300x280 -> 224² 713 -> 183 us; DINO's recipe 6.47 -> 3.85 ms of CPU per sample.
//   Then (unrolled groups, 8-output packs, two rows, weight table, vpmovzxbd) -> AVX2 now
//   -> VNNI: 366² -> 224² 226 -> 172 -> 157 us, 207² -> 96² 71 -> 57 -> 50 us,
//   300x280 -> 224² 176 -> 132 -> 123 us; DINO 3.23 -> 3.02 ms and timm's RandAugment
//   0.93 -> 0.87 ms of CPU per sample. VNNI (vpdpwssd) -> vpdpbusd, four rows: 366² ->
//   224² 157 -> 132 us, 207² -> 96² 51 -> 44 us, 300x280 -> 224² 120 -> 102 us; DINO's
//   recipe 4.59 -> 4.29 s and timm's 1.64 -> 1.59 s of CPU over recipes_20x100 (medians
//   of 8 alternating runs, a loaded machine). Tried and dropped: two rows per vpdpbusd
//   call (load-bound: 148 us), four rows in one 512-bit register (Zen 4 splits it; slower
//   than two 256-bit ones), and vpdpbusd for the vertical pass (four rows interleaved per
//   lane: the unpacks and the three-piece recombination per 32 values made it slower than
//   vpmulld).
//
// Thread-safety: stateless.
#ifndef FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_KERNELS_H_
#define FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace flowloader::augment::internal::pillow {

constexpr int kPrecisionBits = 32 - 8 - 2;
// The most taps per output the SIMD passes take (the lo sums stay in int32); more (a
// downscale by over 60 times) runs the plain path.
constexpr int kMaxSimdTaps = 256;
// Groups of four taps; per output and group, 32 int16 weights: the lo vector (lane 0:
// lo[4g], lo[4g+1] three times, then 0, 0; lane 1: lo[4g+2], lo[4g+3] likewise), then
// the hi vector.
constexpr int kGroupTaps = 4;
constexpr int kGroupWeights = 32;
// Bytes a horizontal row is read past its last tap's pixel: a group's 16-byte load.
constexpr int kRowSlack = 16;

// HorizontalRowAvx2 writes out_w RGB pixels of one row: output i sums `groups` groups of
// four taps starting at pixel xmin[i] of `row`, with weights w + i * groups *
// kGroupWeights. `row` must be readable to xmin[i] * 3 + groups * 12 + 4 for every i.
void HorizontalRowAvx2(const uint8_t* row, const int* xmin, const int16_t* w, int groups,
                       int out_w, uint8_t* out);

// HorizontalRows2Avx2 is HorizontalRowAvx2 for two rows with the same taps (row0 ->
// out0, row1 -> out1), each weight vector loaded once for both; for 1 to 3 groups only
// (returns false, writing nothing, for more).
bool HorizontalRows2Avx2(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                         const int16_t* w, int groups, int out_w, uint8_t* out0, uint8_t* out1);

// The same two passes with vpdpwssd (AVX-512 VNNI + VL, 256-bit), for CPUs that have it.
void HorizontalRowVnni(const uint8_t* row, const int* xmin, const int16_t* w, int groups,
                       int out_w, uint8_t* out);
bool HorizontalRows2Vnni(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                         const int16_t* w, int groups, int out_w, uint8_t* out0, uint8_t* out1);

// The same pass with vpdpbusd (pillow_busd.cc: AVX-512 VNNI, VL, BW and VBMI, 256-bit),
// from its own weight table: per output and group of four taps, kBusdGroupBytes int8
// weights, three 16-byte vectors (one per signed byte piece of the 22-bit weights, k =
// k0 + 2^8 k1 + 2^16 k2), each bytes 4c + t = piece of tap 4g + t for c in 0..3, written
// by PackWeightsBusd from one output's `count` weights k (taps past it 0).
constexpr int kBusdGroupBytes = 48;
void PackWeightsBusd(const int* k, int count, int groups, int8_t* w);
// HorizontalRows2Busd is HorizontalRows2Avx2 with that table, for any group count (the
// rows may be the same, and the outputs too, for a single row).
void HorizontalRows2Busd(const uint8_t* row0, const uint8_t* row1, const int* xmin,
                         const int8_t* w, int groups, int out_w, uint8_t* out0, uint8_t* out1);
// HorizontalRows4Busd is HorizontalRows2Busd for four rows (rows[r] -> outs[r]), each
// weight vector loaded once for all four.
void HorizontalRows4Busd(const uint8_t* const* rows, const int* xmin, const int8_t* w,
                         int groups, int out_w, uint8_t* const* outs);

// VerticalRowAvx2 writes n bytes: out[x] = clip8(sum_t first[t * stride + x] * k[t]) for t
// in [0, count).
void VerticalRowAvx2(const uint8_t* first, size_t stride, const int32_t* k, int count, int n,
                     uint8_t* out);

}  // namespace flowloader::augment::internal::pillow

#endif  // FLOWLOADER_STAGES_AUGMENT_INTERNAL_PILLOW_KERNELS_H_
