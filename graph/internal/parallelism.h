// parallelism.h: lets oneTBB run as many worker threads as the live pipelines asked for.
//
// oneTBB's default worker limit is (cores - 1): on 2 cores a task_arena(2) would get one
// worker, since the thread that builds the graph never joins it. Each pipeline holds a
// ScopedParallelism for its num_workers; the process-wide global_control is set to the
// sum over live pipelines (+1 for the external thread slot oneTBB counts).
//
// Thread-safety: constructor and destructor are thread-safe.
#ifndef FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_
#define FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_

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

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_PARALLELISM_H_
