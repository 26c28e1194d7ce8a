#include "absl/base/thread_annotations.h"
#include "graph/internal/parallelism.h"

#include <mutex>
#include <oneapi/tbb/global_control.h>

#include <memory>


namespace flowloader {
namespace {

std::mutex mu;  // std::mutex: ThreadSanitizer sees pthread locks, not absl's futexes.
int total_workers ABSL_GUARDED_BY(mu) = 0;
tbb::global_control* control ABSL_GUARDED_BY(mu) = nullptr;

void ApplyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  delete control;  // Only one of ours is ever active, so its value is the limit.
  control = nullptr;
  if (total_workers > 0) {
    control = new tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                      static_cast<size_t>(total_workers) + 1);
  }
}

}  // namespace

ScopedParallelism::ScopedParallelism(int workers) : workers_(workers) {
  std::lock_guard<std::mutex> lock(mu);
  total_workers += workers_;
  ApplyLocked();
}

ScopedParallelism::~ScopedParallelism() {
  std::lock_guard<std::mutex> lock(mu);
  total_workers -= workers_;
  ApplyLocked();
}

void ConcurrencyGate::Enter() {
  std::unique_lock<std::mutex> lock(mu_);
  turn_.wait(lock, [this] { return inside_ < limit_.load(std::memory_order_relaxed); });
  ++inside_;
}

void ConcurrencyGate::Leave() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --inside_;
  }
  turn_.notify_one();
}

void ConcurrencyGate::SetLimit(int limit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_.store(limit, std::memory_order_relaxed);
  }
  turn_.notify_all();
}

}  // namespace flowloader
