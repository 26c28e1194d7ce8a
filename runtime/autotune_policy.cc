// autotune_policy.cc: AutotunePolicy.
#include "runtime/autotune_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/autotune_stats.h"

namespace flowloader {
namespace {

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

// The wait used in Little's law is capped, so that one raise at most doubles the reads in
// flight: a wait that began in an earlier window counts whole in the window it ends in
// (shares over 100% are common), and at 100% it would ask for infinity.
constexpr double kMaxStorageWait = 0.5;

}  // namespace

AutotunePolicy::AutotunePolicy(const AutotunePolicyOptions& options)
    : options_(options),
      max_buffers_(options.max_buffers),
      calm_needed_(options.calm_windows),
      max_read_ahead_(options.max_read_ahead) {}

std::optional<AutotuneChange> AutotunePolicy::Decide(const AutotuneWindow& window, int workers,
                                                     int buffers, int read_ahead) {
  ++windows_;
  if (skip_next_ || window.seconds <= 0) {
    skip_next_ = false;
    return std::nullopt;
  }
  if (raise_pending_) {  // The first window judged after a raise of read_ahead.
    raise_pending_ = false;
    if (std::optional<AutotuneChange> undo = JudgeReadAhead(window, read_ahead)) return undo;
  }
  if (window.consumer_wait_fraction > options_.hungry_wait) {
    calm_ = 0;
    return Grow(window, workers, buffers, read_ahead);
  }
  if (window.consumer_wait_fraction >= options_.calm_wait) {
    calm_ = 0;  // Between the thresholds: hold (hysteresis).
    return std::nullopt;
  }
  if (++calm_ < calm_needed_) return std::nullopt;
  calm_ = 0;
  return Shrink(window, workers, buffers, read_ahead);
}

bool AutotunePolicy::StorageBound(const AutotuneWindow& w) const {
  return options_.tune_read_ahead && w.storage_wait_fraction >= options_.storage_to_grow;
}

std::optional<AutotuneChange> AutotunePolicy::GrowReadAhead(const AutotuneWindow& w,
                                                            int read_ahead) {
  // The ceiling: the read-ahead's own, lowered by a saturated store, and the reads whose
  // bytes its budget holds (each read in flight lands as one finished, untaken body).
  if (windows_ >= saturated_until_) max_read_ahead_ = options_.max_read_ahead;
  int cap = max_read_ahead_;
  if (w.storage_bytes_per_request > 0) {
    cap = static_cast<int>(std::min<double>(
        cap, static_cast<double>(options_.read_ahead_bytes) / w.storage_bytes_per_request));
  }
  cap = std::max(cap, options_.min_read_ahead);
  const int limit = std::max(read_ahead, w.read_ahead_limit);
  // At the ceiling nothing helps from here: a worker more would only wait on reads too.
  if (limit >= cap) return std::nullopt;
  // Little's law: the reads in flight now (requests/s × latency), for the rate that
  // stops the waits: 1 / (1 - wait) times this one, with the smaller of the consumer's
  // wait (the rate it needs) and the workers' storage wait (the rate they could take
  // without it), capped (kMaxStorageWait).
  const double wait = std::min(
      {w.consumer_wait_fraction, w.storage_wait_fraction, kMaxStorageWait});
  const double in_flight = w.storage_requests_per_second * w.storage_latency_seconds;
  const int needed = static_cast<int>(std::ceil(in_flight / (1 - wait)));
  const int grown = static_cast<int>(std::ceil(limit * options_.read_ahead_growth));
  const int to = std::min(cap, std::max({needed, grown, limit + 1}));
  raise_pending_ = true;
  raise_from_ = read_ahead;
  raise_limit_ = limit;
  raise_rate_ = w.storage_requests_per_second;
  raise_latency_ = w.storage_latency_seconds;
  return Made({kKnobReadAhead, read_ahead, to,
               absl::StrFormat("the consumer waited %s, workers waited on storage %s of their "
                               "time (requests %.1f ms, %.1f in flight, read-ahead limit %d): "
                               "%d in flight to stop the waits (ceiling %d)",
                               Percent(w.consumer_wait_fraction),
                               Percent(w.storage_wait_fraction),
                               1e3 * w.storage_latency_seconds, in_flight, w.read_ahead_limit,
                               to, cap)});
}

std::optional<AutotuneChange> AutotunePolicy::JudgeReadAhead(const AutotuneWindow& w,
                                                             int read_ahead) {
  // Kept when storage no longer limits (the waits stopped), the store answered faster, or
  // its latency held (a store further away: the window's rate is noise, not saturation).
  if (w.consumer_wait_fraction <= options_.hungry_wait || !StorageBound(w) ||
      w.storage_requests_per_second >= options_.read_ahead_gain * raise_rate_ ||
      w.storage_latency_seconds < options_.read_ahead_gain * raise_latency_ ||
      read_ahead <= raise_from_) {
    return std::nullopt;
  }
  // A saturated store: more in flight only queued longer. Back, and no raise past the
  // limit the read-ahead had then for regret_windows (a store's load changes; so does a
  // shared machine's).
  max_read_ahead_ = std::max(options_.min_read_ahead, raise_limit_);
  saturated_until_ = windows_ + options_.regret_windows;
  return Made({kKnobReadAhead, read_ahead, raise_from_,
               absl::StrFormat("%d in flight brought %.0f requests/s against %.0f before "
                               "(requests %.1f ms against %.1f): the store is saturated; no "
                               "raise past %d for %d windows",
                               read_ahead, w.storage_requests_per_second, raise_rate_,
                               1e3 * w.storage_latency_seconds, 1e3 * raise_latency_,
                               max_read_ahead_, options_.regret_windows)});
}

std::optional<AutotuneChange> AutotunePolicy::Grow(const AutotuneWindow& w, int workers,
                                                   int buffers, int read_ahead) {
  const std::string waited =
      absl::StrCat("the consumer waited ", Percent(w.consumer_wait_fraction));
  const bool workers_are_the_limit = w.worker_busy_fraction >= options_.busy_to_grow;
  const bool cpu_free = w.cpu_cores <= options_.cpu_budget - options_.free_cpu_margin;
  // Idle workers: they run out of samples when every buffer is taken (whatever they wait
  // on while busy: with no sample to read, more reads in flight would not feed them).
  if (!workers_are_the_limit && options_.tune_buffers && buffers < max_buffers_ &&
      w.source_blocked_fraction > options_.blocked_to_grow_buffers) {
    return Made({kKnobPrefetchBatches, buffers, buffers + 1,
                 absl::StrCat(waited, ", workers busy only ", Percent(w.worker_busy_fraction),
                              " and the source waited for a free buffer ",
                              Percent(w.source_blocked_fraction))});
  }
  // Workers waiting on remote reads: more reads in flight, never more workers.
  if (StorageBound(w)) return GrowReadAhead(w, read_ahead);
  if (workers_are_the_limit) {
    if (!options_.tune_workers || workers >= options_.max_workers || !cpu_free) {
      // Busy workers and no CPU to add: the loader needs more than cpu_budget. A buffer
      // would only hold memory (the source is "blocked" because every buffer is being
      // filled, not for lack of one).
      return std::nullopt;
    }
    return Made({kKnobNumWorkers, workers, workers + 1,
                 absl::StrFormat("%s, workers busy %s%s, %.1f of %d cores in use", waited,
                                 Percent(w.worker_busy_fraction),
                                 options_.tune_read_ahead
                                     ? absl::StrCat(" (waiting on storage ",
                                                    Percent(w.storage_wait_fraction), ")")
                                     : "",
                                 w.cpu_cores, options_.cpu_budget)});
  }
  return std::nullopt;  // Neither knob is what holds the consumer up (a serial stage).
}

std::optional<AutotuneChange> AutotunePolicy::Shrink(const AutotuneWindow& w, int workers,
                                                     int buffers, int read_ahead) {
  const std::string calm = absl::StrFormat("the consumer waited under %s for %d windows",
                                           Percent(options_.calm_wait), calm_needed_);
  if (options_.tune_workers && workers > 1) {
    const double busy_after = w.worker_busy_fraction * workers / (workers - 1);
    if (busy_after <= options_.busy_after_shrink) {
      return Made({kKnobNumWorkers, workers, workers - 1,
                   absl::StrCat(calm, "; workers busy ", Percent(w.worker_busy_fraction),
                                ", ", Percent(busy_after), " with one fewer")});
    }
  }
  if (options_.tune_read_ahead && read_ahead > options_.min_read_ahead) {
    const int to = std::max(
        options_.min_read_ahead,
        std::min(read_ahead - 1,
                 static_cast<int>(std::floor(read_ahead / options_.read_ahead_growth))));
    return Made({kKnobReadAhead, read_ahead, to,
                 absl::StrCat(calm, "; fewer remote reads kept in flight free threads and "
                              "read-ahead memory")});
  }
  if (options_.tune_buffers && buffers > options_.min_buffers) {
    return Made({kKnobPrefetchBatches, buffers, buffers - 1,
                 absl::StrCat(calm, "; a buffer fewer frees memory")});
  }
  return std::nullopt;
}

std::optional<AutotuneChange> AutotunePolicy::Made(AutotuneChange change) {
  skip_next_ = true;
  if (change.to < change.from) {
    last_shrunk_ = change.knob;
    last_shrink_window_ = windows_;
  } else if (change.knob == last_shrunk_ &&
             windows_ - last_shrink_window_ <= options_.regret_windows) {
    // Grown straight back: that shrink was a mistake; wait longer before the next.
    calm_needed_ = std::min(options_.max_calm_windows, calm_needed_ * 2);
    last_shrunk_.clear();
  }
  return change;
}

void AutotunePolicy::MarkBuffersFull(int refused) {
  max_buffers_ = std::max(options_.min_buffers, std::min(max_buffers_, refused - 1));
}

}  // namespace flowloader
