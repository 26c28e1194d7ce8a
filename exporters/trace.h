// trace.h: a pipeline's recorded spans as a Chrome / Perfetto trace (JSON trace events).
//
// Open the file in https://ui.perfetto.dev or chrome://tracing: one row per worker
// thread, one box per stage body (named after the stage, with the sample index), inside
// a stage with ops (transforms) one box per op applied (category "op", named after the
// op, args naming its stage), and a "consumer wait" row showing when Next() blocked. Spans come from PipelineStats::trace,
// a bounded window (the first N spans of the run).
//
// Thread-safety: call after the pipeline has stopped (or accept a few half-written spans).
#ifndef FLOWLOADER_EXPORTERS_TRACE_H_
#define FLOWLOADER_EXPORTERS_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "graph/stage_stats.h"

namespace flowloader {

// ChromeTraceJson renders stats.trace (empty trace if none was recorded).
std::string ChromeTraceJson(const PipelineStats& stats);

// WriteChromeTrace writes ChromeTraceJson(stats) to `path`.
absl::Status WriteChromeTrace(const PipelineStats& stats, const std::string& path);

}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_TRACE_H_
