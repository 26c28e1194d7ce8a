// worker_memory.cc: WorkerMemory (see worker_memory.h).
#include "stages/core/worker_memory.h"

#include "absl/strings/str_cat.h"
#include "stages/core/memory_plan.h"
#include "stages/core/sample_error.h"

namespace flowloader {

void WorkerMemory::Set(int64_t bytes, int workers, const std::string& source) {
  workers_ = workers > 0 ? workers : 1;
  source_ = source;
  Update(bytes > 0 ? bytes : 0);
}

absl::Status WorkerMemory::Check(int64_t need, absl::string_view reason,
                                 absl::string_view what) const {
  const int64_t limit = bytes();
  if (limit <= 0 || need <= limit) return absl::OkStatus();
  const bool user_limit = source_.rfind("memory_limit_mb", 0) == 0;
  return SampleError(
      absl::StatusCode::kResourceExhausted, reason,
      absl::StrCat(what, " needs ", FormatBytes(need), ", over the ", FormatBytes(limit),
                   " a worker may hold for one sample (", source_, " shared by ", workers_,
                   workers_ == 1 ? " worker" : " workers", ", after the memory plan): ",
                   user_limit ? "raise memory_limit_mb or lower num_workers"
                              : "lower num_workers, or give the process more memory"));
}

}  // namespace flowloader
