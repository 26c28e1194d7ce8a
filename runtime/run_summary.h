// run_summary.h: the summary JSON of a run, shared by `flowloader run --summary_json`
// and the Python module's DataLoader.stats(), so both write the same fields.
//
// Thread-safety: pure functions on values.
#ifndef FLOWLOADER_RUNTIME_RUN_SUMMARY_H_
#define FLOWLOADER_RUNTIME_RUN_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "exporters/report.h"
#include "runtime/pipeline.h"

namespace flowloader {

// RunFactsFor is what the report needs about a run of a pipeline built from `options`:
// `wall` seconds so far, `epochs` completed, `startup` the seconds to the first batch on
// the same clock (< 0 while none has come: the whole run so far is start-up).
RunFacts RunFactsFor(const PipelineOptions& options, double wall, int64_t epochs,
                     double startup);

// RunSummaryJson is SummaryJson(snapshot) plus the run's own fields: "checkpoint"
// {"epoch", "batch"} (where to resume), "first_batch_seconds" (from process start; < 0
// when no batch came) and "epoch_end_seconds" (when each epoch ended, on the `seconds`
// clock, so later epochs with warm seek indexes can be told from the first).
std::string RunSummaryJson(const RunSnapshot& snapshot, const Cursor& checkpoint,
                           double first_batch_seconds,
                           const std::vector<double>& epoch_end_seconds);

// WithOutputs adds to the summary object `json` its "outputs": {"NAME": {"shape":
// [per-sample shape], "dtype": "float32" or "uint8"}, ...}, one per batch tensor, in
// Batch::tensors' order, then the label tensor as "label": {"shape": [] or [C],
// "dtype": "int64" or "float32"} (Batch::label).
std::string WithOutputs(std::string json, const std::vector<OutputSpec>& outputs,
                        const LabelSpec& label = LabelSpec{});

// WithStorage adds to the summary object `json`, when the data is in object storage,
// "storage": {"remote": ["s3: endpoint URL (SOURCE), region R, path-style, credentials
// from SOURCE"], "requests": N, "retries": N}: where the data came from and whose
// credentials signed the requests (never a secret); with cache_dir also "cache": {"dir",
// "budget_bytes", "used_bytes", "hits", "misses", "hit_bytes", "written_bytes", "evicted",
// "corrupt", "write_errors"} (this process's use of the disk cache). Unchanged otherwise.
std::string WithStorage(std::string json, const Pipeline& pipeline);

// WithShards adds, for tar shards, "shards": {"count": N, "index": {"used", "scanned",
// "missing", "stale", "damaged"}}: how many shards opened from their index file
// (`pack` writes one, stages/reader/tar_index_file.h) and how many were scanned instead,
// by why (no index, an index that no longer matches its shard, a damaged index).
// Unchanged for data that is not tar shards.
std::string WithShards(std::string json, const Pipeline& pipeline);

// WithAnnotations adds, for a pipeline reading a COCO file (coco not null),
// "annotations": {"categories": [{"id", "name", "label"}, ...], "skipped": {reason:
// count}}: the category id → label map and the annotations dropped.
std::string WithAnnotations(std::string json, const detection::CocoDataset* coco);

// PipelineSummaryJson is RunSummaryJson of `pipeline`'s counters now (it may be running)
// with RunFactsFor(pipeline.options(), wall, epochs, startup), its Checkpoint() and its
// outputs (WithOutputs) and annotations (WithAnnotations).
std::string PipelineSummaryJson(const Pipeline& pipeline, double wall, int64_t epochs,
                                double startup, double first_batch_seconds,
                                const std::vector<double>& epoch_end_seconds);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_RUN_SUMMARY_H_
