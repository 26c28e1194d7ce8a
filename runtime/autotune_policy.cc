// autotune_policy.cc: AutotunePolicy.
#include "runtime/autotune_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/autotune_stats.h"

namespace flowloader {
namespace {

std::string Percent(double fraction) { return absl::StrFormat("%.1f%%", 100 * fraction); }

}  // namespace

AutotunePolicy::AutotunePolicy(const AutotunePolicyOptions& options)
    : options_(options),
      max_buffers_(options.max_buffers),
      calm_needed_(options.calm_windows) {}

std::optional<AutotuneChange> AutotunePolicy::Decide(const AutotuneWindow& window, int workers,
                                                     int buffers) {
  ++windows_;
  if (skip_next_ || window.seconds <= 0) {
    skip_next_ = false;
    return std::nullopt;
  }
  if (window.consumer_wait_fraction > options_.hungry_wait) {
    calm_ = 0;
    return Grow(window, workers, buffers);
  }
  if (window.consumer_wait_fraction >= options_.calm_wait) {
    calm_ = 0;  // Between the thresholds: hold (hysteresis).
    return std::nullopt;
  }
  if (++calm_ < calm_needed_) return std::nullopt;
  calm_ = 0;
  return Shrink(window, workers, buffers);
}

std::optional<AutotuneChange> AutotunePolicy::Grow(const AutotuneWindow& w, int workers,
                                                   int buffers) {
  const std::string waited =
      absl::StrCat("the consumer waited ", Percent(w.consumer_wait_fraction));
  const bool workers_are_the_limit = w.worker_busy_fraction >= options_.busy_to_grow;
  const bool cpu_free = w.cpu_cores <= options_.cpu_budget - options_.free_cpu_margin;
  if (workers_are_the_limit) {
    if (!options_.tune_workers || workers >= options_.max_workers || !cpu_free) {
      // Busy workers and no CPU to add: the loader needs more than cpu_budget. A buffer
      // would only hold memory (the source is "blocked" because every buffer is being
      // filled, not for lack of one).
      return std::nullopt;
    }
    return Made({kKnobNumWorkers, workers, workers + 1,
                 absl::StrFormat("%s, workers busy %s, %.1f of %d cores in use", waited,
                                 Percent(w.worker_busy_fraction), w.cpu_cores,
                                 options_.cpu_budget)});
  }
  // Idle workers: they run out of samples when every buffer is taken.
  if (options_.tune_buffers && buffers < max_buffers_ &&
      w.source_blocked_fraction > options_.blocked_to_grow_buffers) {
    return Made({kKnobPrefetchBatches, buffers, buffers + 1,
                 absl::StrCat(waited, ", workers busy only ", Percent(w.worker_busy_fraction),
                              " and the source waited for a free buffer ",
                              Percent(w.source_blocked_fraction))});
  }
  return std::nullopt;  // Neither knob is what holds the consumer up (a serial stage).
}

std::optional<AutotuneChange> AutotunePolicy::Shrink(const AutotuneWindow& w, int workers,
                                                     int buffers) {
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
