#include <mutex>

#include "graph/internal/token_pool.h"

namespace flowloader {

absl::StatusOr<std::shared_ptr<TokenPool>> TokenPool::Create(
    std::shared_ptr<DeviceMemory> memory, int count, size_t buffer_bytes, int batch_size,
    std::shared_ptr<PipelineStats> stats) {
  std::shared_ptr<TokenPool> pool(new TokenPool(memory, stats, buffer_bytes));
  for (int i = 0; i < count; ++i) {
    auto token = std::make_unique<BatchToken>();
    absl::StatusOr<BatchBuffer> buffer = memory->Allocate(buffer_bytes);
    if (!buffer.ok()) return buffer.status();  // ~TokenPool frees the earlier ones.
    token->buffer = *buffer;
    token->samples.resize(static_cast<size_t>(batch_size));
    token->keep.resize(static_cast<size_t>(batch_size));
    for (SampleContext& s : token->samples) s.owner = token.get();
    pool->tokens_.push_back(std::move(token));
  }
  const int64_t budget = static_cast<int64_t>(buffer_bytes) * count;
  if (memory->pinned()) {
    stats->pinned_bytes_budget = budget;
  } else {
    stats->host_bytes_budget = budget;
  }
  return pool;
}

TokenPool::~TokenPool() {
  for (auto& token : tokens_) memory_->Free(token->buffer);
}

void TokenPool::SetRecycler(std::function<void(BatchToken*)> recycler) {
  std::lock_guard<std::mutex> lock(mu_);
  recycler_ = std::move(recycler);
}

void TokenPool::MarkInFlight() {
  auto& gauge = memory_->pinned() ? stats_->pinned_bytes_in_flight : stats_->host_bytes_in_flight;
  gauge.fetch_add(static_cast<int64_t>(buffer_bytes_), std::memory_order_relaxed);
}

void TokenPool::Release(BatchToken* token) {
  auto& gauge = memory_->pinned() ? stats_->pinned_bytes_in_flight : stats_->host_bytes_in_flight;
  gauge.fetch_sub(static_cast<int64_t>(buffer_bytes_), std::memory_order_relaxed);
  // Under the lock so that Stop (which clears the recycler) never races a put into a
  // graph being torn down.
  std::lock_guard<std::mutex> lock(mu_);
  if (recycler_) recycler_(token);
}

std::shared_ptr<const Batch> TokenPool::Hand(BatchToken* token) {
  std::shared_ptr<TokenPool> self = shared_from_this();
  return std::shared_ptr<const Batch>(&token->batch,
                                      [self, token](const Batch*) { self->Release(token); });
}

}  // namespace flowloader
