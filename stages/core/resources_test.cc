// resources_test.cc: AvailableMemory and CgroupCpuQuota on fixture trees written under
// TEST_TMPDIR, laid out as /proc and /sys/fs/cgroup are (v1 and v2, limits, "max",
// ancestors, missing files).
#include "stages/core/resources.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

class ResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/resources_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", root_, "'").c_str()), 0);
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  }

  // Write creates <root>/<path> (and its folders) holding `text`.
  void Write(const std::string& path, const std::string& text) {
    std::string dir = root_;
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      dir = absl::StrCat(dir, "/", parts[i]);
      mkdir(dir.c_str(), 0755);
    }
    std::ofstream(absl::StrCat(root_, "/", path)) << text;
  }

  void MemInfo(int64_t available_kb) {
    Write("proc/meminfo", absl::StrCat("MemTotal:       24683664 kB\nMemFree:        1 kB\n"
                                       "MemAvailable:   ", available_kb, " kB\n"));
  }

  std::string root_;
};

TEST_F(ResourcesTest, NoFilesMeansNoKnownLimit) {
  Write("empty", "");
  const MemoryBudget budget = AvailableMemory(root_);
  EXPECT_FALSE(budget.known());
  EXPECT_EQ(MemoryAvailableBytes(root_), -1);
  EXPECT_EQ(CgroupCpuQuota(root_), 0);
}

TEST_F(ResourcesTest, MemAvailableIsReadInBytes) {
  MemInfo(23369736);
  const MemoryBudget budget = AvailableMemory(root_);
  EXPECT_EQ(budget.bytes, int64_t{23369736} * 1024);
  EXPECT_EQ(budget.source, "MemAvailable");
}

TEST_F(ResourcesTest, CgroupV1LimitBelowMemAvailableBinds) {
  MemInfo(20 * 1024 * 1024);  // 20 GiB.
  Write("proc/self/cgroup", "5:devices:/\n4:memory:/job/42\n1:cpu,cpuacct:/\n0::/\n");
  Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Write("sys/fs/cgroup/memory/job/42/memory.limit_in_bytes", absl::StrCat(4 * kGiB, "\n"));
  Write("sys/fs/cgroup/memory/job/42/memory.usage_in_bytes", absl::StrCat(kGiB, "\n"));
  // Half a GiB of the usage is inactive page cache, which the kernel reclaims first.
  Write("sys/fs/cgroup/memory/job/42/memory.stat",
        absl::StrCat("cache 1\ninactive_file 7\ntotal_inactive_file ", kGiB / 2, "\n"));
  const MemoryBudget budget = AvailableMemory(root_);
  EXPECT_EQ(budget.bytes, 4 * kGiB - kGiB / 2);
  EXPECT_EQ(budget.source, "cgroup v1 memory.limit_in_bytes");
}

TEST_F(ResourcesTest, CgroupV1AncestorLimitApplies) {
  MemInfo(20 * 1024 * 1024);
  Write("proc/self/cgroup", "4:memory:/slurm/job7/step0\n");
  Write("sys/fs/cgroup/memory/slurm/job7/memory.limit_in_bytes", absl::StrCat(2 * kGiB));
  Write("sys/fs/cgroup/memory/slurm/job7/memory.usage_in_bytes", absl::StrCat(kGiB));
  Write("sys/fs/cgroup/memory/slurm/job7/step0/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(MemoryAvailableBytes(root_), kGiB);
}

TEST_F(ResourcesTest, CgroupV1UnlimitedLeavesMemAvailable) {
  MemInfo(1024);
  Write("proc/self/cgroup", "4:memory:/\n");
  Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Write("sys/fs/cgroup/memory/memory.usage_in_bytes", "1746767872\n");
  EXPECT_EQ(AvailableMemory(root_).source, "MemAvailable");
  EXPECT_EQ(MemoryAvailableBytes(root_), 1024 * 1024);
}

TEST_F(ResourcesTest, CgroupV2MaxMinusWorkingSet) {
  MemInfo(20 * 1024 * 1024);
  Write("proc/self/cgroup", "0::/kubepods/pod1\n");
  Write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  Write("sys/fs/cgroup/kubepods/memory.max", "max\n");
  Write("sys/fs/cgroup/kubepods/pod1/memory.max", absl::StrCat(8 * kGiB, "\n"));
  Write("sys/fs/cgroup/kubepods/pod1/memory.current", absl::StrCat(3 * kGiB, "\n"));
  Write("sys/fs/cgroup/kubepods/pod1/memory.stat",
        absl::StrCat("anon 5\nfile 9\ninactive_file ", kGiB, "\nactive_file 3\n"));
  const MemoryBudget budget = AvailableMemory(root_);
  EXPECT_EQ(budget.bytes, 8 * kGiB - 2 * kGiB);
  EXPECT_EQ(budget.source, "cgroup v2 memory.max");
}

TEST_F(ResourcesTest, CgroupV2PathOfTheHostFallsBackToTheMountRoot) {
  // Inside a container /proc/self/cgroup may name a path only the host has.
  Write("proc/self/cgroup", "0::/system.slice/docker-abc.scope\n");
  Write("sys/fs/cgroup/cgroup.controllers", "memory\n");
  Write("sys/fs/cgroup/memory.max", absl::StrCat(kGiB));
  Write("sys/fs/cgroup/memory.current", absl::StrCat(kGiB + 1));
  const MemoryBudget budget = AvailableMemory(root_);
  EXPECT_EQ(budget.bytes, 0);  // Over the limit already: nothing more.
  EXPECT_EQ(budget.source, "cgroup v2 memory.max");
}

TEST_F(ResourcesTest, CgroupV2CpuMax) {
  Write("proc/self/cgroup", "0::/a\n");
  Write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
  Write("sys/fs/cgroup/cpu.max", "max 100000\n");
  Write("sys/fs/cgroup/a/cpu.max", "150000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 2);  // 1.5 CPUs, rounded up.
  Write("sys/fs/cgroup/cpu.max", "50000 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 1);  // The parent's half CPU binds.
  EXPECT_EQ(UsableCpus(root_), 1);
}

TEST_F(ResourcesTest, CgroupV2CpuMaxUnlimited) {
  Write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
  Write("sys/fs/cgroup/cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 0);
  EXPECT_EQ(UsableCpus(root_), AffinityCpus());
}

TEST_F(ResourcesTest, CgroupV1CfsQuota) {
  Write("proc/self/cgroup", "2:cpuacct:/\n1:cpu:/\n");
  Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  Write("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 0);
  Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "250000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 3);
  Write("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "100000\n");
  EXPECT_EQ(UsableCpus(root_), 1);
}

TEST_F(ResourcesTest, CgroupV1CfsQuotaUnderCoMountedCpuAcct) {
  Write("proc/self/cgroup", "3:cpu,cpuacct:/user\n");
  Write("sys/fs/cgroup/cpu,cpuacct/user/cpu.cfs_quota_us", "50000\n");
  Write("sys/fs/cgroup/cpu,cpuacct/user/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(CgroupCpuQuota(root_), 1);
}

TEST(ResourcesRealTest, ThisMachineAnswers) {
  // Every Linux machine has MemAvailable and an affinity mask.
  EXPECT_GT(MemoryAvailableBytes(), 0);
  EXPECT_GE(AffinityCpus(), 1);
  EXPECT_GE(UsableCpus(), 1);
  EXPECT_LE(UsableCpus(), AffinityCpus());
}

}  // namespace
}  // namespace flowloader
