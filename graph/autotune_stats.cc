// autotune_stats.cc: AutotuneStats.
#include "graph/autotune_stats.h"

namespace flowloader {

void AutotuneStats::Record(const AutotuneRecord& record) {
  if (record.knob == kKnobNumWorkers) num_workers.store(record.to);
  if (record.knob == kKnobPrefetchBatches) prefetch_batches.store(record.to);
  if (record.knob == kKnobReadAhead) read_ahead.store(record.to);
  std::lock_guard<std::mutex> lock(mu_);
  decisions_.push_back(record);
}

std::vector<AutotuneRecord> AutotuneStats::Decisions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return decisions_;
}

std::map<std::pair<std::string, std::string>, uint64_t> AutotuneStats::Counts() const {
  std::map<std::pair<std::string, std::string>, uint64_t> counts;
  for (const char* knob : {kKnobNumWorkers, kKnobPrefetchBatches, kKnobReadAhead}) {
    if (std::string(knob) == kKnobReadAhead && read_ahead.load() == 0) continue;
    counts[{knob, "up"}] = 0;
    counts[{knob, "down"}] = 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const AutotuneRecord& d : decisions_) ++counts[{d.knob, d.to > d.from ? "up" : "down"}];
  return counts;
}

}  // namespace flowloader
