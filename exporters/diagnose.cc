// diagnose.cc: the tuning rules behind Diagnose(): which stage limits the run and what
// to change. Each rule's sentence carries the numbers that triggered it.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "exporters/report.h"

namespace flowloader {
namespace {

std::string Percent(double share) { return absl::StrFormat("%.0f%%", share * 100); }

std::string Workers(int n) { return absl::StrCat(n, n == 1 ? " worker" : " workers"); }

std::string GiB(int64_t bytes) {
  return absl::StrFormat("%.2f GiB", static_cast<double>(bytes) / (1 << 30));
}

// CoresFree is what the machine has left after the loader's workers and the consumer's
// own thread; -1 when the number of cores is unknown.
int CoresFree(const RunFacts& f) {
  if (f.cores_available <= 0) return -1;
  return std::max(0, f.cores_available - std::max(f.num_workers, 0) - 1);
}

// ParallelComputeAdvice: a saturated parallel CPU stage (decode, augment).
std::string ParallelComputeAdvice(const StageLoad& s, double util, double wait,
                                  const RunFacts& f) {
  std::string head = absl::StrCat(s.name, " is ", Percent(util), " busy on ",
                                  Workers(s.concurrency), " and the consumer waited ",
                                  Percent(wait), " of the time: ");
  const int free = CoresFree(f);
  if (free < 0) return absl::StrCat(head, "raise num_workers (cores free: unknown)");
  if (free == 0) {
    return absl::StrCat(head, "raise num_workers (cores free: 0 \u2014 the machine is the limit;",
                        " make ", s.name, " cheaper, e.g. decode at reduced size or",
                        " pre-resize the dataset, or add cores)");
  }
  // To stop the wait the stage needs 1 / (1 - wait) times its throughput.
  const int wanted = static_cast<int>(std::ceil(s.concurrency / std::max(1e-3, 1 - wait)));
  const int target = std::min(s.concurrency + free, std::max(wanted, s.concurrency + 1));
  return absl::StrCat(head, "raise num_workers to ", target, " (cores free: ", free, ")");
}

// LoaderBoundAdvice: the consumer starves; say which stage and what to change.
std::string LoaderBoundAdvice(const StageLoad& s, double util, double wait,
                              const RunSnapshot& run, const DiagnoseOptions& o,
                              bool memory_near) {
  if (util < o.saturated) {
    std::string advice = absl::StrCat(
        "no stage is saturated (busiest: ", s.name, " at ", Percent(util), " on ",
        Workers(s.concurrency), ") yet the consumer waited ", Percent(wait),
        " of the time: the pipeline is latency-bound; ");
    return absl::StrCat(advice, memory_near
                                    ? "memory is near its budget, so use a smaller batch "
                                      "rather than more prefetch"
                                    : "raise prefetch (batches in flight) so stages overlap");
  }
  switch (s.kind) {
    case StageKind::kStorage:
      return absl::StrCat(s.name, " is the bottleneck: storage, not CPU (", s.name, " ",
                          Percent(util), " busy, consumer waited ", Percent(wait),
                          "): use faster or local storage, cache the dataset in memory, "
                          "or allow more concurrent reads");
    case StageKind::kTransfer:
      return absl::StrCat(s.name, " is the bottleneck: host-to-device copies (",
                          Percent(util), " busy, consumer waited ", Percent(wait),
                          "): use pinned memory, keep more batches in flight so copies "
                          "overlap compute, or ship uint8 and normalise on the device");
    case StageKind::kCompute:
      break;
  }
  if (s.concurrency <= 1) {
    return absl::StrCat(s.name, " is ", Percent(util), " busy on 1 worker and the consumer "
                        "waited ", Percent(wait), " of the time: ", s.name,
                        " is serial and caps the pipeline; move its work into the parallel "
                        "stages or make it cheaper");
  }
  return ParallelComputeAdvice(s, util, wait, run.facts);
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

}  // namespace

StageKind StageKindFromName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  // Transfer first: "upload" contains "load".
  for (absl::string_view t : {"upload", "pin", "h2d", "copy", "transfer"}) {
    if (absl::StrContains(lower, t)) return StageKind::kTransfer;
  }
  if (absl::StartsWith(lower, "read")) return StageKind::kStorage;
  for (absl::string_view s : {"load", "fetch"}) {
    if (absl::StrContains(lower, s)) return StageKind::kStorage;
  }
  return StageKind::kCompute;
}

double Utilization(const StageLoad& stage, double wall_seconds) {
  if (wall_seconds <= 0 || stage.concurrency <= 0) return 0;
  return stage.busy_seconds / (stage.concurrency * wall_seconds);
}

namespace {

// WorkerLoad is what one set of workers did: a stage alone, or a worker group (stages
// that run back to back on the same workers), judged by the group's summed busy time
// but named after its heaviest stage, since that is the work to make cheaper.
struct WorkerLoad {
  StageLoad heaviest;       // Concurrency and kind of the heaviest stage.
  double utilization = 0;   // Of the whole group.
  std::string breakdown;    // "decode 67% + augment 22% + read 11%" for groups.
};

std::vector<WorkerLoad> WorkerLoads(const RunSnapshot& run, double wall) {
  std::vector<WorkerLoad> loads;
  std::vector<std::string> groups;  // Parallel to `loads`; "" for a lone stage.
  for (const StageLoad& s : run.stages) {
    auto it = s.worker_group.empty() ? groups.end()
                                     : std::find(groups.begin(), groups.end(), s.worker_group);
    if (it == groups.end()) {
      loads.push_back(WorkerLoad{s, Utilization(s, wall), ""});
      groups.push_back(s.worker_group);
      continue;
    }
    WorkerLoad& load = loads[static_cast<size_t>(it - groups.begin())];
    if (s.busy_seconds > load.heaviest.busy_seconds) load.heaviest = s;
    load.utilization += Utilization(s, wall);
  }
  for (size_t i = 0; i < loads.size(); ++i) {
    if (groups[i].empty()) continue;
    std::vector<const StageLoad*> members;
    for (const StageLoad& s : run.stages) {
      if (s.worker_group == groups[i]) members.push_back(&s);
    }
    std::sort(members.begin(), members.end(), [](const StageLoad* a, const StageLoad* b) {
      return a->busy_seconds > b->busy_seconds;
    });
    for (const StageLoad* m : members) {
      absl::StrAppend(&loads[i].breakdown, loads[i].breakdown.empty() ? "" : " + ", m->name,
                      " ", Percent(Utilization(*m, wall)));
    }
  }
  return loads;
}

}  // namespace

Diagnosis Diagnose(const RunSnapshot& run, const DiagnoseOptions& options) {
  Diagnosis d;
  const double wall = run.facts.wall_seconds;
  if (wall <= 0 || run.stages.empty()) {
    d.advice = "not enough data to diagnose (no stages or no wall time)";
    return d;
  }
  // First stage wins a tie: upstream limits everything after it.
  const std::vector<WorkerLoad> loads = WorkerLoads(run, wall);
  const WorkerLoad* busiest_load = &loads.front();
  for (const WorkerLoad& l : loads) {
    if (l.utilization > busiest_load->utilization) busiest_load = &l;
  }
  const StageLoad* busiest = &busiest_load->heaviest;
  d.busiest_stage = busiest->name;
  d.busiest_utilization = busiest_load->utilization;
  if (!busiest_load->breakdown.empty()) {
    d.notes.push_back(absl::StrCat("the ", Workers(busiest->concurrency),
                                   " running ", busiest->worker_group, " are ",
                                   Percent(busiest_load->utilization), " busy: ",
                                   busiest_load->breakdown));
  }
  d.consumer_wait_share = std::clamp(run.consumer_wait_seconds / wall, 0.0, 1.0);
  d.loader_bound = d.consumer_wait_share > options.starving_share;
  for (std::string& note : MemoryNotes(run, options)) d.notes.push_back(std::move(note));

  if (d.loader_bound) {
    d.bottleneck = busiest->name;
    d.advice = LoaderBoundAdvice(*busiest, d.busiest_utilization, d.consumer_wait_share, run,
                                 options, !MemoryNotes(run, options).empty());
  } else {
    d.bottleneck = "consumer";
    d.advice = absl::StrCat("the consumer is the bottleneck (waited ",
                            Percent(d.consumer_wait_share),
                            " of the time): the loader keeps up; nothing to tune");
    // A loader with far more workers than it uses takes cores the training step could use.
    const double worker_load = busiest->concurrency * d.busiest_utilization;
    const int enough = std::max(1, static_cast<int>(std::ceil(worker_load / options.saturated)));
    if (busiest->kind == StageKind::kCompute && busiest->concurrency > 1 &&
        enough < busiest->concurrency) {
      d.notes.push_back(absl::StrCat(busiest->name, " is only ", Percent(d.busiest_utilization),
                                     " busy on ", Workers(busiest->concurrency), ": ",
                                     Workers(enough), " would do, leaving cores to training"));
    }
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
