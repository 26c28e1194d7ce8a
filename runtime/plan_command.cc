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

namespace flowloader {
namespace {

using exporters_internal::JsonString;

const char* JsonBool(bool b) { return b ? "true" : "false"; }

std::string AvailableText(const MemoryBudget& available) {
  if (!available.known()) return "(what is available is unknown)";
  return absl::StrCat("of ", FormatBytes(available.bytes), " available (", available.source,
                      ")");
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
    std::fprintf(stderr, "flowloader: %s\n", std::string(plan.status().message()).c_str());
    return 2;
  }
  const MemoryBudget available = Pipeline::MemoryBudgetFor(options);
  const std::string out = json ? PlanJson(*plan, available) : PlanText(*plan, available);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  // The same check, and the same line, as Create's refusal.
  if (absl::Status fits = plan->CheckFits(available); !fits.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", std::string(fits.message()).c_str());
    return 2;
  }
  return 0;
}

}  // namespace flowloader
