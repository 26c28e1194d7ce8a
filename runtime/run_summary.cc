// run_summary.cc: RunFactsFor and RunSummaryJson (see run_summary.h).
#include "runtime/run_summary.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "stages/core/resources.h"

namespace flowloader {
namespace {

// Quoted is `text` as a JSON string: quotes, backslashes and control characters escaped.
std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppend(&out, absl::StrFormat("\\u%04x", c));
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// SchemesJson is remote storage's counts by scheme: requests, bytes, retries, errors by
// code and the request latency (count, sum, median, p90, p99 estimated from the
// histogram), the numbers /metrics exports.
std::string SchemesJson(const StorageStats& stats) {
  std::string json = "{";
  bool first = true;
  for (const StorageSchemeStats& s : stats.Read()) {
    std::vector<std::string> errors;
    for (const auto& [code, n] : s.errors) errors.push_back(absl::StrCat(Quoted(code), ": ", n));
    absl::StrAppend(
        &json, first ? "" : ", ", Quoted(s.scheme), ": {\"requests\": ", s.requests,
        ", \"bytes\": ", s.bytes, ", \"retries\": ", s.retries, ", \"errors\": {",
        absl::StrJoin(errors, ", "), "}, \"latency_seconds\": {\"count\": ", s.requests,
        ", \"sum\": ", absl::StrFormat("%.6f", s.latency_sum_seconds),
        ", \"p50\": ", absl::StrFormat("%.6f", s.LatencyQuantile(0.5)),
        ", \"p90\": ", absl::StrFormat("%.6f", s.LatencyQuantile(0.9)),
        ", \"p99\": ", absl::StrFormat("%.6f", s.LatencyQuantile(0.99)), "}}");
    first = false;
  }
  return json + "}";
}

}  // namespace

RunFacts RunFactsFor(const PipelineOptions& options, double wall, int64_t epochs,
                     double startup) {
  RunFacts f;
  f.wall_seconds = wall;
  f.epochs = epochs;
  f.num_workers = options.num_workers;
  f.batch_size = options.batch_size;
  f.prefetch_batches = options.prefetch_batches;
  f.cores_available = UsableCpus();
  f.startup_seconds = startup >= 0 ? std::min(startup, wall) : wall;
  f.steady_seconds = wall - f.startup_seconds;
  return f;
}

std::string RunSummaryJson(const RunSnapshot& snapshot, const Cursor& checkpoint,
                           double first_batch_seconds,
                           const std::vector<double>& epoch_end_seconds) {
  std::string json = SummaryJson(snapshot);
  if (json.empty() || json.back() != '}') return json;
  json.pop_back();
  absl::StrAppend(&json, ", \"checkpoint\": {\"epoch\": ", checkpoint.epoch,
                  ", \"batch\": ", checkpoint.batch, "}");
  absl::StrAppend(&json, ", \"first_batch_seconds\": ",
                  absl::StrFormat("%.6f", first_batch_seconds), ", \"epoch_end_seconds\": [",
                  absl::StrJoin(epoch_end_seconds, ", ",
                                [](std::string* out, double t) {
                                  absl::StrAppend(out, absl::StrFormat("%.6f", t));
                                }),
                  "]}");
  return json;
}

std::string WithOutputs(std::string json, const std::vector<OutputSpec>& outputs,
                        const LabelSpec& label) {
  if (json.empty() || json.back() != '}') return json;
  json.pop_back();
  absl::StrAppend(&json, ", \"outputs\": {");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputSpec& o = outputs[i];
    absl::StrAppend(&json, i == 0 ? "" : ", ", "\"", o.name, "\": {\"shape\": [",
                    absl::StrJoin(o.sample_shape, ", "), "], \"dtype\": \"",
                    DTypeName(o.dtype()), "\"}");
  }
  absl::StrAppend(&json, outputs.empty() ? "" : ", ", "\"label\": {\"shape\": [",
                  absl::StrJoin(label.sample_shape(), ", "), "], \"dtype\": \"",
                  DTypeName(label.dtype()), "\"}");
  return json + "}}";
}

std::string WithStorage(std::string json, const Pipeline& pipeline) {
  const StorageEnv* storage = pipeline.storage();
  if (storage == nullptr || json.empty() || json.back() != '}') return json;
  // Any remote Env made (s3, or plain http(s) whose Describe line is empty): its requests
  // and read-ahead figures are what a run from a server is judged by.
  if (storage->remote_envs().empty()) return json;
  const std::vector<std::string> remote = storage->Describe();
  std::vector<std::string> quoted;
  for (const std::string& line : remote) quoted.push_back(Quoted(line));
  json.pop_back();
  absl::StrAppend(&json, ", \"storage\": {\"remote\": [", absl::StrJoin(quoted, ", "),
                  "], \"requests\": ", storage->requests(), ", \"retries\": ",
                  storage->retries(), ", \"schemes\": ", SchemesJson(*storage->storage_stats()));
  if (const ReadAheadFigures r = storage->storage_stats()->read_ahead(); r.present) {
    absl::StrAppend(&json, ", \"read_ahead\": {\"mode\": \"", r.adaptive ? "auto" : "fixed",
                    "\", \"limit\": ", r.limit, ", \"floor\": ", r.floor,
                    ", \"peak_limit\": ", r.peak_limit,
                    ", \"peak_in_flight\": ", r.peak_in_flight, ", \"mean_in_flight\": ",
                    absl::StrFormat("%.1f", r.mean_in_flight), ", \"probes\": ", r.probes,
                    ", \"probes_undone\": ", r.probes_undone, ", \"fetches\": ", r.fetches,
                    ", \"threads\": ", r.threads, ", \"mean_latency_seconds\": ",
                    absl::StrFormat("%.6f", r.mean_latency_seconds), ", \"started\": ", r.started,
                    ", \"ready\": ", r.ready, ", \"waited\": ", r.waited,
                    ", \"not_started\": ", r.not_started, ", \"reused_buffers\": ", r.reused,
                    ", \"urgent\": ", r.urgent, "}");
  }
  if (storage->admitted_shards() > 0) {  // The block cache of remote shards.
    absl::StrAppend(&json, ", \"blocks\": {\"fetched\": ", storage->block_fetches(),
                    ", \"member_reads\": ", storage->member_reads(), "}");
  }
  if (const internal::DiskCache* cache = storage->disk_cache(); cache != nullptr) {
    const internal::DiskCacheStats s = cache->stats();
    absl::StrAppend(&json, ", \"cache\": {\"dir\": ", Quoted(cache->options().dir),
                    ", \"budget_bytes\": ", cache->options().bytes,
                    ", \"used_bytes\": ", cache->used_bytes(), ", \"hits\": ", s.hits,
                    ", \"misses\": ", s.misses, ", \"hit_bytes\": ", s.hit_bytes,
                    ", \"written_bytes\": ", s.written_bytes, ", \"evicted\": ", s.evicted,
                    ", \"corrupt\": ", s.corrupt, ", \"write_errors\": ", s.write_errors,
                    "}");
  }
  absl::StrAppend(&json, "}}");
  return json;
}

std::string WithShards(std::string json, const Pipeline& pipeline) {
  const Dataset* dataset = pipeline.dataset();
  if (dataset == nullptr || dataset->shards().empty() || json.empty() || json.back() != '}') {
    return json;
  }
  const Dataset::ShardIndexCounts& c = dataset->shard_index_counts();
  json.pop_back();
  absl::StrAppend(&json, ", \"shards\": {\"count\": ", dataset->shards().size(),
                  ", \"index\": {\"used\": ", c.used, ", \"scanned\": ",
                  c.missing + c.stale + c.damaged, ", \"missing\": ", c.missing,
                  ", \"stale\": ", c.stale, ", \"damaged\": ", c.damaged, "}}}");
  return json;
}

std::string WithAnnotations(std::string json, const detection::CocoDataset* coco) {
  if (coco == nullptr || json.empty() || json.back() != '}') return json;
  json.pop_back();
  absl::StrAppend(&json, ", \"annotations\": {\"categories\": [");
  for (size_t i = 0; i < coco->categories().size(); ++i) {
    const detection::CocoCategory& c = coco->categories()[i];
    // nlohmann writes the name as a JSON string (bad UTF-8 replaced, never thrown).
    const std::string name = nlohmann::json(c.name).dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    absl::StrAppend(&json, i == 0 ? "" : ", ", "{\"id\": ", c.id, ", \"name\": ", name,
                    ", \"label\": ", c.label, "}");
  }
  absl::StrAppend(&json, "], \"skipped\": {");
  bool first = true;
  for (const auto& [reason, count] : coco->skipped()) {
    absl::StrAppend(&json, first ? "" : ", ", "\"", reason, "\": ", count);
    first = false;
  }
  return json + "}}}";
}

std::string PipelineSummaryJson(const Pipeline& pipeline, double wall, int64_t epochs,
                                double startup, double first_batch_seconds,
                                const std::vector<double>& epoch_end_seconds) {
  const RunSnapshot snapshot =
      Snapshot(*pipeline.stats(), RunFactsFor(pipeline.options(), wall, epochs, startup));
  return WithAnnotations(
      WithShards(
          WithStorage(
              WithOutputs(RunSummaryJson(snapshot, pipeline.Checkpoint(), first_batch_seconds,
                                         epoch_end_seconds),
                          pipeline.outputs(), pipeline.label()),
              pipeline),
          pipeline),
      pipeline.annotations());
}

}  // namespace flowloader
