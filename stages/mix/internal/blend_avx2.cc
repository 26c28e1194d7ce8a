// blend_avx2.cc: BlendPair's and SwapSpan's AVX2 kernels (blend_kernels.h). BUILD compiles this file alone
// with -mavx2; BlendPair and SwapSpan call them only where the CPU has AVX2.
//
// Thread-safety: stateless.
#include "stages/mix/internal/blend.h"
#include "stages/mix/internal/blend_kernels.h"

#ifndef __AVX2__
#error "blend_avx2.cc must be compiled with -mavx2 (stages/mix/BUILD)"
#endif

namespace flowloader::mix::internal {

void BlendPairAvx2(float* a, float* b, size_t n, float la, float oa, float lb, float ob) {
  BlendPairT<Avx2Isa>(a, b, n, la, oa, lb, ob);
}

void SwapSpanAvx2(float* a, float* b, size_t n) { SwapSpanT<Avx2Isa>(a, b, n); }

}  // namespace flowloader::mix::internal
