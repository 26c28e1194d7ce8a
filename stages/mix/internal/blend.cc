// blend.cc: BlendPair's and SwapSpan's scalar and SSE kernels and their dispatch (blend.h).
#include "stages/mix/internal/blend.h"

#include "stages/mix/internal/blend_kernels.h"
#include "stages/core/cpu.h"

namespace flowloader::mix::internal {

bool HasAvx2() {
  static const bool has = CpuHas(CpuFeature::kAvx2);
  return has;
}

void BlendPairScalar(float* a, float* b, size_t n, float la, float oa, float lb, float ob) {
  BlendPairScalarTail(a, b, 0, n, la, oa, lb, ob);
}

void BlendPairSse(float* a, float* b, size_t n, float la, float oa, float lb, float ob) {
  BlendPairT<SseIsa>(a, b, n, la, oa, lb, ob);
}

void BlendPair(float* a, float* b, size_t n, float la, float oa, float lb, float ob) {
  if (HasAvx2()) {
    BlendPairAvx2(a, b, n, la, oa, lb, ob);
  } else {
    BlendPairSse(a, b, n, la, oa, lb, ob);
  }
}

void SwapSpanSse(float* a, float* b, size_t n) { SwapSpanT<SseIsa>(a, b, n); }

void SwapSpan(float* a, float* b, size_t n) {
  if (HasAvx2()) {
    SwapSpanAvx2(a, b, n);
  } else {
    SwapSpanSse(a, b, n);
  }
}

}  // namespace flowloader::mix::internal
