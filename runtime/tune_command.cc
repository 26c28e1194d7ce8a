#include "runtime/tune_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "runtime/internal/tune_plot.h"
#include "runtime/spec.h"
#include "stages/core/memory_plan.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "flowloader: %s\n", OneLine(message).c_str());
  return 2;
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// AbsolutePath makes best.yaml runnable from any directory.
std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return path;
  std::string out = resolved;
  std::free(resolved);
  return out;
}

std::string Plot(const TuneResult& r) {
  std::vector<TunePlotPoint> points;
  for (const TrialResult& t : r.trials) {
    points.push_back({t.config.num_workers, t.config.batch_size, t.config.prefetch_batches,
                      t.images_per_second, t.peak_rss_bytes});
  }
  const TrialResult& b = r.best;
  const TunePlotPoint chosen{b.config.num_workers, b.config.batch_size, b.config.prefetch_batches,
                             b.images_per_second, b.peak_rss_bytes};
  return TunePlotSvg(points, chosen,
                     absl::StrFormat("flowloader tune: %d trials, %s, cpu_budget %d",
                                     r.trials.size(), r.grid ? "grid" : "hill climb", r.cpu_budget));
}

}  // namespace

int TuneCommand(const TuneOptions& options, const std::string& out_dir) {
  if (out_dir.empty()) return Fail("tune needs --out=DIR (for tune.json, best.yaml, tune.svg)");
  if (::mkdir(out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Fail(absl::StrCat("--out=", out_dir, ": cannot create it: ", std::strerror(errno)));
  }
  // Before the trials, not after them (--out=/dev/null spent the whole time budget, then
  // said "cannot write /dev/null/tune.json").
  struct stat st;
  if (::stat(out_dir.c_str(), &st) != 0) {
    return Fail(absl::StrCat("--out=", out_dir, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return Fail(absl::StrCat("--out=", out_dir, " is not a directory; give a directory for "
                             "tune.json, best.yaml and tune.svg"));
  }
  if (::access(out_dir.c_str(), W_OK) != 0) {
    return Fail(absl::StrCat("--out=", out_dir, ": cannot write in it: ", std::strerror(errno)));
  }
  absl::StatusOr<TuneResult> result = Tune(options);
  if (!result.ok()) return Fail(std::string(result.status().message()));
  PipelineOptions best = TunedOptions(options.pipeline, *result);
  best.data = AbsolutePath(best.data);
  const std::string yaml = absl::StrCat(
      "# Written by flowloader tune (", result->trials.size(), " trials, ",
      absl::StrFormat("%.1f", result->seconds), " s): flowloader run --spec=THIS_FILE\n",
      SpecYaml(best));
  for (const auto& [name, text] :
       std::vector<std::pair<std::string, std::string>>{{"tune.json", TuneJson(*result)},
                                                        {"best.yaml", yaml},
                                                        {"tune.svg", Plot(*result)}}) {
    const std::string path = absl::StrCat(out_dir, "/", name);
    if (!WriteText(path, text)) {
      return Fail(absl::StrCat("--out=", out_dir, ": cannot write ", path));
    }
  }
  const TrialResult& b = result->best;
  std::printf(
      "best: num_workers %d, batch_size %d, prefetch_batches %d: %.0f images/s, %.2f cores, "
      "peak RSS %s, consumer waited %.1f%%\n",
      b.config.num_workers, b.config.batch_size, b.config.prefetch_batches, b.images_per_second,
      b.cpu_cores, FormatBytes(b.peak_rss_bytes).c_str(), 100 * b.consumer_wait_fraction);
  for (const std::string& reason : result->reasons) std::printf("  %s\n", reason.c_str());
  std::printf("%zu trials in %.1f s (budgets: %d CPUs, %s RAM); wrote %s/{tune.json,best.yaml,"
              "tune.svg}\n",
              result->trials.size(), result->seconds, result->cpu_budget,
              FormatBytes(result->ram_budget_bytes).c_str(), out_dir.c_str());
  return 0;
}

}  // namespace flowloader
