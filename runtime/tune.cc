#include "runtime/tune.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "exporters/internal/json.h"
#include "stages/core/log.h"
#include "stages/core/memory_plan.h"
#include "stages/core/resources.h"

namespace flowloader {
namespace {

using exporters_internal::JsonString;

// Another worker, buffer or larger batch must add at least this much images/s to be
// worth its CPU or memory (the "prefer fewer workers when another adds < 3%").
constexpr double kWorthIt = 1.03;
// The consumer goal: waiting under this share of the time.
constexpr double kWaitTarget = 0.05;

using Key = std::tuple<int, int, int>;  // (batch_size, prefetch_batches, num_workers).
Key KeyOf(const TrialConfig& c) { return {c.batch_size, c.prefetch_batches, c.num_workers}; }

std::string Describe(const TrialConfig& c) {
  return absl::StrCat("num_workers ", c.num_workers, ", batch_size ", c.batch_size,
                      ", prefetch_batches ", c.prefetch_batches);
}

// Search holds the trials measured so far and the clock, so each configuration is
// measured at most once and the budget is respected.
class Search {
 public:
  Search(const TuneOptions& options, const TrialRunner& run, const MemoryCheck& fits)
      : options_(options), run_(run), fits_(fits), start_(absl::Now()) {
    trial_seconds_ = options.trial_seconds > 0 ? options.trial_seconds : DefaultTrialSeconds();
  }

  int max_workers() const { return 2 * options_.cpu_budget; }
  bool consumer_goal() const { return options_.consumer_ms > 0 || options_.consumer != nullptr; }

  // Fits reports (and remembers) whether a configuration's memory plan fits.
  bool Fits(const TrialConfig& c) {
    // The plan does not depend on the number of workers beyond per-worker scratch, which
    // the check includes; cache per full configuration all the same.
    auto it = fit_.find(KeyOf(c));
    if (it != fit_.end()) return it->second;
    const absl::Status s = fits_(c);
    // Reported once per batch shape: more workers do not make a shape fit.
    if (!s.ok() && refused_shapes_.insert({c.batch_size, c.prefetch_batches}).second) {
      result_.not_tried.push_back({c, std::string(s.message())});
    }
    return fit_[KeyOf(c)] = s.ok();
  }

  // Measure runs `c` once (later calls return the same trial), or returns nullptr when
  // the budget is spent, the plan does not fit or the trial failed.
  const TrialResult* Measure(const TrialConfig& c) {
    auto it = trials_.find(KeyOf(c));
    if (it != trials_.end()) return &it->second;
    if (OutOfTime() || !Fits(c)) return nullptr;
    absl::StatusOr<TrialResult> r = run_(c, trial_seconds_);
    if (!r.ok()) {
      result_.not_tried.push_back({c, std::string(r.status().message())});
      return nullptr;
    }
    r->config = c;
    result_.trials.push_back(*r);
    LogInfo(absl::StrFormat("tune: %s: %.0f images/s, %.2f cores, consumer waited %.1f%%",
                            Describe(c), r->images_per_second, r->cpu_cores,
                            100 * r->consumer_wait_fraction));
    return &(trials_[KeyOf(c)] = *r);
  }

  const TrialResult* Find(const TrialConfig& c) const {
    auto it = trials_.find(KeyOf(c));
    return it == trials_.end() ? nullptr : &it->second;
  }

  bool OutOfTime() const {
    return absl::ToDoubleSeconds(absl::Now() - start_) >= options_.time_budget_seconds;
  }

  TuneResult& result() { return result_; }
  double elapsed() const { return absl::ToDoubleSeconds(absl::Now() - start_); }

  // Better: the goal's order. Without a consumer, images/s; with one, meeting the wait
  // target first, then fewer workers, then less memory.
  bool Better(const TrialResult& a, const TrialResult& b) const {
    if (!consumer_goal()) return a.images_per_second > b.images_per_second;
    const bool a_ok = a.consumer_wait_fraction < kWaitTarget;
    const bool b_ok = b.consumer_wait_fraction < kWaitTarget;
    if (a_ok != b_ok) return a_ok;
    if (!a_ok) return a.consumer_wait_fraction < b.consumer_wait_fraction;
    if (a.config.num_workers != b.config.num_workers) {
      return a.config.num_workers < b.config.num_workers;
    }
    return a.config.prefetch_batches < b.config.prefetch_batches;
  }

 private:
  double DefaultTrialSeconds() const {
    const size_t knobs = options_.prefetch_choices.size() * options_.batch_sizes.size();
    const double expected = options_.grid ? static_cast<double>(max_workers() * knobs)
                                          : static_cast<double>(max_workers() + 6);
    // Each trial also starts a pipeline (about 0.3 s to its first batch here).
    return std::clamp(options_.time_budget_seconds / expected - 0.3, 1.0, 5.0);
  }

  const TuneOptions& options_;
  const TrialRunner& run_;
  const MemoryCheck& fits_;
  const absl::Time start_;
  double trial_seconds_ = 0;
  std::map<Key, TrialResult> trials_;
  std::map<Key, bool> fit_;
  std::set<std::pair<int, int>> refused_shapes_;  // (batch_size, prefetch_batches).
  TuneResult result_;
};

// Nearest returns the value of `choices` closest to `wanted` (the smaller on a tie).
int Nearest(const std::vector<int>& choices, int wanted) {
  int best = choices.front();
  for (int c : choices) {
    if (std::abs(c - wanted) < std::abs(best - wanted)) best = c;
  }
  return best;
}

// ClimbWorkers measures 1, 2, ... workers at (batch, prefetch) until another adds < 3%
// images/s (throughput) or the consumer waits under 5%, and returns the choice.
int ClimbWorkers(Search& search, TrialConfig c) {
  const TrialResult* best = nullptr;
  for (c.num_workers = 1; c.num_workers <= search.max_workers(); ++c.num_workers) {
    const TrialResult* t = search.Measure(c);
    if (t == nullptr) break;
    if (search.consumer_goal()) {
      if (best == nullptr || search.Better(*t, *best)) best = t;
      if (t->consumer_wait_fraction < kWaitTarget) break;
      continue;
    }
    if (best != nullptr && t->images_per_second < best->images_per_second * kWorthIt) break;
    best = t;
  }
  return best == nullptr ? 1 : best->config.num_workers;
}

// ClimbFrom moves one knob (set by `set`) from `start` through the sorted `values`:
// upwards while each step adds >= 3% images/s (or, with a consumer, is better for the
// goal); if the first step up did not help, one step down, kept when it costs < 3% (less
// memory for the same speed). Returns the value kept.
template <typename Set>
int ClimbFrom(Search& search, TrialConfig c, std::vector<int> values, int start, Set set) {
  std::sort(values.begin(), values.end());
  const auto at = std::find(values.begin(), values.end(), start);
  if (at == values.end()) return start;
  set(&c, start);
  const TrialResult* best = search.Measure(c);
  if (best == nullptr) return start;
  int kept = start;
  auto improves = [&search](const TrialResult& t, const TrialResult& than) {
    return search.consumer_goal() ? search.Better(t, than)
                                  : t.images_per_second >= than.images_per_second * kWorthIt;
  };
  for (auto up = at + 1; up != values.end(); ++up) {
    set(&c, *up);
    const TrialResult* t = search.Measure(c);
    if (t == nullptr || !improves(*t, *best)) break;
    best = t;
    kept = *up;
  }
  if (kept != start || at == values.begin()) return kept;
  set(&c, *(at - 1));
  const TrialResult* down = search.Measure(c);
  const bool keeps_up = down != nullptr &&
                        (search.consumer_goal() ? !search.Better(*best, *down)
                                                : down->images_per_second * kWorthIt >=
                                                      best->images_per_second);
  return keeps_up ? *(at - 1) : kept;
}

// SweepBatchSizes measures every batch size at (workers, prefetch) and returns the best:
// the batch's effect is not monotonic enough for a climb (per-batch overhead falls with
// size, cache misses grow), and there are only a few sizes.
int SweepBatchSizes(Search& search, TrialConfig c, const std::vector<int>& sizes) {
  const TrialResult* best = nullptr;
  for (int b : sizes) {
    c.batch_size = b;
    const TrialResult* t = search.Measure(c);
    if (t != nullptr && (best == nullptr || t->images_per_second > best->images_per_second)) {
      best = t;
    }
  }
  return best == nullptr ? c.batch_size : best->config.batch_size;
}

void RunHillClimb(Search& search, const TuneOptions& options) {
  TrialConfig c;
  c.batch_size = search.consumer_goal() ? options.pipeline.batch_size
                                        : Nearest(options.batch_sizes, options.pipeline.batch_size);
  const int smallest_prefetch =
      *std::min_element(options.prefetch_choices.begin(), options.prefetch_choices.end());
  c.prefetch_batches = search.consumer_goal()
                           ? smallest_prefetch
                           : Nearest(options.prefetch_choices, options.pipeline.prefetch_batches);
  c.num_workers = ClimbWorkers(search, c);
  c.prefetch_batches = ClimbFrom(search, c, options.prefetch_choices, c.prefetch_batches,
                                 [](TrialConfig* t, int v) { t->prefetch_batches = v; });
  if (!search.consumer_goal()) c.batch_size = SweepBatchSizes(search, c, options.batch_sizes);
  // The workers once more at the chosen batch shape: one fewer and one more.
  for (int w : {c.num_workers - 1, c.num_workers + 1}) {
    if (w < 1 || w > search.max_workers()) continue;
    TrialConfig n = c;
    n.num_workers = w;
    search.Measure(n);
  }
}

void RunGrid(Search& search, const TuneOptions& options) {
  std::vector<int> batches = options.batch_sizes;
  if (search.consumer_goal()) batches = {options.pipeline.batch_size};
  for (int b : batches) {
    for (int p : options.prefetch_choices) {
      for (int w = 1; w <= search.max_workers(); ++w) search.Measure({w, b, p});
    }
  }
}

// Choose picks the result: the goal's best, then (throughput) the fewest workers and
// least memory among the trials within 3% of it.
TrialResult Choose(const Search& search, const std::vector<TrialResult>& trials) {
  const TrialResult* best = &trials.front();
  for (const TrialResult& t : trials) {
    if (search.Better(t, *best)) best = &t;
  }
  if (search.consumer_goal()) return *best;
  const TrialResult* chosen = best;
  auto lighter = [](const TrialResult& a, const TrialResult& b) {
    const int64_t ma = int64_t{a.config.batch_size} * a.config.prefetch_batches;
    const int64_t mb = int64_t{b.config.batch_size} * b.config.prefetch_batches;
    return std::tie(a.config.num_workers, ma) < std::tie(b.config.num_workers, mb);
  };
  for (const TrialResult& t : trials) {
    if (t.images_per_second * kWorthIt >= best->images_per_second && lighter(t, *chosen)) {
      chosen = &t;
    }
  }
  return *chosen;
}

std::string Percent(double ratio) { return absl::StrFormat("%+.1f%%", 100 * (ratio - 1)); }

// WorkerReason explains num_workers from the neighbouring trials.
std::string WorkerReason(const Search& search, const TrialResult& best, int cpu_budget) {
  const TrialConfig& c = best.config;
  TrialConfig more = c;
  more.num_workers = c.num_workers + 1;
  const TrialResult* next = search.Find(more);
  const std::string cpus = absl::StrFormat("%d CPUs, %.1f cores busy", cpu_budget, best.cpu_cores);
  if (search.consumer_goal()) {
    return absl::StrFormat("num_workers %d: the consumer waited %.1f%% of the time (target < 5%%; %s)",
                           c.num_workers, 100 * best.consumer_wait_fraction, cpus);
  }
  if (next != nullptr) {
    return absl::StrCat("num_workers ", c.num_workers, ": ", more.num_workers,
                        " workers changed images/s by ",
                        Percent(next->images_per_second / best.images_per_second),
                        " (", cpus, ")");
  }
  TrialConfig fewer = c;
  fewer.num_workers = c.num_workers - 1;
  const TrialResult* previous = search.Find(fewer);
  const std::string most =
      c.num_workers >= search.max_workers()
          ? absl::StrCat("; the most tried, 2 x cpu_budget ", cpu_budget)
          : "";
  if (previous != nullptr) {
    return absl::StrCat("num_workers ", c.num_workers, ": ", fewer.num_workers,
                        fewer.num_workers == 1 ? " worker" : " workers", " changed images/s by ",
                        Percent(previous->images_per_second / best.images_per_second), " (",
                        cpus, most, ")");
  }
  return absl::StrCat("num_workers ", c.num_workers, ": the best measured (", cpus, most, ")");
}

// KnobReason explains prefetch_batches or batch_size (`field`) by the trials that differ
// from the choice in that knob: for each other value, the one at the chosen worker count
// when it ran, else the best at any worker count (then named), with `other` (the
// remaining knob) equal to the choice's.
std::string KnobReason(const TuneResult& result, const TrialResult& best, const std::string& knob,
                       int TrialConfig::*field, int TrialConfig::*other) {
  std::map<int, const TrialResult*> by_value;
  auto preferred = [&best](const TrialResult& a, const TrialResult* b) {
    if (b == nullptr) return true;
    const bool a_same = a.config.num_workers == best.config.num_workers;
    const bool b_same = b->config.num_workers == best.config.num_workers;
    if (a_same != b_same) return a_same;
    return a.images_per_second > b->images_per_second;
  };
  for (const TrialResult& t : result.trials) {
    if (t.config.*field == best.config.*field || t.config.*other != best.config.*other) continue;
    const TrialResult*& slot = by_value[t.config.*field];
    if (preferred(t, slot)) slot = &t;
  }
  std::vector<std::string> parts;
  for (const auto& [value, t] : by_value) {
    std::string part = absl::StrCat(knob, " ", value, " ",
                                    Percent(t->images_per_second / best.images_per_second));
    if (t->config.num_workers != best.config.num_workers) {
      absl::StrAppend(&part, " (at num_workers ", t->config.num_workers, ")");
    }
    parts.push_back(part);
  }
  for (const NotTried& n : result.not_tried) {
    if (n.config.*field == best.config.*field) continue;
    parts.push_back(absl::StrCat(knob, " ", n.config.*field, " not tried: ", n.why));
  }
  std::string why = parts.empty() ? "the only value measured" : absl::StrJoin(parts, "; ");
  return absl::StrCat(knob, " ", best.config.*field, ": ", why);
}

}  // namespace

absl::StatusOr<TuneResult> TuneSearch(const TuneOptions& options, const TrialRunner& run,
                                      const MemoryCheck& fits) {
  if (options.cpu_budget < 1) return absl::InvalidArgumentError("cpu_budget must be >= 1");
  if (options.batch_sizes.empty() || options.prefetch_choices.empty()) {
    return absl::InvalidArgumentError("batch_sizes and prefetch choices must not be empty");
  }
  for (int v : options.batch_sizes) {
    if (v < 1) return absl::InvalidArgumentError(absl::StrCat("batch_sizes must be >= 1, got ", v));
  }
  for (int v : options.prefetch_choices) {
    if (v < 1) return absl::InvalidArgumentError(absl::StrCat("prefetch must be >= 1, got ", v));
  }
  if (!(options.time_budget_seconds > 0)) {
    return absl::InvalidArgumentError("time_budget must be > 0 seconds");
  }
  Search search(options, run, fits);
  if (options.grid) {
    RunGrid(search, options);
  } else {
    RunHillClimb(search, options);
  }
  TuneResult& result = search.result();
  if (result.trials.empty()) {
    std::string why = "no configuration could be measured";
    if (!result.not_tried.empty()) absl::StrAppend(&why, ": ", result.not_tried.front().why);
    return absl::ResourceExhaustedError(why);
  }
  result.best = Choose(search, result.trials);
  result.cpu_budget = options.cpu_budget;
  result.ram_budget_bytes = options.ram_budget_bytes;
  result.grid = options.grid;
  result.seconds = search.elapsed();
  result.reasons = {
      WorkerReason(search, result.best, options.cpu_budget),
      KnobReason(result, result.best, "prefetch_batches", &TrialConfig::prefetch_batches,
                 &TrialConfig::batch_size),
      KnobReason(result, result.best, "batch_size", &TrialConfig::batch_size,
                 &TrialConfig::prefetch_batches)};
  if (search.consumer_goal() && result.best.consumer_wait_fraction >= kWaitTarget) {
    result.reasons.push_back(absl::StrFormat(
        "no configuration within the budgets kept the consumer waiting under 5%%; the best "
        "waited %.1f%%: the loader needs more CPUs than cpu_budget %d",
        100 * result.best.consumer_wait_fraction, options.cpu_budget));
  }
  return std::move(result);
}

namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

PipelineOptions TrialOptions(const PipelineOptions& base, const TrialConfig& c) {
  PipelineOptions o = base;
  o.num_workers = c.num_workers;
  o.batch_size = c.batch_size;
  o.prefetch_batches = c.prefetch_batches;
  o.epochs = 0;  // Until the trial stops it.
  o.resume = Cursor{};
  o.trace_spans = 0;
  return o;
}

// RunTrial measures a real pipeline: the clock starts at its first batch.
// (`trial` is TrialOptions for `c`, fitted to the budget: FittedTrialOptions.)
absl::StatusOr<TrialResult> RunTrial(const TuneOptions& options, const TrialConfig& c,
                                     const PipelineOptions& trial, double seconds) {
  ResetPeakResident();
  const absl::Time created = absl::Now();
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(trial);
  if (!pipeline.ok()) return pipeline.status();
  const PipelineStats& stats = *(*pipeline)->stats();
  absl::Time start;
  uint64_t samples0 = 0;
  int64_t wait0 = 0;
  double cpu0 = 0;
  bool measuring = false;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end = false;
    if (absl::Status s = (*pipeline)->Next(&batch, &end); !s.ok()) return s;
    if (batch == nullptr) continue;  // An end of epoch.
    if (options.consumer != nullptr) {
      options.consumer(*batch);
    } else if (options.consumer_ms > 0) {
      absl::SleepFor(absl::Milliseconds(options.consumer_ms));
    }
    batch.reset();
    const absl::Time now = absl::Now();
    if (!measuring) {
      measuring = true;
      start = now;
      samples0 = stats.samples.load();
      wait0 = stats.consumer_wait_nanos.load();
      cpu0 = CpuSeconds();
      continue;
    }
    const double wall = absl::ToDoubleSeconds(now - start);
    if (wall < seconds) continue;
    TrialResult r;
    r.config = c;
    r.images_per_second = static_cast<double>(stats.samples.load() - samples0) / wall;
    r.cpu_cores = (CpuSeconds() - cpu0) / wall;
    r.consumer_wait_fraction =
        static_cast<double>(stats.consumer_wait_nanos.load() - wait0) / 1e9 / wall;
    r.peak_rss_bytes = PeakResidentBytes();
    pipeline->reset();
    r.seconds = absl::ToDoubleSeconds(absl::Now() - created);
    return r;
  }
}

// OptionsFit checks a trial's memory plan as given, on top of what the process already
// holds, against the RAM budget (ResourceExhausted when over it).
absl::Status OptionsFit(const TuneOptions& options, const PipelineOptions& trial,
                        int64_t baseline_bytes) {
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemoryAsGiven(trial);
  if (!plan.ok()) return plan.status();
  const int64_t needed = baseline_bytes + plan->total_bytes();
  if (needed <= options.ram_budget_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "it would need ", FormatBytes(needed), " (the plan ", FormatBytes(plan->total_bytes()),
      plan->LargestPartNote(), ", plus ", FormatBytes(baseline_bytes),
      " the process holds), over the ", FormatBytes(options.ram_budget_bytes),
      " ram_budget (flowloader plan lists every part)"));
}

// FittedTrialOptions is TrialOptions for `c` with the optional caches (the seek index)
// shrunk to fit the RAM budget, as far as they must: a configuration is refused only
// when it does not fit without them.
PipelineOptions FittedTrialOptions(const TuneOptions& options, const TrialConfig& c,
                                   int64_t baseline_bytes) {
  const PipelineOptions trial = TrialOptions(options.pipeline, c);
  absl::StatusOr<PipelineOptions> fitted =
      FitOptionalMemory(trial, [&options, baseline_bytes](const PipelineOptions& o) {
        return OptionsFit(options, o, baseline_bytes);
      });
  return fitted.ok() ? *std::move(fitted) : trial;
}

// PlanFits checks the configuration's memory plan (its caches fitted), on top of what the
// process already holds, against the RAM budget.
absl::Status PlanFits(const TuneOptions& options, const TrialConfig& c, int64_t baseline_bytes) {
  return OptionsFit(options, FittedTrialOptions(options, c, baseline_bytes), baseline_bytes);
}

}  // namespace

absl::StatusOr<TuneResult> Tune(const TuneOptions& given) {
  TuneOptions options = given;
  if (options.cpu_budget <= 0) options.cpu_budget = UsableCpus();
  if (options.ram_budget_bytes <= 0) {
    const MemoryBudget available = AvailableMemory();
    options.ram_budget_bytes =
        available.known() ? available.bytes / 2 : std::numeric_limits<int64_t>::max();
  }
  const int64_t baseline = std::max<int64_t>(0, ResidentBytes());
  return TuneSearch(
      options,
      [&options, baseline](const TrialConfig& c, double seconds) {
        return RunTrial(options, c, FittedTrialOptions(options, c, baseline), seconds);
      },
      [&options, baseline](const TrialConfig& c) { return PlanFits(options, c, baseline); });
}

namespace {

void AppendTrial(std::string* out, const TrialResult& t, bool with_seconds) {
  absl::StrAppendFormat(out,
                        "{\"num_workers\": %d, \"batch_size\": %d, \"prefetch_batches\": %d, "
                        "\"images_per_second\": %.1f, \"cpu_cores\": %.3f, "
                        "\"peak_rss_bytes\": %d, \"consumer_wait_fraction\": %.4f",
                        t.config.num_workers, t.config.batch_size, t.config.prefetch_batches,
                        t.images_per_second, t.cpu_cores, t.peak_rss_bytes,
                        t.consumer_wait_fraction);
  if (with_seconds) absl::StrAppendFormat(out, ", \"seconds\": %.3f", t.seconds);
  out->push_back('}');
}


}  // namespace

std::string TuneJson(const TuneResult& r) {
  std::string out = "{\"best\": ";
  AppendTrial(&out, r.best, false);
  out += ", \"trials\": [";
  for (size_t i = 0; i < r.trials.size(); ++i) {
    if (i > 0) out += ", ";
    AppendTrial(&out, r.trials[i], true);
  }
  out += "], \"not_tried\": [";
  for (size_t i = 0; i < r.not_tried.size(); ++i) {
    const NotTried& n = r.not_tried[i];
    absl::StrAppendFormat(&out,
                          "%s{\"num_workers\": %d, \"batch_size\": %d, \"prefetch_batches\": %d, "
                          "\"why\": %s}",
                          i > 0 ? ", " : "", n.config.num_workers, n.config.batch_size,
                          n.config.prefetch_batches, JsonString(n.why));
  }
  absl::StrAppendFormat(&out,
                        "], \"budgets\": {\"cpu\": %d, \"ram_bytes\": %d}, \"seconds\": %.3f, "
                        "\"grid\": %s, \"reasons\": [",
                        r.cpu_budget, r.ram_budget_bytes, r.seconds, r.grid ? "true" : "false");
  for (size_t i = 0; i < r.reasons.size(); ++i) {
    absl::StrAppend(&out, i > 0 ? ", " : "", JsonString(r.reasons[i]));
  }
  return out + "]}\n";
}

PipelineOptions TunedOptions(const PipelineOptions& base, const TuneResult& result) {
  PipelineOptions o = base;
  o.num_workers = result.best.config.num_workers;
  o.batch_size = result.best.config.batch_size;
  o.prefetch_batches = result.best.config.prefetch_batches;
  return o;
}

}  // namespace flowloader
