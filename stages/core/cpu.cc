// cpu.cc: see cpu.h.
#include "stages/core/cpu.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace flowloader {
namespace {

enum class IsaCap { kSse4 = 0, kAvx2 = 1, kAvx512 = 2 };

IsaCap ReadCap() {
  const char* value = std::getenv("FLOWLOADER_MAX_ISA");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "avx512") == 0) {
    return IsaCap::kAvx512;
  }
  if (std::strcmp(value, "avx2") == 0) return IsaCap::kAvx2;
  if (std::strcmp(value, "sse4") == 0) return IsaCap::kSse4;
  std::fprintf(stderr,
               "flowloader: W FLOWLOADER_MAX_ISA=%s is not avx512, avx2 or sse4; "
               "ignored (no cap)\n",
               value);
  return IsaCap::kAvx512;
}

IsaCap Cap() {
  static const IsaCap cap = ReadCap();
  return cap;
}

// Supported is the CPU's answer alone. __builtin_cpu_supports needs a literal name.
bool Supported(CpuFeature feature) {
  __builtin_cpu_init();  // Safe to repeat; needed when called before constructors ran.
  switch (feature) {
    case CpuFeature::kAvx2: return __builtin_cpu_supports("avx2");
    case CpuFeature::kAvx512F: return __builtin_cpu_supports("avx512f");
    case CpuFeature::kAvx512Bw: return __builtin_cpu_supports("avx512bw");
    case CpuFeature::kAvx512Vl: return __builtin_cpu_supports("avx512vl");
    case CpuFeature::kAvx512Dq: return __builtin_cpu_supports("avx512dq");
    case CpuFeature::kAvx512Vbmi: return __builtin_cpu_supports("avx512vbmi");
    case CpuFeature::kAvx512Vnni: return __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

}  // namespace

bool CpuHas(CpuFeature feature) {
  const IsaCap needs = feature == CpuFeature::kAvx2 ? IsaCap::kAvx2 : IsaCap::kAvx512;
  return static_cast<int>(Cap()) >= static_cast<int>(needs) && Supported(feature);
}

const char* IsaCapName() {
  switch (Cap()) {
    case IsaCap::kSse4: return "sse4";
    case IsaCap::kAvx2: return "avx2";
    case IsaCap::kAvx512: return "avx512";
  }
  return "avx512";
}

}  // namespace flowloader
