// report.cc: Snapshot(), SummaryJson() and StageTable(); the rules are in diagnose.cc.
#include "exporters/report.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exporters/internal/json.h"

namespace flowloader {
namespace {

using exporters_internal::JsonFloat;
using exporters_internal::JsonString;

double Seconds(int64_t nanos) { return static_cast<double>(nanos) * 1e-9; }

// ErrorsByReason is the summary's "errors": the delivered skips by reason when the graph
// counts them, so they hold the epochs delivered and nothing read ahead of them.
std::map<std::string, uint64_t> ErrorsByReason(const RunSnapshot& run) {
  if (run.skip_reasons_counted) return run.skip_reasons;
  std::map<std::string, uint64_t> total;
  for (const StageLoad& s : run.stages) {
    for (const auto& [reason, n] : s.errors) total[reason] += n;
  }
  return total;
}

uint64_t StageErrors(const StageLoad& s) {
  uint64_t n = 0;
  for (const auto& [reason, count] : s.errors) n += count;
  return n;
}

// OpsJson is a stage's ", \"ops\": [...]" member, or "" for a stage without ops.
std::string OpsJson(const StageLoad& s) {
  if (s.ops.empty()) return "";
  std::vector<std::string> ops;
  for (const OpLoad& op : s.ops) {
    ops.push_back(absl::StrCat("{\"op\": ", JsonString(op.name),
                               ", \"busy_seconds\": ", JsonFloat(op.busy_seconds),
                               ", \"share\": ", JsonFloat(OpShare(s, op)),
                               ", \"applied\": ", op.applied, "}"));
  }
  return absl::StrCat(", \"ops\": [", absl::StrJoin(ops, ", "), "]");
}

std::string DiagnosisJson(const Diagnosis& d) {
  std::vector<std::string> notes;
  for (const std::string& n : d.notes) notes.push_back(JsonString(n));
  return absl::StrCat(
      "{\"bottleneck\": ", JsonString(d.bottleneck),
      ", \"busiest_stage\": ", JsonString(d.busiest_stage),
      ", \"busiest_utilization\": ", JsonFloat(d.busiest_utilization),
      ", \"consumer_wait_share\": ", JsonFloat(d.consumer_wait_share),
      ", \"loader_bound\": ", d.loader_bound ? "true" : "false",
      ", \"too_short\": ", d.too_short ? "true" : "false",
      ", \"wait_cv\": ", JsonFloat(d.wait_cv),
      ", \"advice\": ", JsonString(d.advice), ", \"notes\": [", absl::StrJoin(notes, ", "),
      "]}");
}

}  // namespace

RunSnapshot Snapshot(const PipelineStats& stats, const RunFacts& facts) {
  RunSnapshot run;
  run.facts = facts;
  run.samples = stats.samples.load(std::memory_order_relaxed);
  run.batches = stats.batches.load(std::memory_order_relaxed);
  run.skipped = stats.skipped.load(std::memory_order_relaxed);
  run.skip_reasons_counted = stats.counts_skips.load(std::memory_order_relaxed);
  if (run.skip_reasons_counted) run.skip_reasons = stats.SkipReasons();
  run.consumer_wait_seconds = Seconds(stats.consumer_wait_nanos.load(std::memory_order_relaxed));
  const WaitSpread::Snapshot waits = stats.steady_consumer_waits.Read();
  run.steady_waits = waits.count;
  run.steady_wait_seconds = waits.sum_seconds;
  run.steady_wait_squares = waits.sum_squares;
  run.host_bytes_in_flight = stats.host_bytes_in_flight.load(std::memory_order_relaxed);
  run.host_bytes_budget = stats.host_bytes_budget.load(std::memory_order_relaxed);
  run.pinned_bytes_in_flight = stats.pinned_bytes_in_flight.load(std::memory_order_relaxed);
  run.pinned_bytes_budget = stats.pinned_bytes_budget.load(std::memory_order_relaxed);
  run.memory_plan = stats.memory_plan;
  run.source_samples = stats.SourceSamples();
  if (stats.storage != nullptr) {
    run.storage = stats.storage->Read();
    run.read_ahead = stats.storage->read_ahead();
  }
  run.autotune = stats.autotune.enabled.load();
  if (run.autotune) {
    // The values in effect now, not the options' "auto".
    run.facts.num_workers = stats.autotune.num_workers.load();
    run.facts.prefetch_batches = stats.autotune.prefetch_batches.load();
    run.autotune_decisions = stats.autotune.Decisions();
    run.autotune_read_ahead = stats.autotune.read_ahead.load();
  }
  for (const auto& s : stats.stages()) {
    StageLoad load;
    load.name = s->name();
    load.kind = s->kind();
    load.type = s->type();
    load.concurrency = s->concurrency();
    // Under autotune a num_workers stage is built at the budget but runs at the tuned
    // count: judge its busy share against what runs.
    if (run.autotune && s->follows_num_workers()) load.concurrency = run.facts.num_workers;
    load.concurrency_source = s->follows_num_workers() ? ConcurrencySource::kNumWorkers
                                                       : ConcurrencySource::kFixed;
    load.items = s->items_out.load(std::memory_order_relaxed);
    load.busy_seconds = Seconds(s->busy_nanos.load(std::memory_order_relaxed));
    load.blocked_seconds = Seconds(s->blocked_nanos.load(std::memory_order_relaxed));
    load.errors = s->Errors();
    load.worker_group = s->worker_group();
    for (const OpCostRow& row : s->op_costs()) {
      load.ops.push_back({row.name, Seconds(row.busy_nanos->load(std::memory_order_relaxed)),
                          static_cast<uint64_t>(row.applied->load(std::memory_order_relaxed))});
    }
    run.stages.push_back(std::move(load));
  }
  return run;
}

namespace {

// AutotuneJson is the summary's "autotune" object: the values settled on and every
// decision, in order.
std::string AutotuneJson(const RunSnapshot& run) {
  std::vector<std::string> decisions;
  for (const AutotuneRecord& d : run.autotune_decisions) {
    decisions.push_back(absl::StrCat("{\"seconds\": ", JsonFloat(d.seconds),
                                     ", \"knob\": ", JsonString(d.knob), ", \"from\": ", d.from,
                                     ", \"to\": ", d.to, ", \"reason\": ", JsonString(d.reason),
                                     "}"));
  }
  return absl::StrCat("{\"num_workers\": ", run.facts.num_workers,
                      ", \"prefetch_batches\": ", run.facts.prefetch_batches,
                      run.autotune_read_ahead > 0
                          ? absl::StrCat(", \"read_ahead\": ", run.autotune_read_ahead)
                          : "",
                      ", \"decisions\": [", absl::StrJoin(decisions, ", "), "]}");
}

}  // namespace

std::string SummaryJson(const RunSnapshot& run) {
  const RunFacts& f = run.facts;
  const double rate = f.wall_seconds > 0 ? run.samples / f.wall_seconds : 0;
  std::vector<std::string> errors;
  for (const auto& [reason, n] : ErrorsByReason(run)) {
    errors.push_back(absl::StrCat(JsonString(reason), ": ", n));
  }
  std::vector<std::string> stages;
  for (const StageLoad& s : run.stages) {
    stages.push_back(absl::StrCat(
        JsonString(s.name), ": {\"items\": ", s.items,
        ", \"busy_seconds\": ", JsonFloat(s.busy_seconds),
        ", \"utilization\": ", JsonFloat(Utilization(s, f.wall_seconds)),
        ", \"concurrency\": ", s.concurrency, ", \"errors\": ", StageErrors(s), OpsJson(s),
        "}"));
  }
  std::vector<std::string> memory_plan;
  for (const auto& [key, bytes] : run.memory_plan) {
    memory_plan.push_back(absl::StrCat(JsonString(key), ": ", bytes));
  }
  std::vector<std::string> sources;
  for (const auto& [name, n] : run.source_samples) {
    sources.push_back(absl::StrCat(JsonString(name), ": ", n));
  }
  const Diagnosis d = Diagnose(run);
  return absl::StrCat(
      "{\"samples\": ", run.samples, ", \"batches\": ", run.batches, ", \"epochs\": ", f.epochs,
      ", \"seconds\": ", JsonFloat(f.wall_seconds), ", \"images_per_second\": ", JsonFloat(rate),
      ", \"skipped\": ", run.skipped, ", \"errors\": {", absl::StrJoin(errors, ", "),
      "}, \"num_workers\": ", f.num_workers, ", \"batch_size\": ", f.batch_size,
      ", \"stages\": {", absl::StrJoin(stages, ", "),
      "}, \"memory_plan\": {", absl::StrJoin(memory_plan, ", "),
      "}, \"sources\": {", absl::StrJoin(sources, ", "),
      "}, \"consumer_wait_seconds\": ", JsonFloat(run.consumer_wait_seconds),
      ", \"bottleneck\": ", JsonString(d.bottleneck), ", \"diagnosis\": ", DiagnosisJson(d),
      run.autotune ? absl::StrCat(", \"autotune\": ", AutotuneJson(run)) : "", "}");
}

std::string SummaryJson(const PipelineStats& stats, const RunFacts& facts) {
  return SummaryJson(Snapshot(stats, facts));
}

std::string StageTable(const RunSnapshot& run) {
  const double wall = run.facts.wall_seconds;
  size_t width = 5;  // "stage"
  for (const StageLoad& s : run.stages) {
    width = std::max({width, s.name.size(), s.worker_group.size()});
    for (const OpLoad& op : s.ops) width = std::max(width, 2 + op.name.size());
  }
  const int w = static_cast<int>(width);
  std::string out = absl::StrFormat("%-*s %7s %10s %9s %5s %7s\n", w, "stage", "workers",
                                    "items", "busy_s", "busy%", "errors");
  for (size_t i = 0; i < run.stages.size(); ++i) {
    const StageLoad& s = run.stages[i];
    absl::StrAppendFormat(&out, "%-*s %7d %10d %9.2f %4.0f%% %7d\n", w, s.name, s.concurrency,
                          s.items, s.busy_seconds, 100 * Utilization(s, wall), StageErrors(s));
    for (const OpLoad& op : s.ops) {  // Indented under their stage; % of the stage's busy.
      absl::StrAppendFormat(&out, "  %-*s %7s %10d %9.2f %4.0f%% of stage\n", w - 2, op.name,
                            "", op.applied, op.busy_seconds, 100 * OpShare(s, op));
    }
    const bool ends_group = !s.worker_group.empty() &&
                            (i + 1 == run.stages.size() ||
                             run.stages[i + 1].worker_group != s.worker_group);
    if (ends_group) {
      // The workers' own row: what the diagnosis calls busy for these stages.
      double busy = 0;
      uint64_t errors = 0;
      for (const StageLoad& m : run.stages) {
        if (m.worker_group != s.worker_group) continue;
        busy += m.busy_seconds;
        errors += StageErrors(m);
      }
      absl::StrAppendFormat(&out, "%-*s %7d %10d %9.2f %4.0f%% %7d\n", w, s.worker_group,
                            s.concurrency, s.items, busy,
                            100 * GroupUtilization(run, s.worker_group), errors);
    }
  }
  const Diagnosis d = Diagnose(run);
  absl::StrAppendFormat(&out, "consumer waited %.2f s of %.2f s (%.0f%%); bottleneck: %s\n",
                        run.consumer_wait_seconds, wall, 100 * d.consumer_wait_share,
                        d.bottleneck.empty() ? "-" : d.bottleneck);
  return out;
}

std::string StageTable(const PipelineStats& stats, const RunFacts& facts) {
  return StageTable(Snapshot(stats, facts));
}

}  // namespace flowloader
