// plan_command.cc: PlanCommand, PlanText and PlanJson (see plan_command.h).
#include "runtime/plan_command.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exporters/internal/json.h"
#include "stages/reader/internal/disk_cache.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

using exporters_internal::JsonString;

const char* JsonBool(bool b) { return b ? "true" : "false"; }

std::string AvailableText(const MemoryBudget& available) {
  if (!available.known()) return "(what is available is unknown)";
  return absl::StrCat("of ", FormatBytes(available.bytes), " available (", available.source,
                      ")");
}

// DiskCachePlan is what the disk cache (cache_dir) may take against what its file
// system has free.
struct DiskCachePlan {
  int64_t budget = 0;
  int64_t used = 0;
  int64_t free = -1;  // -1: unknown.
  bool fits() const { return free < 0 || budget <= free + used; }
};

DiskCachePlan PlanDiskCache(const PipelineOptions& options) {
  DiskCachePlan plan;
  plan.budget = options.cache_bytes;
  plan.used = internal::DiskCache::UsedBytesIn(options.cache_dir);
  plan.free = internal::DiskCache::FreeBytesAt(options.cache_dir);
  return plan;
}

std::string DiskCacheText(const PipelineOptions& options) {
  const DiskCachePlan plan = PlanDiskCache(options);
  return absl::StrCat(
      "disk cache (cache_dir ", options.cache_dir, "): cache_bytes ", FormatBytes(plan.budget),
      ", ", FormatBytes(plan.used), " held now, ",
      plan.free < 0 ? "free space unknown" : FormatBytes(plan.free) + " free on its file system",
      plan.fits() ? ": fits" : ": does not fit, lower cache_bytes", "\n");
}

std::string DiskCacheJson(const PipelineOptions& options) {
  const DiskCachePlan plan = PlanDiskCache(options);
  return absl::StrCat(", \"disk_cache\": {\"dir\": ", JsonString(options.cache_dir),
                      ", \"budget_bytes\": ", plan.budget, ", \"used_bytes\": ", plan.used,
                      ", \"free_bytes\": ", plan.free, ", \"fits\": ", JsonBool(plan.fits()),
                      "}");
}

}  // namespace

std::string PlanText(const MemoryPlan& plan, const MemoryBudget& available) {
  size_t name_width = std::string("total").size();
  for (const MemoryPart& p : plan.parts()) name_width = std::max(name_width, p.name.size());
  const auto line = [&](const std::string& name, int64_t bytes, const std::string& rest) {
    return absl::StrFormat("  %-*s %10s  %s\n", static_cast<int>(name_width), name,
                           FormatBytes(bytes), rest);
  };
  std::string text = "memory plan (what the pipeline holds while it runs):\n";
  for (const MemoryPart& p : plan.parts()) {
    if (p.device) continue;
    text += line(p.name, p.bytes, absl::StrCat(p.formula, p.pinned ? " (pinned)" : ""));
  }
  const bool fits = plan.CheckFits(available).ok();
  text += line("total", plan.total_bytes(),
               absl::StrCat(AvailableText(available), fits ? ": fits" : ": does not fit"));
  for (const MemoryPart& p : plan.parts()) {
    if (!p.device) continue;
    text += line(p.name, p.bytes, absl::StrCat(p.formula, " (device memory, not in the total)"));
  }
  return text;
}

std::string PlanJson(const MemoryPlan& plan, const MemoryBudget& available) {
  std::vector<std::string> items;
  for (const MemoryPart& p : plan.parts()) {
    items.push_back(absl::StrCat(JsonString(p.key), ": {\"bytes\": ", p.bytes,
                                 ", \"formula\": ", JsonString(p.formula),
                                 ", \"pinned\": ", JsonBool(p.pinned),
                                 ", \"device\": ", JsonBool(p.device), "}"));
  }
  return absl::StrCat("{\"total_bytes\": ", plan.total_bytes(),
                      ", \"available_bytes\": ", available.bytes,
                      ", \"available_source\": ", JsonString(available.source),
                      ", \"device_bytes\": ", plan.device_bytes(),
                      ", \"fits\": ", JsonBool(plan.CheckFits(available).ok()),
                      ", \"items\": {", absl::StrJoin(items, ", "), "}}\n");
}

int PlanCommand(const PipelineOptions& options, bool json) {
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(options);
  if (!plan.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(plan.status().message()).c_str());
    return 2;
  }
  const MemoryBudget available = Pipeline::MemoryBudgetFor(options);
  std::string out = json ? PlanJson(*plan, available) : PlanText(*plan, available);
  // The disk the cache may take is no memory, but is planned as well.
  if (!options.cache_dir.empty() && json) {
    out.insert(out.rfind('}'), DiskCacheJson(options));
  } else if (!options.cache_dir.empty()) {
    out += DiskCacheText(options);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  // The same check, and the same line, as Create's refusal.
  if (absl::Status fits = plan->CheckFits(available); !fits.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(fits.message()).c_str());
    return 2;
  }
  return 0;
}

}  // namespace flowloader
