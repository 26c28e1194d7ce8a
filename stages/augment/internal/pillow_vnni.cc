// pillow_vnni.cc: PillowResample's horizontal pass with AVX-512 VNNI's vpdpwssd on
// 256-bit registers (pillow_kernels.h's HorizontalRowVnni, HorizontalRows2Vnni): the AVX2
// kernels of pillow_avx2.cc compiled again, each pmaddwd + paddd fused. BUILD compiles it
// with -mavx512vnni -mavx512vl; PillowResample calls it only where the CPU has both.
//
// Thread-safety: stateless.
#ifndef __AVX512VNNI__
#error "pillow_vnni.cc must be compiled with -mavx512vnni -mavx512vl (stages/augment/BUILD)"
#endif

#define FLOWLOADER_PILLOW_VNNI 1
#include "stages/augment/internal/pillow_avx2.cc"  // NOLINT(build/include)
