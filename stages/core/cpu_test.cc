// cpu_test.cc: FLOWLOADER_MAX_ISA caps what CpuHas reports. The cap is read once per
// process, so each case runs in a forked child with the variable set.
#include "stages/core/cpu.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

constexpr CpuFeature kAll[] = {CpuFeature::kAvx2,     CpuFeature::kAvx512F,
                               CpuFeature::kAvx512Bw, CpuFeature::kAvx512Vl,
                               CpuFeature::kAvx512Dq, CpuFeature::kAvx512Vbmi,
                               CpuFeature::kAvx512Vnni};

// Report is what a child with FLOWLOADER_MAX_ISA=value (nullptr: unset) sees: one bit
// per feature of kAll, then the cap's name.
std::string Report(const char* value) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (value == nullptr) {
      unsetenv("FLOWLOADER_MAX_ISA");
    } else {
      setenv("FLOWLOADER_MAX_ISA", value, 1);
    }
    std::string out;
    for (CpuFeature f : kAll) out += CpuHas(f) ? '1' : '0';
    out += std::string(" ") + IsaCapName();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[64];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

// Machine is what the CPU itself supports, in Report's order, features above `cap_level`
// (0 sse4, 1 avx2, 2 avx512) cleared.
std::string Machine(int cap_level) {
  __builtin_cpu_init();
  const bool has[] = {
      __builtin_cpu_supports("avx2") != 0,       __builtin_cpu_supports("avx512f") != 0,
      __builtin_cpu_supports("avx512bw") != 0,   __builtin_cpu_supports("avx512vl") != 0,
      __builtin_cpu_supports("avx512dq") != 0,   __builtin_cpu_supports("avx512vbmi") != 0,
      __builtin_cpu_supports("avx512vnni") != 0};
  std::string out;
  for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); ++i) {
    const int needs = i == 0 ? 1 : 2;
    out += has[i] && cap_level >= needs ? '1' : '0';
  }
  return out;
}

TEST(CpuHasTest, UnsetOrAvx512MeansWhatTheCpuHas) {
  EXPECT_EQ(Report(nullptr), Machine(2) + " avx512");
  EXPECT_EQ(Report(""), Machine(2) + " avx512");
  EXPECT_EQ(Report("avx512"), Machine(2) + " avx512");
}

TEST(CpuHasTest, Avx2CapTurnsOffEveryAvx512Feature) {
  EXPECT_EQ(Report("avx2"), Machine(1) + " avx2");
  EXPECT_EQ(Report("avx2").substr(1, 6), "000000");
}

TEST(CpuHasTest, Sse4CapTurnsOffAvx2Too) {
  EXPECT_EQ(Report("sse4"), "0000000 sse4");
}

TEST(CpuHasTest, UnknownValueIsIgnored) {
  EXPECT_EQ(Report("avx1024"), Machine(2) + " avx512");
}

}  // namespace
}  // namespace flowloader
