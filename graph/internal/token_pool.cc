// token_pool.cc: TokenPool, the batch buffers and their recycling, growth and retirement.
#include "graph/internal/token_pool.h"

#include <algorithm>
#include <mutex>

namespace flowloader {

absl::StatusOr<std::shared_ptr<TokenPool>> TokenPool::Create(
    std::shared_ptr<DeviceMemory> memory, int count, size_t buffer_bytes, int batch_size,
    std::shared_ptr<PipelineStats> stats) {
  std::shared_ptr<TokenPool> pool(new TokenPool(memory, stats, buffer_bytes, batch_size));
  std::lock_guard<std::mutex> lock(pool->mu_);
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<BatchToken*> token = pool->AllocateLocked();
    if (!token.ok()) return token.status();  // ~TokenPool frees the earlier ones.
  }
  pool->PublishBudgetLocked();
  return pool;
}

TokenPool::~TokenPool() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& token : tokens_) memory_->Free(token->buffer);
}

absl::StatusOr<BatchToken*> TokenPool::AllocateLocked() {
  auto token = std::make_unique<BatchToken>();
  absl::StatusOr<BatchBuffer> buffer = memory_->Allocate(buffer_bytes_);
  if (!buffer.ok()) return buffer.status();
  token->buffer = *buffer;
  token->samples.resize(static_cast<size_t>(batch_size_));
  token->keep.resize(static_cast<size_t>(batch_size_));
  for (SampleContext& s : token->samples) s.owner = token.get();
  tokens_.push_back(std::move(token));
  return tokens_.back().get();
}

void TokenPool::FreeLocked(BatchToken* token) {
  memory_->Free(token->buffer);
  tokens_.erase(std::find_if(
      tokens_.begin(), tokens_.end(),
      [token](const std::unique_ptr<BatchToken>& t) { return t.get() == token; }));
}

void TokenPool::PublishBudgetLocked() {
  const int64_t budget = static_cast<int64_t>(buffer_bytes_) * static_cast<int64_t>(tokens_.size());
  if (memory_->pinned()) {
    stats_->pinned_bytes_budget = budget;
  } else {
    stats_->host_bytes_budget = budget;
  }
}

std::atomic<int64_t>& TokenPool::InFlightGauge() const {
  return memory_->pinned() ? stats_->pinned_bytes_in_flight : stats_->host_bytes_in_flight;
}

std::vector<BatchToken*> TokenPool::Tokens() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<BatchToken*> out;
  for (auto& token : tokens_) out.push_back(token.get());
  return out;
}

void TokenPool::SetRecycler(std::function<void(BatchToken*)> recycler) {
  std::lock_guard<std::mutex> lock(mu_);
  recycler_ = std::move(recycler);
}

void TokenPool::MarkInFlight() {
  InFlightGauge().fetch_add(static_cast<int64_t>(buffer_bytes_), std::memory_order_relaxed);
}

void TokenPool::Release(BatchToken* token) {
  InFlightGauge().fetch_sub(static_cast<int64_t>(buffer_bytes_), std::memory_order_relaxed);
  // Under the lock so that Stop (which clears the recycler) never races a put into a
  // graph being torn down.
  std::lock_guard<std::mutex> lock(mu_);
  if (retire_pending_ > 0) {
    // Shrinking: this buffer is done with, so it is the one to free.
    --retire_pending_;
    FreeLocked(token);
    PublishBudgetLocked();
    return;
  }
  if (recycler_) recycler_(token);
}

int TokenPool::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(tokens_.size()) - retire_pending_;
}

absl::Status TokenPool::Add() {
  std::lock_guard<std::mutex> lock(mu_);
  if (retire_pending_ > 0) {
    --retire_pending_;  // The buffer still exists: keep it instead of freeing it.
    return absl::OkStatus();
  }
  absl::StatusOr<BatchToken*> token = AllocateLocked();
  if (!token.ok()) return token.status();
  PublishBudgetLocked();
  if (recycler_) recycler_(*token);
  return absl::OkStatus();
}

void TokenPool::Retire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<int>(tokens_.size()) - retire_pending_ > 1) ++retire_pending_;
}

std::shared_ptr<const Batch> TokenPool::Hand(BatchToken* token) {
  std::shared_ptr<TokenPool> self = shared_from_this();
  return std::shared_ptr<const Batch>(&token->batch,
                                      [self, token](const Batch*) { self->Release(token); });
}

}  // namespace flowloader
