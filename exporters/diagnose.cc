// diagnose.cc: the tuning rules behind Diagnose(): which stage limits the run and what
// to change. Each rule's sentence carries the numbers that triggered it. A rule says
// "raise X" only when the counters show X can be raised and the run was limited by
// it; where one run's counters cannot tell, the advice is `flowloader tune`, which
// measures.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "exporters/report.h"

namespace flowloader {
namespace {

constexpr char kTune[] = "run `flowloader tune` to measure it";

std::string Percent(double share) { return absl::StrFormat("%.0f%%", share * 100); }

std::string Workers(int n) { return absl::StrCat(n, n == 1 ? " worker" : " workers"); }

std::string GiB(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1 << 30));
}

// WorkerLoad is what one set of workers did: a stage alone, or a worker group (stages
// that run back to back on the same workers), judged by the group's summed busy time
// but named after its heaviest stage, since that is the work to make cheaper.
struct WorkerLoad {
  StageLoad heaviest;       // Concurrency and kind of the heaviest stage.
  std::string group;        // The worker group; "" for a stage alone.
  double utilization = 0;   // Of the whole group: GroupUtilization.
  std::string breakdown;    // "decode 67% + augment 22% + read 11%" for groups.
};

// RowName is the stage table's row for `l`: the stage, or the group's own row.
std::string RowName(const WorkerLoad& l) { return l.group.empty() ? l.heaviest.name : l.group; }

// Busy says how busy `l`'s workers were, with the stage table's numbers:
// "decode is 98% busy on 2 workers", "the 2 workers running read+decode are 90% busy".
std::string Busy(const WorkerLoad& l, absl::string_view only = "") {
  if (l.group.empty()) {
    return absl::StrCat(l.heaviest.name, " is ", only, Percent(l.utilization), " busy on ",
                        Workers(l.heaviest.concurrency));
  }
  return absl::StrCat("the ", Workers(l.heaviest.concurrency), " running ", l.group,
                      l.heaviest.concurrency == 1 ? " is " : " are ", only,
                      Percent(l.utilization), " busy");
}

// FollowsNumWorkers: raising num_workers raises `s`'s concurrency.
bool FollowsNumWorkers(const StageLoad& s, const RunFacts& f) {
  switch (s.concurrency_source) {
    case ConcurrencySource::kNumWorkers:
      return true;
    case ConcurrencySource::kFixed:
      return false;
    case ConcurrencySource::kUnknown:
      break;
  }
  return s.concurrency == f.num_workers;
}

// PrefetchBelowCap: prefetch_batches is known and more of it may still help.
bool PrefetchBelowCap(const RunFacts& f, const DiagnoseOptions& o) {
  return f.prefetch_batches > 0 && f.prefetch_batches < o.prefetch_cap;
}

// SaturatedComputeAdvice: saturated CPU workers. More of them only while the process
// has CPUs left; a stage fixed at one worker is serial and can only be made cheaper.
std::string SaturatedComputeAdvice(const WorkerLoad& l, double wait, const RunFacts& f) {
  const StageLoad& s = l.heaviest;
  const std::string head =
      absl::StrCat(Busy(l), " and the consumer waited ", Percent(wait), " of the time: ");
  const bool follows = FollowsNumWorkers(s, f);
  if (!follows && s.concurrency <= 1) {
    return absl::StrCat(head, s.name, " is serial and caps the pipeline (it runs on 1 worker "
                        "whatever num_workers); move its work into the parallel stages or "
                        "make it cheaper");
  }
  const std::string knob = follows ? "num_workers" : absl::StrCat(s.name, "'s concurrency");
  const int cpus = f.cores_available;
  if (cpus <= 0) {
    return absl::StrCat(head, "the CPUs this process may use are unknown, and so is whether "
                        "more workers would help; ", kTune);
  }
  if (s.concurrency >= cpus) {
    const bool decode = s.type == "decode";  // The type, whatever the stage is named.
    return absl::StrCat(head, "the ", cpus, " CPUs this process may use are the limit (", knob,
                        "=", s.concurrency, "), so more workers would not help: make ",
                        s.name, " cheaper",
                        decode ? ", e.g. decode at reduced size or pre-resize the dataset," : "",
                        " or give the process more CPUs");
  }
  // To stop the wait the workers need 1 / (1 - wait) times their throughput.
  const int wanted = static_cast<int>(std::ceil(s.concurrency / std::max(1e-3, 1 - wait)));
  const int target = std::min(cpus, std::max(wanted, s.concurrency + 1));
  return absl::StrCat(head, "raise ", knob, " to ", target, " (", cpus, " CPUs usable)");
}

// UnsaturatedAdvice: the consumer starves yet no workers are saturated. More prefetch
// helps only if the batch buffers ran out (the source waited for a free one) and
// prefetch is under the cap; otherwise one run cannot say which knob would help.
std::string UnsaturatedAdvice(const WorkerLoad& l, double wait, const RunSnapshot& run,
                              const DiagnoseOptions& o, bool memory_near) {
  const std::string busiest =
      l.group.empty() ? absl::StrCat(l.heaviest.name, " at ", Percent(l.utilization), " on ",
                                     Workers(l.heaviest.concurrency))
                      : absl::StrCat("the ", Workers(l.heaviest.concurrency), " running ",
                                     l.group, " at ", Percent(l.utilization));
  const std::string head = absl::StrCat("no stage is saturated (busiest: ", busiest,
                                        ") yet the consumer waited ", Percent(wait),
                                        " of the time: ");
  if (memory_near) {
    return absl::StrCat(head, "memory is near its budget, so use a smaller batch rather than "
                        "more prefetch");
  }
  // The first stage is the source: its blocked time is waiting for a free batch buffer.
  const double buffers_out = run.stages.front().blocked_seconds / run.facts.wall_seconds;
  const int prefetch = run.facts.prefetch_batches;
  if (PrefetchBelowCap(run.facts, o) && buffers_out >= o.buffers_exhausted_share) {
    return absl::StrCat(head, "the source waited for a free batch buffer ", Percent(buffers_out),
                        " of the time while workers were idle: raise prefetch_batches to ",
                        std::min(o.prefetch_cap, 2 * prefetch), " (now ", prefetch,
                        ") so more batches are made at once");
  }
  std::string why;
  if (prefetch <= 0) {
    why = "prefetch_batches is unknown";
  } else if (prefetch >= o.prefetch_cap) {
    why = absl::StrCat("prefetch_batches is already ", prefetch, ", and more than ",
                       o.prefetch_cap - 1, " did not help where measured");
  } else {
    why = absl::StrCat("the source waited for a free batch buffer only ", Percent(buffers_out),
                       " of the time, so more prefetch would not help");
  }
  return absl::StrCat(head, why, "; the counters do not show which knob would: ", kTune);
}

// BusiestStorage is the scheme of `run` that sent the most requests, or nullptr.
const StorageSchemeStats* BusiestStorage(const RunSnapshot& run) {
  const StorageSchemeStats* busiest = nullptr;
  for (const StorageSchemeStats& s : run.storage) {
    if (s.requests > 0 && (busiest == nullptr || s.requests > busiest->requests)) busiest = &s;
  }
  return busiest;
}

// StorageLatency says what the storage's requests measured: "s3 requests take 23 ms
// median (p99 81 ms), 4.1 in flight on average" (Little's law: the summed request time
// over the wall time), with the share that failed when any did, and read-ahead's limit
// ("read-ahead auto: limit 64 (peak 96), 41.2 in flight on average while reading");
// "" without requests.
std::string StorageLatency(const RunSnapshot& run) {
  const StorageSchemeStats* s = BusiestStorage(run);
  if (s == nullptr || run.facts.wall_seconds <= 0) return "";
  std::string text = absl::StrFormat(
      "%s requests take %.0f ms median (p99 %.0f ms), %.1f in flight on average over %d "
      "requests",
      s->scheme, 1e3 * s->LatencyQuantile(0.5), 1e3 * s->LatencyQuantile(0.99),
      s->latency_sum_seconds / run.facts.wall_seconds, s->requests);
  if (const int64_t failed = s->TotalErrors(); failed > 0) {
    std::vector<std::string> codes;
    for (const auto& [code, n] : s->errors) codes.push_back(absl::StrCat(code, " ", n));
    absl::StrAppend(&text, ", ", Percent(static_cast<double>(failed) / s->requests),
                    " failed and were retried or skipped (", absl::StrJoin(codes, ", "), ")");
  }
  // What read-ahead made of that latency: the limit it ended at (and the highest), and
  // the reads it really had in flight.
  if (const ReadAheadFigures& r = run.read_ahead; r.present) {
    absl::StrAppend(&text, absl::StrFormat("; read-ahead %s: limit %d (peak %d), %.1f in flight "
                                           "on average while reading",
                                           r.adaptive ? "auto" : "fixed", r.limit,
                                           std::max(r.peak_limit, r.limit), r.mean_in_flight));
    if (r.adaptive && r.floor > r.min_in_flight) {  // Raised by autotune for storage waits.
      absl::StrAppend(&text, absl::StrFormat(", at least %d kept in flight by autotune (of "
                                             "%d at most)",
                                             r.floor, r.max_in_flight));
    }
  }
  return text;
}

// StorageAdvice: a saturated storage stage. With remote storage's counts, the measured
// latency and the knobs that hide it; else the general advice.
std::string StorageAdvice(const WorkerLoad& l, double wait, const RunSnapshot& run) {
  const StageLoad& s = l.heaviest;
  const std::string latency = StorageLatency(run);
  if (latency.empty()) {
    return absl::StrCat(s.name, " is the bottleneck: storage, not CPU (", Busy(l),
                        ", consumer waited ", Percent(wait),
                        "): use faster or local storage, cache the dataset in memory, "
                        "or allow more concurrent reads");
  }
  return absl::StrCat(s.name, " starves the pipeline: ", latency, " (", Busy(l),
                      ", consumer waited ", Percent(wait),
                      "); raise read_ahead (reads kept in flight; `auto` sizes it up to "
                      "128) so more requests overlap, set cache_dir so later epochs read "
                      "from local disk, or pack the data into tar shards (one request per "
                      "block, not per sample)");
}

// WaitingOnStorage is the storage stage of `l` (the stage, or one of its worker group)
// whose workers waited on remote reads at least storage_wait_share of their time, or
// nullptr: then storage is the limit even where decoding is busier (the workers would
// not wait with the bytes there; more of them would wait too).
const StageLoad* WaitingOnStorage(const WorkerLoad& l, const RunSnapshot& run,
                                  const DiagnoseOptions& o) {
  if (run.storage.empty() || StorageLatency(run).empty()) return nullptr;
  for (const StageLoad& s : run.stages) {
    const bool ours = l.group.empty() ? s.name == l.heaviest.name : s.worker_group == l.group;
    if (ours && s.kind == StageKind::kStorage &&
        Utilization(s, run.facts.wall_seconds) >= o.storage_wait_share) {
      return &s;
    }
  }
  return nullptr;
}

// LoaderBoundAdvice: the consumer starves; say which stage and what to change.
std::string LoaderBoundAdvice(const WorkerLoad& l, double wait, const RunSnapshot& run,
                              const DiagnoseOptions& o, bool memory_near) {
  const StageLoad& s = l.heaviest;
  // Reads from remote storage, the busiest work: its latency is the limit even when the
  // workers are not saturated (read-ahead's requests wait on the network, not on them).
  if (s.kind == StageKind::kStorage && !run.storage.empty() && !StorageLatency(run).empty()) {
    return StorageAdvice(l, wait, run);
  }
  if (l.utilization < o.saturated) return UnsaturatedAdvice(l, wait, run, o, memory_near);
  switch (s.kind) {
    case StageKind::kStorage:
      return StorageAdvice(l, wait, run);
    case StageKind::kTransfer:
      return absl::StrCat(s.name, " is the bottleneck: host-to-device copies (", Busy(l),
                          ", consumer waited ", Percent(wait), "): use pinned memory, ",
                          PrefetchBelowCap(run.facts, o)
                              ? "keep more batches in flight so copies overlap compute, "
                              : "",
                          "or ship uint8 and normalise on the device");
    case StageKind::kCompute:
      break;
  }
  return SaturatedComputeAdvice(l, wait, run.facts);
}

// TooShort says why `f` is too short a run to judge, or "" when it is long enough.
std::string TooShort(const RunFacts& f, const DiagnoseOptions& o) {
  std::vector<std::string> why;
  if (f.startup_seconds >= 0 && f.startup_seconds > o.max_startup_share * f.wall_seconds) {
    // One decimal, so that a share just over the limit does not print as the limit.
    why.push_back(absl::StrFormat("start-up (to the first batch) took %.2f s, %.1f%% of the "
                                  "%.2f s run (over %s)",
                                  f.startup_seconds, 100 * f.startup_seconds / f.wall_seconds,
                                  f.wall_seconds, Percent(o.max_startup_share)));
  }
  if (f.steady_seconds >= 0 && f.steady_seconds < o.min_steady_seconds) {
    why.push_back(absl::StrFormat("the steady state lasted %.2f s (under %g s)",
                                  f.steady_seconds, o.min_steady_seconds));
  }
  if (why.empty()) return "";
  return absl::StrCat("the run is too short to judge: ", absl::StrJoin(why, " and "),
                      "; nothing is recommended from it: run more epochs, or `flowloader "
                      "tune` to measure the knobs");
}

// FluctuationNote: the second row of the classic table, batches arriving unevenly.
std::string FluctuationNote(const RunSnapshot& run, double cv, const DiagnoseOptions& o) {
  if (run.steady_waits < static_cast<uint64_t>(std::max(o.min_waits_for_cv, 2)) ||
      cv <= o.fluctuating_wait_cv) {
    return "";
  }
  const double mean_ms = 1e3 * run.steady_wait_seconds / run.steady_waits;
  const std::string batch =
      run.facts.batch_size > 0 ? absl::StrCat(" (batch_size=", run.facts.batch_size, ")") : "";
  return absl::StrFormat(
      "the time between batches fluctuates: the consumer's wait per batch has a coefficient "
      "of variation of %.2f (over %g; mean %.1f ms over %d batches); usually the batch is "
      "too small for the per-batch overhead%s, or storage has a slow tail (a few reads far "
      "slower than the rest)",
      cv, o.fluctuating_wait_cv, mean_ms, run.steady_waits, batch);
}

// MemoryNotes says which memory pools are near their budget.
std::vector<std::string> MemoryNotes(const RunSnapshot& run, const DiagnoseOptions& o) {
  std::vector<std::string> notes;
  const auto check = [&](const char* pool, int64_t used, int64_t budget) {
    if (budget <= 0 || used < o.memory_near_budget * budget) return;
    notes.push_back(absl::StrCat(pool, " memory in flight is ",
                                 Percent(static_cast<double>(used) / budget),
                                 " of its budget (", GiB(used), " of ", GiB(budget),
                                 "): use a smaller batch or fewer prefetched batches"));
  };
  check("host", run.host_bytes_in_flight, run.host_bytes_budget);
  check("pinned", run.pinned_bytes_in_flight, run.pinned_bytes_budget);
  return notes;
}

std::vector<WorkerLoad> WorkerLoads(const RunSnapshot& run, double wall) {
  std::vector<WorkerLoad> loads;
  for (const StageLoad& s : run.stages) {
    auto it = s.worker_group.empty()
                  ? loads.end()
                  : std::find_if(loads.begin(), loads.end(), [&](const WorkerLoad& l) {
                      return l.group == s.worker_group;
                    });
    if (it == loads.end()) {
      loads.push_back(WorkerLoad{s, s.worker_group,
                                 s.worker_group.empty() ? Utilization(s, wall)
                                                        : GroupUtilization(run, s.worker_group),
                                 ""});
      continue;
    }
    if (s.busy_seconds > it->heaviest.busy_seconds) it->heaviest = s;
  }
  for (WorkerLoad& load : loads) {
    if (load.group.empty()) continue;
    std::vector<const StageLoad*> members;
    for (const StageLoad& s : run.stages) {
      if (s.worker_group == load.group) members.push_back(&s);
    }
    std::sort(members.begin(), members.end(), [](const StageLoad* a, const StageLoad* b) {
      return a->busy_seconds > b->busy_seconds;
    });
    for (const StageLoad* m : members) {
      absl::StrAppend(&load.breakdown, load.breakdown.empty() ? "" : " + ", m->name, " ",
                      Percent(Utilization(*m, wall)));
    }
  }
  return loads;
}

// CostliestOpNote names the op that costs `s` most ("make transforms_a cheaper: its
// gaussian_blur takes 61% of it"), or "" for a stage without ops or busy time.
std::string CostliestOpNote(const StageLoad& s) {
  const OpLoad* costliest = nullptr;
  for (const OpLoad& op : s.ops) {
    if (costliest == nullptr || op.busy_seconds > costliest->busy_seconds) costliest = &op;
  }
  if (costliest == nullptr || costliest->busy_seconds <= 0 || s.busy_seconds <= 0) return "";
  return absl::StrCat("make ", s.name, " cheaper: its ", costliest->name, " takes ",
                      Percent(OpShare(s, *costliest)), " of it");
}

// ConsumerBound: the loader keeps up; note workers far more than it needs.
void ConsumerBound(const WorkerLoad& busiest, const DiagnoseOptions& o, Diagnosis* d) {
  d->bottleneck = "consumer";
  d->advice = absl::StrCat("the consumer is the bottleneck (waited ",
                           Percent(d->consumer_wait_share),
                           " of the time): the loader keeps up; nothing to tune");
  // A loader with far more workers than it uses takes cores the training step could use.
  const StageLoad& s = busiest.heaviest;
  const double worker_load = s.concurrency * busiest.utilization;
  const int enough = std::max(1, static_cast<int>(std::ceil(worker_load / o.saturated)));
  if (s.kind == StageKind::kCompute && s.concurrency > 1 && enough < s.concurrency) {
    d->notes.push_back(absl::StrCat(Busy(busiest, "only "), ": ", Workers(enough),
                                    " would do, leaving cores to training"));
  }
}

}  // namespace

double Utilization(const StageLoad& stage, double wall_seconds) {
  if (wall_seconds <= 0 || stage.concurrency <= 0) return 0;
  return stage.busy_seconds / (stage.concurrency * wall_seconds);
}

double OpShare(const StageLoad& stage, const OpLoad& op) {
  if (stage.busy_seconds <= 0) return 0;
  return std::clamp(op.busy_seconds / stage.busy_seconds, 0.0, 1.0);
}

double GroupUtilization(const RunSnapshot& run, const std::string& group) {
  double sum = 0;
  for (const StageLoad& s : run.stages) {
    if (s.worker_group == group) sum += Utilization(s, run.facts.wall_seconds);
  }
  return sum;
}

double WaitCv(const RunSnapshot& run) {
  if (run.steady_waits < 2 || run.steady_wait_seconds <= 0) return 0;
  const double n = static_cast<double>(run.steady_waits);
  const double mean = run.steady_wait_seconds / n;
  const double variance = std::max(0.0, run.steady_wait_squares / n - mean * mean);
  return std::sqrt(variance) / mean;
}

std::string OversubscribedWorkers(const RunFacts& facts, const DiagnoseOptions& options) {
  const int cpus = facts.cores_available;
  if (cpus <= 0 || facts.num_workers <= options.max_workers_per_cpu * cpus) return "";
  return absl::StrCat("num_workers=", facts.num_workers, " is over ",
                      options.max_workers_per_cpu, " \u00d7 the ", cpus,
                      cpus == 1 ? " CPU" : " CPUs", " this process may use: the extra workers "
                      "wait for a CPU and hold memory; `flowloader tune` measures how many help");
}

Diagnosis Diagnose(const RunSnapshot& run, const DiagnoseOptions& options) {
  Diagnosis d;
  const double wall = run.facts.wall_seconds;
  if (wall <= 0 || run.stages.empty()) {
    d.advice = "not enough data to diagnose (no stages or no wall time)";
    return d;
  }
  // First stage wins a tie: upstream limits everything after it.
  const std::vector<WorkerLoad> loads = WorkerLoads(run, wall);
  const WorkerLoad* busiest = &loads.front();
  for (const WorkerLoad& l : loads) {
    if (l.utilization > busiest->utilization) busiest = &l;
  }
  d.busiest_stage = RowName(*busiest);
  d.busiest_utilization = busiest->utilization;
  if (!busiest->breakdown.empty()) {
    d.notes.push_back(absl::StrCat(Busy(*busiest), ": ", busiest->breakdown));
  }
  d.consumer_wait_share = std::clamp(run.consumer_wait_seconds / wall, 0.0, 1.0);
  d.loader_bound = d.consumer_wait_share > options.starving_share;
  d.wait_cv = WaitCv(run);
  const std::vector<std::string> memory = MemoryNotes(run, options);
  d.notes.insert(d.notes.end(), memory.begin(), memory.end());

  const std::string too_short = TooShort(run.facts, options);
  const std::string oversubscribed = OversubscribedWorkers(run.facts, options);
  if (!too_short.empty()) {
    d.too_short = true;
    d.advice = too_short;
    if (!oversubscribed.empty()) d.notes.push_back(oversubscribed);
  } else if (!oversubscribed.empty()) {
    d.advice = absl::StrCat(oversubscribed, "; no verdict: the busy shares count workers "
                            "waiting for a CPU");
  } else if (d.loader_bound) {
    d.bottleneck = busiest->heaviest.name;
    if (const StageLoad* reads = WaitingOnStorage(*busiest, run, options); reads != nullptr) {
      // Workers waiting on remote reads: storage, named with its latency.
      const WorkerLoad load{*reads, "", Utilization(*reads, wall), ""};
      d.bottleneck = reads->name;
      d.advice = StorageAdvice(load, d.consumer_wait_share, run);
    } else {
      d.advice =
          LoaderBoundAdvice(*busiest, d.consumer_wait_share, run, options, !memory.empty());
    }
    // Saturated workers running an op list: which op to make cheaper (or drop).
    if (busiest->utilization >= options.saturated && d.bottleneck == busiest->heaviest.name &&
        busiest->heaviest.kind == StageKind::kCompute) {
      std::string op = CostliestOpNote(busiest->heaviest);
      if (!op.empty()) d.notes.push_back(std::move(op));
    }
    if (std::string storage = StorageLatency(run);
        !storage.empty() && busiest->heaviest.kind != StageKind::kStorage &&
        d.bottleneck == busiest->heaviest.name) {
      d.notes.push_back(absl::StrCat("storage: ", storage));
    }
    std::string fluctuation = FluctuationNote(run, d.wait_cv, options);
    if (!fluctuation.empty()) d.notes.push_back(std::move(fluctuation));
  } else {
    ConsumerBound(*busiest, options, &d);
  }
  if (run.skipped > 0) {
    const uint64_t seen = run.samples + run.skipped;
    d.notes.push_back(absl::StrCat(run.skipped, " samples were skipped (",
                                   Percent(static_cast<double>(run.skipped) / seen),
                                   " of those read); see \"errors\" for the reasons"));
  }
  return d;
}

}  // namespace flowloader
