// worker_memory.h: the memory one worker may spend on one sample's images at run time,
// and the check a stage makes before it allocates an image whose size only the sample
// knows (a whole decode, a resize of the shorter side, a rotation with expand).
//
// The memory plan (memory_plan.h) holds what a configuration keeps for its whole life and
// is checked at Create. What is left of the budget after it is shared by the workers: a
// worker may hold, for one sample, its share of that headroom plus the scratch the plan
// already gave it. A sample whose decoded image or an op's intermediate image would need
// more is skipped and counted (decode_memory, op_memory), never allocated, so a valid
// but huge image cannot take the process past memory_limit_mb.
//
//   WorkerMemory budget;                       // Filled by the graph after planning.
//   if (absl::Status s = budget.Check(need, reason::kOpMemory, "resize output 21845x16384");
//       !s.ok()) return s;
//
// Thread-safety: bytes() and Check() may be called from any thread; Set() by the graph
// (before the workers start, and when the batch pool grows).
#ifndef FLOWLOADER_STAGES_CORE_WORKER_MEMORY_H_
#define FLOWLOADER_STAGES_CORE_WORKER_MEMORY_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace flowloader {

class WorkerMemory {
 public:
  // Set makes `bytes` (> 0) the per-worker limit; `source` names the budget it is a share
  // of ("memory_limit_mb 1.0 GiB", "MemAvailable 19.4 GiB") and `workers` how many share it, for
  // messages. bytes <= 0: no limit (nothing known of the machine's memory). Called once,
  // before the workers start.
  void Set(int64_t bytes, int workers, const std::string& source);
  // Update changes the limit while the workers run (the batch pool grew or shrank).
  void Update(int64_t bytes) { bytes_.store(bytes, std::memory_order_relaxed); }

  // bytes is the per-worker limit, 0 when there is none.
  int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // Check is OK when `need` bytes fit the limit (or there is none), else ResourceExhausted
  // with `reason` in one line naming `what` needs it, the limit, and the knobs:
  // "decoded image 13000x13000 needs 483.5 MiB, over the 398.6 MiB a worker may hold for
  // one sample (memory_limit_mb 1.0 GiB shared by 2 workers, after the memory plan): raise
  // memory_limit_mb or lower num_workers".
  absl::Status Check(int64_t need, absl::string_view reason, absl::string_view what) const;

 private:
  std::atomic<int64_t> bytes_{0};
  // Constant once the workers start (Set runs before).
  int workers_ = 1;
  std::string source_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_WORKER_MEMORY_H_
