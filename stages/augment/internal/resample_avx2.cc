// resample_avx2.cc: ResampleRgb's kernels (resample_kernels.h) for AVX2. BUILD compiles
// this file alone with -mavx2; ResampleRgb calls it only where the CPU has AVX2. Nothing
// else goes here (see resample_kernels.h).
//
// Thread-safety: stateless.
#include "stages/augment/internal/resample_kernels.h"

#ifndef __AVX2__
#error "resample_avx2.cc must be compiled with -mavx2 (stages/augment/BUILD)"
#endif

namespace flowloader::augment::internal {

const Kernels& Avx2Kernels() { return kKernels<Avx2>; }

}  // namespace flowloader::augment::internal
