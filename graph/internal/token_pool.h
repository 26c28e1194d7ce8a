// token_pool.h: the pool of batch buffers that bounds a pipeline's memory.
//
// A BatchToken is a batch buffer plus the per-slot SampleContexts and the Batch record
// being filled. The pool starts with prefetch_batches of them. While the graph runs, a
// released token goes back into the graph's free-buffer node (the recycler); after Stop it
// just stays in the pool. The pool is shared by the graph and every batch handed out, so a
// user may hold a batch past the pipeline's end.
//
// The online autotuner resizes the pool while batches flow: Add allocates one more buffer
// (its caller has checked the memory plan first) and hands it to the recycler; Retire
// marks a buffer to be freed instead of recycled the next time one is released, so a
// buffer in use is never taken away and nothing it holds is lost.
//
// Thread-safety: every public method is thread-safe.
#ifndef FLOWLOADER_GRAPH_INTERNAL_TOKEN_POOL_H_
#define FLOWLOADER_GRAPH_INTERNAL_TOKEN_POOL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "graph/stage.h"
#include "graph/stage_stats.h"
#include "stages/collate/batch.h"
#include "stages/upload/device_memory.h"

namespace flowloader {

struct BatchToken {
  BatchBuffer buffer;
  Batch batch;                         // What the consumer sees.
  std::vector<SampleContext> samples;  // One per slot; reused batch after batch.
  std::vector<bool> keep;              // Scratch for collect.
  int64_t sequence = 0;                // Delivery order across epochs.
  int size = 0;                        // Samples dispatched into this batch.
  int64_t end_position = 0;            // Epoch position just past its last sample.
  bool last_of_epoch = false;          // The source planned it as its epoch's last.
  std::atomic<int> remaining{0};       // Samples not yet through every stage.
  // Under on_error=fail, the first failed sample's status: the pipeline stops when this
  // batch's turn comes, so the error reported is the first in delivery order.
  absl::Status fatal;
  // The stage that failed each of batch.skipped (null: none known), whose error count
  // grows when the batch is delivered, with the summary's skips.
  std::vector<StageStats*> skipped_stages;
};

class TokenPool : public std::enable_shared_from_this<TokenPool> {
 public:
  // Create allocates `count` buffers of `buffer_bytes` (rows of `batch_size` samples)
  // from `memory`.
  static absl::StatusOr<std::shared_ptr<TokenPool>> Create(
      std::shared_ptr<DeviceMemory> memory, int count, size_t buffer_bytes, int batch_size,
      std::shared_ptr<PipelineStats> stats);
  ~TokenPool();

  // Tokens lists the buffers the pool holds now (Start puts each into the graph).
  std::vector<BatchToken*> Tokens();

  // SetRecycler sets where released tokens go; nullptr keeps them (after Stop).
  void SetRecycler(std::function<void(BatchToken*)> recycler);

  // Hand wraps a token for the consumer: the returned Batch releases it when dropped.
  std::shared_ptr<const Batch> Hand(BatchToken* token);

  // MarkInFlight / Release keep the bytes-in-flight gauge. Release frees the buffer
  // instead of recycling it while a retirement is pending.
  void MarkInFlight();
  void Release(BatchToken* token);

  // Count is the number of buffers the pool is heading for: those it holds less the
  // retirements still pending.
  int Count();
  // Add raises Count by one: it cancels a pending retirement if there is one, else it
  // allocates a buffer and hands it to the recycler (the graph's free buffers). The caller
  // checks the memory plan before calling.
  absl::Status Add();
  // Retire lowers Count by one (never below 1): the next released buffer is freed.
  void Retire();
  size_t buffer_bytes() const { return buffer_bytes_; }

 private:
  TokenPool(std::shared_ptr<DeviceMemory> memory, std::shared_ptr<PipelineStats> stats,
            size_t buffer_bytes, int batch_size)
      : memory_(std::move(memory)),
        stats_(std::move(stats)),
        buffer_bytes_(buffer_bytes),
        batch_size_(batch_size) {}
  absl::StatusOr<BatchToken*> AllocateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeLocked(BatchToken* token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishBudgetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::atomic<int64_t>& InFlightGauge() const;

  const std::shared_ptr<DeviceMemory> memory_;
  const std::shared_ptr<PipelineStats> stats_;
  const size_t buffer_bytes_;
  const int batch_size_;
  std::mutex mu_;
  std::vector<std::unique_ptr<BatchToken>> tokens_ ABSL_GUARDED_BY(mu_);
  int retire_pending_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<void(BatchToken*)> recycler_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_TOKEN_POOL_H_
