// resources.cc: AvailableMemory, UsableCpus and the cgroup file parsing behind them.
#include "stages/core/resources.h"

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace flowloader {
namespace {

// cgroup v1 reports "no limit" as LLONG_MAX rounded down to a page; anything this large
// is no limit in practice.
constexpr int64_t kUnlimitedV1 = int64_t{1} << 62;

std::string Join(const std::string& dir, absl::string_view name) {
  if (!dir.empty() && dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// ReadInt64 reads a file holding one integer; nullopt when missing or not a number
// (which covers v2's "max").
std::optional<int64_t> ReadInt64(const std::string& path) {
  std::optional<std::string> text = ReadFile(path);
  int64_t value = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return std::nullopt;
  }
  return value;
}

// StatField reads `key value` lines (memory.stat) or `Key:  value kB` (meminfo).
std::optional<int64_t> StatField(const std::string& path, absl::string_view key) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t:"), absl::SkipEmpty());
    int64_t value = 0;
    if (words.size() >= 2 && words[0] == key && absl::SimpleAtoi(words[1], &value)) {
      if (words.size() >= 3 && words[2] == "kB") value *= 1024;
      return value;
    }
  }
  return std::nullopt;
}

// CgroupPath returns the process's path in the hierarchy that has `controller` (v1), or
// in the unified hierarchy (v2, controller empty), from <root>/proc/self/cgroup.
std::string CgroupPath(const std::string& root, absl::string_view controller) {
  std::optional<std::string> text = ReadFile(Join(root, "proc/self/cgroup"));
  if (!text) return "";
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    // "hierarchy-id:controller,list:/path"; the path may itself hold ':'.
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    const std::string path(absl::StripPrefix(fields[2], "/"));
    const bool unified = fields[0] == "0" && fields[1].empty();
    if (controller.empty()) {
      if (unified) return path;
      continue;
    }
    for (absl::string_view c : absl::StrSplit(fields[1], ',')) {
      if (c == controller) return path;
    }
  }
  return "";
}

// CgroupDirs lists the process's cgroup directory under `mount` and each ancestor up to
// the mount root, since every ancestor's limit applies; just the root when the path is
// not visible here. Empty when `mount` does not exist.
std::vector<std::string> CgroupDirs(const std::string& mount, const std::string& path) {
  if (!IsDirectory(mount)) return {};
  std::vector<std::string> dirs;
  if (!path.empty() && IsDirectory(Join(mount, path))) {
    std::vector<absl::string_view> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
    for (size_t n = parts.size(); n > 0; --n) {
      dirs.push_back(Join(mount, absl::StrJoin(parts.begin(), parts.begin() + n, "/")));
    }
  }
  dirs.push_back(mount);
  return dirs;
}

bool IsCgroupV2(const std::string& root) {
  return static_cast<bool>(ReadFile(Join(root, "sys/fs/cgroup/cgroup.controllers")));
}

// Tighten keeps the smaller of `budget` and (bytes, source).
void Tighten(MemoryBudget& budget, int64_t bytes, const std::string& source) {
  bytes = std::max<int64_t>(bytes, 0);
  if (!budget.known() || bytes < budget.bytes) budget = MemoryBudget{bytes, source};
}

// CgroupMemory tightens `budget` by limit − working set in each of `dirs`.
void CgroupMemory(const std::vector<std::string>& dirs, const char* limit_file,
                  const char* usage_file, const char* inactive_key, int64_t unlimited,
                  const std::string& source, MemoryBudget& budget) {
  for (const std::string& dir : dirs) {
    std::optional<int64_t> limit = ReadInt64(Join(dir, limit_file));
    if (!limit || *limit >= unlimited) continue;
    const int64_t usage = ReadInt64(Join(dir, usage_file)).value_or(0);
    const int64_t inactive = StatField(Join(dir, "memory.stat"), inactive_key).value_or(0);
    Tighten(budget, *limit - std::max<int64_t>(usage - inactive, 0), source);
  }
}

// QuotaCpus is quota / period rounded up, or 0 for no quota.
int QuotaCpus(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>((quota + period - 1) / period);
}

// Tightest keeps the smaller positive CPU count (0 = none).
int Tightest(int a, int b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

}  // namespace

MemoryBudget AvailableMemory(const std::string& root) {
  MemoryBudget budget;
  if (std::optional<int64_t> available = StatField(Join(root, "proc/meminfo"), "MemAvailable")) {
    Tighten(budget, *available, "MemAvailable");
  }
  if (IsCgroupV2(root)) {
    CgroupMemory(CgroupDirs(Join(root, "sys/fs/cgroup"), CgroupPath(root, "")), "memory.max",
                 "memory.current", "inactive_file", INT64_MAX, "cgroup v2 memory.max", budget);
  } else {
    CgroupMemory(CgroupDirs(Join(root, "sys/fs/cgroup/memory"), CgroupPath(root, "memory")),
                 "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file",
                 kUnlimitedV1, "cgroup v1 memory.limit_in_bytes", budget);
  }
  return budget;
}

int64_t MemoryAvailableBytes(const std::string& root) { return AvailableMemory(root).bytes; }

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

int CgroupCpuQuota(const std::string& root) {
  int cpus = 0;
  if (IsCgroupV2(root)) {
    for (const std::string& dir :
         CgroupDirs(Join(root, "sys/fs/cgroup"), CgroupPath(root, ""))) {
      // "quota period", or "max period" for none.
      std::optional<std::string> text = ReadFile(Join(dir, "cpu.max"));
      if (!text) continue;
      std::vector<absl::string_view> words =
          absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
      int64_t quota = 0;
      int64_t period = 0;
      if (words.size() == 2 && absl::SimpleAtoi(words[0], &quota) &&
          absl::SimpleAtoi(words[1], &period)) {
        cpus = Tightest(cpus, QuotaCpus(quota, period));
      }
    }
    return cpus;
  }
  // v1 mounts cpu alone or co-mounted with cpuacct, depending on the distribution.
  for (const char* mount : {"sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct"}) {
    for (const std::string& dir : CgroupDirs(Join(root, mount), CgroupPath(root, "cpu"))) {
      std::optional<int64_t> quota = ReadInt64(Join(dir, "cpu.cfs_quota_us"));
      std::optional<int64_t> period = ReadInt64(Join(dir, "cpu.cfs_period_us"));
      if (quota && period) cpus = Tightest(cpus, QuotaCpus(*quota, *period));
    }
    if (IsDirectory(Join(root, mount))) break;
  }
  return cpus;
}

int UsableCpus(const std::string& root) {
  return std::max(1, Tightest(AffinityCpus(), CgroupCpuQuota(root)));
}

namespace {

// StatusBytes reads a "Field:   123 kB" line of /proc/self/status.
int64_t StatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    int64_t kb = -1;
    std::istringstream(line.substr(field.size() + 1)) >> kb;
    return kb < 0 ? -1 : kb * 1024;
  }
  return -1;
}

}  // namespace

int64_t ResidentBytes() { return StatusBytes("VmRSS"); }
int64_t PeakResidentBytes() { return StatusBytes("VmHWM"); }
void ResetPeakResident() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace flowloader
