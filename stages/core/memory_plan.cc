// memory_plan.cc: MemoryPlan's totals, its one-line description and the fit check.
#include "stages/core/memory_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace flowloader {
namespace {

std::string PartText(const MemoryPart& part) {
  std::string text = absl::StrCat(part.name, " ", FormatBytes(part.bytes));
  if (!part.formula.empty()) absl::StrAppend(&text, " (", part.formula, ")");
  return text;
}

// KnobList joins knobs as "a, b or c", each once, in the order given.
std::string KnobList(const std::vector<std::string>& knobs) {
  std::vector<std::string> unique;
  for (const std::string& k : knobs) {
    if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
  }
  if (unique.size() <= 1) return absl::StrJoin(unique, "");
  const std::string last = unique.back();
  unique.pop_back();
  return absl::StrCat(absl::StrJoin(unique, ", "), " or ", last);
}

}  // namespace

int64_t MemoryPlan::total_bytes() const {
  int64_t total = 0;
  for (const MemoryPart& p : parts_) total += p.device ? 0 : p.bytes;
  return total;
}

int64_t MemoryPlan::pinned_bytes() const {
  int64_t total = 0;
  for (const MemoryPart& p : parts_) total += p.pinned ? p.bytes : 0;
  return total;
}

int64_t MemoryPlan::device_bytes() const {
  int64_t total = 0;
  for (const MemoryPart& p : parts_) total += p.device ? p.bytes : 0;
  return total;
}

std::string MemoryPlan::Describe() const {
  std::vector<std::string> host;
  std::vector<std::string> device;
  for (const MemoryPart& p : parts_) (p.device ? device : host).push_back(PartText(p));
  std::string text =
      absl::StrCat(absl::StrJoin(host, " + "), " = ", FormatBytes(total_bytes()));
  if (!device.empty()) absl::StrAppend(&text, "; on the device: ", absl::StrJoin(device, " + "));
  return text;
}

std::vector<std::pair<std::string, int64_t>> MemoryPlan::BytesByKey() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const MemoryPart& p : parts_) out.emplace_back(absl::StrCat(p.key, "_bytes"), p.bytes);
  out.emplace_back("pinned_bytes", pinned_bytes());
  out.emplace_back("total_bytes", total_bytes());
  return out;
}

const MemoryPart* MemoryPlan::LargestHostPart() const {
  const MemoryPart* largest = nullptr;
  for (const MemoryPart& p : parts_) {
    if (!p.device && (largest == nullptr || p.bytes > largest->bytes)) largest = &p;
  }
  return largest;
}

std::string MemoryPlan::LargestPartNote() const {
  const MemoryPart* largest = LargestHostPart();
  return largest == nullptr ? "" : absl::StrCat("; largest: ", PartText(*largest));
}

absl::Status MemoryPlan::CheckFits(const MemoryBudget& available) const {
  const int64_t total = total_bytes();
  if (!available.known() || total <= available.bytes || parts_.empty()) {
    return absl::OkStatus();
  }
  const std::string have = absl::StrCat(FormatBytes(available.bytes), " is available (",
                                        available.source, ")");
  std::vector<const MemoryPart*> by_size;
  for (const MemoryPart& p : parts_) {
    if (!p.device) by_size.push_back(&p);
  }
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const MemoryPart* a, const MemoryPart* b) { return a->bytes > b->bytes; });
  // The sample room (graph/internal/memory_planning.h) is cut before a plan is refused,
  // so it is never alone what does not fit: the largest part named is another.
  const MemoryPart& largest = by_size.front()->key == "sample_room" && by_size.size() > 1
                                  ? *by_size[1]
                                  : *by_size.front();
  if (largest.bytes > available.bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the ", largest.name, " needs ", FormatBytes(largest.bytes),
                     largest.formula.empty() ? "" : absl::StrCat(" (", largest.formula, ")"),
                     " but ", have, ": lower ", KnobList(largest.knobs)));
  }
  std::vector<std::string> knobs;
  for (const MemoryPart* p : by_size) knobs.insert(knobs.end(), p->knobs.begin(), p->knobs.end());
  return absl::ResourceExhaustedError(
      absl::StrCat("the pipeline needs ", FormatBytes(total), " (", by_size.size(), " parts",
                   LargestPartNote(), ") but ", have, ": lower ", KnobList(knobs),
                   " (flowloader plan lists every part)"));
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace flowloader
