// cpu.h: which instruction-set extensions the vector kernels may use.
//
// CpuHas(feature) is what the CPU and the OS support (__builtin_cpu_supports, which also
// checks that the OS saves the wider registers), capped by the environment variable
// FLOWLOADER_MAX_ISA, read once per process:
//   avx512 (or unset)  every extension the CPU has
//   avx2               no AVX-512 kernel runs: the paths an AVX2-only machine takes
//   sse4               neither AVX2 nor AVX-512: the x86-64-v2 baseline the build targets
// so that one machine can test and measure the paths another would take (as oneDNN's
// ONEDNN_MAX_CPU_ISA does). Every kernel gives the same bytes on every path it has, with
// one documented exception: the fused crop decodes JPEGs to YCbCr planes only with AVX-512
// (the `planar_ycc` option of the decode stage), so the default graph's and a bilinear
// head's pixels differ by rounding between AVX-512 and other machines. An unknown value
// is reported once on stderr and ignored.
//
// Thread-safety: all functions are thread-safe.
#ifndef FLOWLOADER_STAGES_CORE_CPU_H_
#define FLOWLOADER_STAGES_CORE_CPU_H_

namespace flowloader {

enum class CpuFeature {
  kAvx2,
  kAvx512F,
  kAvx512Bw,
  kAvx512Vl,
  kAvx512Dq,
  kAvx512Vbmi,
  kAvx512Vnni,
};

// CpuHas says whether kernels may use `feature` on this machine, under the cap.
bool CpuHas(CpuFeature feature);

// IsaCapName is the cap in force: "avx512" (none), "avx2" or "sse4".
const char* IsaCapName();

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_CPU_H_
