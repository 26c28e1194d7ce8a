// parallelism.h: lets oneTBB run as many worker threads as the live pipelines asked for,
// and gates how many of them a running pipeline uses (online autotune).
//
// oneTBB's default worker limit is (cores - 1): on 2 cores a task_arena(2) would get one
// worker, since the thread that builds the graph never joins it. Each pipeline holds a
// ScopedParallelism for its num_workers; the process-wide global_control is set to the
// sum over live pipelines (+1 for the external thread slot oneTBB counts).
//
// ConcurrencyGate: oneTBB fixes a node's concurrency and an arena's size at construction,
// so a pipeline whose worker count changes while it runs is built at its maximum and each
// sample body passes this gate, which admits at most `limit()` bodies at a time. A body
// over the limit blocks (on a condition variable, using no CPU) until another leaves;
// the blocked sample keeps its place, so nothing is lost or reordered.
//
// Thread-safety: ScopedParallelism's constructor and destructor are thread-safe; every
// ConcurrencyGate method is thread-safe.
#ifndef FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_
#define FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace flowloader {

class ScopedParallelism {
 public:
  explicit ScopedParallelism(int workers);
  ~ScopedParallelism();
  ScopedParallelism(const ScopedParallelism&) = delete;
  ScopedParallelism& operator=(const ScopedParallelism&) = delete;

 private:
  const int workers_;
};

class ConcurrencyGate {
 public:
  // `limit` >= 1 bodies may run at once.
  explicit ConcurrencyGate(int limit) : limit_(limit) {}
  ConcurrencyGate(const ConcurrencyGate&) = delete;
  ConcurrencyGate& operator=(const ConcurrencyGate&) = delete;

  // Enter blocks until fewer than limit() bodies are inside, then counts this one in.
  void Enter();
  // Leave counts a body out and wakes one waiting for its turn.
  void Leave();
  // SetLimit changes the limit (>= 1); a raise wakes the waiters at once, a cut takes
  // effect as bodies leave (no running body is interrupted).
  void SetLimit(int limit);
  int limit() const { return limit_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int> limit_;
  std::mutex mu_;
  std::condition_variable turn_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_
