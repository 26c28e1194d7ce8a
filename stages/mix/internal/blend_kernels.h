// blend_kernels.h: BlendPair written once over an ISA's float vector (blend.h), compiled
// for SSE in blend.cc and for AVX2 in blend_avx2.cc. Multiply, then add: the same two
// roundings as the scalar formula, lane by lane.
//
// Thread-safety: stateless.
#ifndef FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_KERNELS_H_
#define FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_KERNELS_H_

#include <immintrin.h>

#include <cstddef>

namespace flowloader::mix::internal {

struct SseIsa {
  using V = __m128;
  static constexpr size_t kLanes = 4;
  static V Set1(float v) { return _mm_set1_ps(v); }
  static V Load(const float* p) { return _mm_loadu_ps(p); }
  static void Store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V Mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm_add_ps(a, b); }
};

#ifdef __AVX2__
struct Avx2Isa {
  using V = __m256;
  static constexpr size_t kLanes = 8;
  static V Set1(float v) { return _mm256_set1_ps(v); }
  static V Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
};
#endif

// BlendPairScalarTail is the scalar formula over [from, n).
inline void BlendPairScalarTail(float* a, float* b, size_t from, size_t n, float la, float oa,
                                float lb, float ob) {
  for (size_t k = from; k < n; ++k) {
    const float x = a[k], y = b[k];
    a[k] = x * la + y * oa;
    b[k] = y * lb + x * ob;
  }
}

// BlendPairT: two vectors per row per step (two loads in flight per stream), then the
// scalar tail.
template <class Isa>
inline void BlendPairT(float* a, float* b, size_t n, float la, float oa, float lb, float ob) {
  using V = typename Isa::V;
  constexpr size_t kStep = 2 * Isa::kLanes;
  const V vla = Isa::Set1(la), voa = Isa::Set1(oa), vlb = Isa::Set1(lb), vob = Isa::Set1(ob);
  size_t k = 0;
  for (; k + kStep <= n; k += kStep) {
    const V x0 = Isa::Load(a + k), x1 = Isa::Load(a + k + Isa::kLanes);
    const V y0 = Isa::Load(b + k), y1 = Isa::Load(b + k + Isa::kLanes);
    Isa::Store(a + k, Isa::Add(Isa::Mul(x0, vla), Isa::Mul(y0, voa)));
    Isa::Store(a + k + Isa::kLanes, Isa::Add(Isa::Mul(x1, vla), Isa::Mul(y1, voa)));
    Isa::Store(b + k, Isa::Add(Isa::Mul(y0, vlb), Isa::Mul(x0, vob)));
    Isa::Store(b + k + Isa::kLanes, Isa::Add(Isa::Mul(y1, vlb), Isa::Mul(x1, vob)));
  }
  BlendPairScalarTail(a, b, k, n, la, oa, lb, ob);
}

// SwapSpanT exchanges n floats of a and b in registers, then the tail one by one.
template <class Isa>
inline void SwapSpanT(float* a, float* b, size_t n) {
  using V = typename Isa::V;
  size_t k = 0;
  for (; k + Isa::kLanes <= n; k += Isa::kLanes) {
    const V x = Isa::Load(a + k), y = Isa::Load(b + k);
    Isa::Store(a + k, y);
    Isa::Store(b + k, x);
  }
  for (; k < n; ++k) {
    const float x = a[k];
    a[k] = b[k];
    b[k] = x;
  }
}

}  // namespace flowloader::mix::internal

#endif  // FLOWLOADER_STAGES_MIX_INTERNAL_BLEND_KERNELS_H_
