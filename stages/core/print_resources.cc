// print_resources: prints what resources.h reads for this process, one `key=value` a
// line (resources_cpu_test.sh runs it under taskset).
#include <cstdio>

#include "stages/core/resources.h"

int main() {
  std::printf("affinity_cpus=%d\n", flowloader::AffinityCpus());
  std::printf("cgroup_cpu_quota=%d\n", flowloader::CgroupCpuQuota());
  std::printf("usable_cpus=%d\n", flowloader::UsableCpus());
  std::printf("memory_available_bytes=%lld\n",
              static_cast<long long>(flowloader::MemoryAvailableBytes()));
  return 0;
}
