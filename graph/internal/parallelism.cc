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
  // The new limit is made before the old one goes: between the two, oneTBB's default
  // (cores - 1 workers: 1 on 2 cores) applied, and an arena that asked for workers then
  // was held to it ("TBB Warning: The number of workers is currently limited to 1. The
  // request for 2 workers is ignored", seen with loaders made and closed from several
  // Python threads). With both alive the smaller applies, for that moment only.
  tbb::global_control* next = nullptr;
  if (total_workers > 0) {
    next = new tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                   static_cast<size_t>(total_workers) + 1);
  }
  delete control;  // Only one of ours is active after this, so its value is the limit.
  control = next;
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
