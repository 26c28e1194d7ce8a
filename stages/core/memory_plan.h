// memory_plan.h: what a pipeline configuration needs in host memory, part by part, and
// the check against what the process may use (resources.h), made before anything big is
// allocated, so a configuration that cannot fit is refused in one line that names the
// bytes and the knobs instead of being OOM-killed halfway through its first epoch.
//
//   MemoryPlan plan;
//   plan.Add({"batch pool", "batch_pool", 3 * 64 * 602112,
//             "prefetch 3 × batch 64 × 3×224² float32",
//             {"batch_size", "image_size", "prefetch_batches"}});
//   absl::Status fits = plan.CheckFits(AvailableMemory());
//
// The parts are what the pipeline holds for its whole life (buffers, caches at their
// budget, per-worker scratch); the small per-sample bookkeeping is not counted.
//
// Thread-safety: a plain value; const methods are safe from any thread.
#ifndef FLOWLOADER_STAGES_CORE_MEMORY_PLAN_H_
#define FLOWLOADER_STAGES_CORE_MEMORY_PLAN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "stages/core/resources.h"

namespace flowloader {

// MemoryPart is one thing the pipeline keeps in memory.
struct MemoryPart {
  std::string name;  // For messages: "batch pool".
  std::string key;   // For JSON: "batch_pool" (reported as "batch_pool_bytes").
  int64_t bytes = 0;
  // How `bytes` comes about, with the values of the knobs: "prefetch 3 × batch 64 × ...".
  std::string formula;
  // The options that make it smaller, most effective first.
  std::vector<std::string> knobs;
  // Page-locked (pinned) host memory.
  bool pinned = false;
  // Device (GPU) memory, not host memory: listed, but neither in total_bytes nor checked
  // against what the host has.
  bool device = false;
};

class MemoryPlan {
 public:
  void Add(MemoryPart part) { parts_.push_back(std::move(part)); }
  const std::vector<MemoryPart>& parts() const { return parts_; }

  // total_bytes is the host memory of the plan: every part but the device ones.
  int64_t total_bytes() const;
  int64_t pinned_bytes() const;
  int64_t device_bytes() const;

  // Describe is one line: "batch pool 110.3 MiB (prefetch 3 × ...) + seek index 256.0 MiB
  // (seek_index_mb 256) = 366.3 MiB", then "; on the device: ..." for device parts.
  std::string Describe() const;

  // BytesByKey lists ("<key>_bytes", bytes) per part (device parts too), then
  // "pinned_bytes" and "total_bytes" (host), for the run summary.
  std::vector<std::pair<std::string, int64_t>> BytesByKey() const;

  // LargestHostPart is the plan's largest host part, or nullptr when it has none.
  const MemoryPart* LargestHostPart() const;

  // LargestPartNote is "; largest: codec memory 16.0 MiB (num_workers 2 × ...)", or ""
  // for a plan without host parts: a refusal's short form of the plan (six parts listed
  // whole made 650-character lines; `flowloader plan` lists every part).
  std::string LargestPartNote() const;

  // CheckFits is OK when the plan fits `available` (or nothing is known of it), and
  // otherwise ResourceExhausted in one line with the bytes and the knobs: "the batch pool
  // needs 24.1 GiB (prefetch 3 × batch 64 × 3×5000² float32) but 21.9 GiB is available
  // (MemAvailable): lower batch_size, image_size or prefetch_batches". The largest part
  // leads when it alone does not fit; otherwise the total, the count of parts and the
  // largest. Device parts are not host memory and take no part in the check.
  absl::Status CheckFits(const MemoryBudget& available) const;

 private:
  std::vector<MemoryPart> parts_;
};

// FormatBytes writes a size with binary units and one decimal: "24.1 GiB", "512 B".
std::string FormatBytes(int64_t bytes);

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_MEMORY_PLAN_H_
