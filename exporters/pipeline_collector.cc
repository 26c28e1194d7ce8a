// pipeline_collector.cc: PipelineCollector, the scrape-time reader of PipelineStats.
#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "exporters/internal/pipeline_families.h"
#include "exporters/metrics_exporter.h"

namespace flowloader {

// Entry is one registered pipeline. `key` identifies it for Unregister even after the
// weak pointer expires; it is never dereferenced.
struct PipelineCollector::Entry {
  std::weak_ptr<const PipelineStats> stats;
  const PipelineStats* key = nullptr;
  exporters_internal::MonotonicState state;
};

namespace {

// ValidateShape rejects pipelines whose series would collide.
absl::Status ValidateShape(const PipelineStats& stats) {
  if (stats.pipeline().empty()) {
    return absl::InvalidArgumentError("pipeline name is empty; it is the `pipeline` label");
  }
  std::set<std::string> stages;
  for (const auto& s : stats.stages()) {
    if (!stages.insert(s->name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("pipeline '", stats.pipeline(),
                                                     "' has two stages named '", s->name(),
                                                     "'"));
    }
  }
  std::set<std::pair<std::string, std::string>> edges;
  for (const auto& e : stats.edges()) {
    if (!edges.insert({e->from, e->to}).second) {
      return absl::InvalidArgumentError(absl::StrCat("pipeline '", stats.pipeline(),
                                                     "' has two edges ", e->from, " -> ",
                                                     e->to));
    }
  }
  return absl::OkStatus();
}

}  // namespace

PipelineCollector::PipelineCollector(Clock clock) : clock_(std::move(clock)) {}

PipelineCollector::~PipelineCollector() = default;

absl::Status PipelineCollector::Register(std::shared_ptr<const PipelineStats> stats) {
  if (stats == nullptr) return absl::InvalidArgumentError("PipelineStats is null");
  if (absl::Status s = ValidateShape(*stats); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  PruneExpiredLocked();
  for (const auto& e : entries_) {
    const std::shared_ptr<const PipelineStats> live = e->stats.lock();
    if (live != nullptr && live->pipeline() == stats->pipeline()) {
      return absl::AlreadyExistsError(
          absl::StrCat("a pipeline named '", stats->pipeline(),
                       "' is already exported; pipeline names must be unique per server"));
    }
  }
  auto entry = std::make_unique<Entry>();
  entry->key = stats.get();
  entry->stats = std::move(stats);
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

bool PipelineCollector::Unregister(const PipelineStats* stats) {
  std::lock_guard<std::mutex> lock(mu_);
  // Expired entries go first: their address may have been reused by a new pipeline.
  PruneExpiredLocked();
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return e->key == stats; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

int PipelineCollector::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  PruneExpiredLocked();
  return static_cast<int>(entries_.size());
}

void PipelineCollector::PruneExpiredLocked() const {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const auto& e) { return e->stats.expired(); }),
                 entries_.end());
}

std::vector<prometheus::MetricFamily> PipelineCollector::Collect() const {
  std::vector<prometheus::MetricFamily> families = exporters_internal::NewFamilies();
  const absl::Time now = clock_();
  // The lock is held for the whole scrape: it serialises concurrent scrapes over the
  // MonotonicState and costs a Register at most one scrape's worth of waiting.
  std::lock_guard<std::mutex> lock(mu_);
  PruneExpiredLocked();
  for (const auto& e : entries_) {
    // Holding a strong reference for the read lets a pipeline be destroyed mid-scrape.
    const std::shared_ptr<const PipelineStats> stats = e->stats.lock();
    if (stats == nullptr) continue;
    exporters_internal::AppendPipeline(*stats, now, &e->state, &families);
  }
  exporters_internal::DropEmptyFamilies(&families);
  return families;
}

}  // namespace flowloader
