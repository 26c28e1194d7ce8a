// resample_avx512.cc: ResampleRgb's kernels (resample_kernels.h) for AVX-512F + BW. BUILD
// compiles this file alone with -mavx512f -mavx512bw; ResampleRgb calls it only where the
// CPU has both. Nothing else goes here (see resample_kernels.h).
//
// Thread-safety: stateless.
#include "stages/augment/internal/resample_kernels.h"

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "resample_avx512.cc must be compiled with -mavx512f -mavx512bw (stages/augment/BUILD)"
#endif

namespace flowloader::augment::internal {

const Kernels& Avx512Kernels() { return kKernels<Avx512>; }

}  // namespace flowloader::augment::internal
