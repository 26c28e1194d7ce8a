// blend.h: the mixup kernel of MixImages: two rows rewritten together from both originals,
//   a[k] = a[k]·la + b[k]·oa,   b[k] = b[k]·lb + a[k]·ob   (the right sides read before),
// each product rounded to float32 and then added: no FMA, so every ISA gives the scalar
// formula's bytes (BUILD compiles these files with -ffp-contract=off).
//
// Thread-safety: stateless.
#ifndef FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_H_
#define FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_H_

#include <cstddef>

namespace flowloader::mix::internal {

// BlendPair is the fastest of the kernels below that the CPU runs. `a` and `b` are
// distinct rows (they do not overlap).
void BlendPair(float* a, float* b, size_t n, float la, float oa, float lb, float ob);

// The kernels, for the tests: one element at a time; SSE (the x86-64-v2 baseline); AVX2
// (blend_avx2.cc, only where HasAvx2()).
void BlendPairScalar(float* a, float* b, size_t n, float la, float oa, float lb, float ob);
void BlendPairSse(float* a, float* b, size_t n, float la, float oa, float lb, float ob);
void BlendPairAvx2(float* a, float* b, size_t n, float la, float oa, float lb, float ob);
bool HasAvx2();

// SwapSpan exchanges n floats of two distinct rows (CutMix with one box on both rows):
// it only moves bytes, so every kernel gives the same result.
void SwapSpan(float* a, float* b, size_t n);
void SwapSpanSse(float* a, float* b, size_t n);
void SwapSpanAvx2(float* a, float* b, size_t n);

}  // namespace flowloader::mix::internal

#endif  // FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_H_
