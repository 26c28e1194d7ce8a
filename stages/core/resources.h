// resources.h: what this process may use, memory and CPUs, as the kernel limits it.
//
// Containers, Slurm and taskset give a process less than the machine has: a cgroup
// memory limit (v2 memory.max, v1 memory.limit_in_bytes), a CPU quota (v2 cpu.max, v1
// cpu.cfs_quota_us / cpu.cfs_period_us) and an affinity mask. These functions read the
// files the kernel exposes (/proc/meminfo, /proc/self/cgroup, /sys/fs/cgroup/...) under a
// root directory, "/" in production and a folder of fixture files in tests. A missing or
// unreadable file means "no such limit", never an error: the answer is then the tighter
// of the limits that could be read.
//
// The process's cgroup is the one /proc/self/cgroup names, and every ancestor's limit
// applies too, so each is read up to the mount point; when that path does not exist in
// this mount namespace (a container that sees the host's path), the mount root is used.
//
// Thread-safety: stateless functions; safe to call from any thread.
#ifndef FLOWLOADER_STAGES_CORE_RESOURCES_H_
#define FLOWLOADER_STAGES_CORE_RESOURCES_H_

#include <cstdint>
#include <string>

namespace flowloader {

// MemoryBudget is how much more memory the process may use, and which limit says so.
struct MemoryBudget {
  // Bytes the process may still allocate; -1 when no limit could be read.
  int64_t bytes = -1;
  // The binding limit, for messages: "MemAvailable", "cgroup v2 memory.max",
  // "cgroup v1 memory.limit_in_bytes", or a caller's own (e.g. "memory_limit_mb").
  std::string source;

  bool known() const { return bytes >= 0; }
};

// AvailableMemory returns the smallest of: MemAvailable from <root>/proc/meminfo; for
// cgroup v2, memory.max − (memory.current − inactive_file); for cgroup v1,
// memory.limit_in_bytes − (memory.usage_in_bytes − total_inactive_file). Inactive file
// pages are subtracted from the usage as the kernel reclaims them before failing an
// allocation (kubelet's "working set"). "max" and v1's near-2^63 value mean no limit.
MemoryBudget AvailableMemory(const std::string& root = "/");

// MemoryAvailableBytes is AvailableMemory(root).bytes.
int64_t MemoryAvailableBytes(const std::string& root = "/");

// AffinityCpus is the number of CPUs in this thread's affinity mask (sched_getaffinity),
// or 0 when it cannot be read.
int AffinityCpus();

// CgroupCpuQuota is the CPU quota of the process's cgroup in CPUs, rounded up
// (v2 cpu.max "quota period", v1 cpu.cfs_quota_us / cpu.cfs_period_us, the smallest along
// the cgroup's ancestors), or 0 when there is none ("max", -1, or no files).
int CgroupCpuQuota(const std::string& root = "/");

// UsableCpus is the number of CPUs this process may run on: the affinity mask's count,
// capped by the cgroup quota when there is one; at least 1.
int UsableCpus(const std::string& root = "/");

// ResidentBytes is this process's resident set (VmRSS), PeakResidentBytes its peak
// (VmHWM), both from /proc/self/status; -1 when they cannot be read.
int64_t ResidentBytes();
int64_t PeakResidentBytes();

// ResetPeakResident makes the peak start again from the current resident set (writing 5
// to /proc/self/clear_refs, Linux >= 4.0), so a measurement's peak is its own.
void ResetPeakResident();

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_RESOURCES_H_
