#include "graph/stage_stats.h"

#include <mutex>
#include <algorithm>

namespace flowloader {

void LatencyHistogram::Observe(int64_t nanos) {
  const double seconds = static_cast<double>(nanos) * 1e-9;
  const size_t bucket =
      std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(nanos, std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::Read() const {
  Snapshot s;
  for (size_t i = 0; i < counts_.size(); ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];  // Sum of buckets, so count and buckets always agree.
  }
  s.sum_seconds = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) * 1e-9;
  return s;
}

void WaitSpread::Observe(int64_t nanos) {
  const uint64_t micros = static_cast<uint64_t>(std::max<int64_t>(nanos, 0) / 1000);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(nanos, std::memory_order_relaxed);
  sum_squared_micros_.fetch_add(micros * micros, std::memory_order_relaxed);
}

WaitSpread::Snapshot WaitSpread::Read() const {
  Snapshot s;
  s.count = count_.load(std::memory_order_relaxed);
  s.sum_seconds = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) * 1e-9;
  s.sum_squares =
      static_cast<double>(sum_squared_micros_.load(std::memory_order_relaxed)) * 1e-12;
  return s;
}

void StageStats::CountError(absl::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++errors_[std::string(reason)];
}

std::map<std::string, uint64_t> StageStats::Errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

uint64_t StageStats::TotalErrors() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = 0;
  for (const auto& [reason, n] : errors_) total += n;
  return total;
}

void PipelineStats::CountSkip(absl::string_view reason) {
  std::lock_guard<std::mutex> lock(skips_mu_);
  ++skip_reasons_[std::string(reason)];
}

std::map<std::string, uint64_t> PipelineStats::SkipReasons() const {
  std::lock_guard<std::mutex> lock(skips_mu_);
  return skip_reasons_;
}

void TraceBuffer::Record(int32_t stage, int64_t start_nanos, int64_t duration_nanos,
                         int64_t item, int32_t op) {
  if (next_.load(std::memory_order_relaxed) >= spans_.size()) return;  // Window is over.
  const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
  if (i >= spans_.size()) return;
  static std::atomic<uint32_t> thread_counter{0};
  thread_local const uint32_t thread = thread_counter.fetch_add(1) + 1;
  spans_[i] = Span{stage, thread, start_nanos, duration_nanos, item, op};
  done_.fetch_add(1, std::memory_order_release);
}

std::vector<TraceBuffer::Span> TraceBuffer::Spans() const {
  const size_t n = std::min(done_.load(std::memory_order_acquire), spans_.size());
  return std::vector<Span>(spans_.begin(), spans_.begin() + static_cast<ptrdiff_t>(n));
}

int32_t PipelineStats::StageIndex(const StageStats* stage) const {
  for (size_t i = 0; i < stages_.size(); ++i) {
    if (stages_[i].get() == stage) return static_cast<int32_t>(i);
  }
  return -1;
}

StageStats* PipelineStats::AddStage(const std::string& name, int concurrency) {
  stages_.push_back(std::make_unique<StageStats>(name, concurrency));
  return stages_.back().get();
}

EdgeStats* PipelineStats::AddEdge(const std::string& from, const std::string& to,
                                  int64_t capacity) {
  edges_.push_back(std::make_unique<EdgeStats>(from, to, capacity));
  return edges_.back().get();
}

StageStats* PipelineStats::Stage(absl::string_view name) const {
  for (const auto& s : stages_) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

void PipelineStats::SetSources(std::vector<std::string> names) {
  source_samples_ = std::make_unique<std::atomic<uint64_t>[]>(names.size());
  source_names = std::move(names);
}

void PipelineStats::CountSources(const std::vector<int32_t>& sources) {
  if (source_samples_ == nullptr) return;
  // One source (the common case) is one add for the batch, not one per row.
  if (source_names.size() == 1) {
    source_samples_[0].fetch_add(sources.size(), std::memory_order_relaxed);
    return;
  }
  for (int32_t s : sources) source_samples_[s].fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> PipelineStats::SourceSamples() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t i = 0; i < source_names.size(); ++i) {
    out.emplace_back(source_names[i], source_samples_[i].load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace flowloader
