// pipeline_families.h: turns PipelineStats snapshots into Prometheus metric families.
//
// The translation behind PipelineCollector, kept apart so it is testable without a server
// and so the metric catalogue (names, types, HELP) lives in one table.
//
// Thread-safety: AppendPipeline reads `stats` through its atomics and may run while the
// graph updates them; the stage and edge lists must be constant by then (the graph is
// built). `state` and `families` belong to the caller, who serialises access.
#ifndef FLOWLOADER_EXPORTERS_INTERNAL_PIPELINE_FAMILIES_H_
#define FLOWLOADER_EXPORTERS_INTERNAL_PIPELINE_FAMILIES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "graph/stage_stats.h"
#include "prometheus/metric_family.h"

namespace flowloader {
namespace exporters_internal {

// MonotonicState remembers what one pipeline last reported for derived counters.
// flowloader_stage_idle_seconds_total is computed (concurrency × uptime − busy − blocked)
// and busy time lands when an item finishes, so the raw value can dip between scrapes;
// Prometheus would read a dip as a counter reset. We report the running maximum instead.
struct MonotonicState {
  std::vector<double> stage_idle_seconds;  // Indexed like PipelineStats::stages().
};

// NewFamilies returns every family flowloader exports, empty, in exposition order.
std::vector<prometheus::MetricFamily> NewFamilies();

// AppendPipeline adds the series of one pipeline, read at `now`, to `families` (which
// came from NewFamilies()).
void AppendPipeline(const PipelineStats& stats, absl::Time now, MonotonicState* state,
                    std::vector<prometheus::MetricFamily>* families);

// DropEmptyFamilies removes families without series (no pipeline registered, or none
// with edges for the queue families), so the exposition carries no HELP lines for nothing.
void DropEmptyFamilies(std::vector<prometheus::MetricFamily>* families);

// SanitizeLabelName maps a build_info key onto the label-name alphabet
// [a-zA-Z_][a-zA-Z0-9_]*; returns "" for keys that cannot be used (empty, or reserved
// "__" prefix after mapping).
std::string SanitizeLabelName(absl::string_view key);

}  // namespace exporters_internal
}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_INTERNAL_PIPELINE_FAMILIES_H_
