#include "stages/reader/read_ahead.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace flowloader {

namespace {

// The limit is re-estimated every this many takes: often enough to grow within a batch
// or two, over enough samples that one slow read does not swing it.
constexpr int64_t kEstimateEvery = 32;
// Headroom over Little's law: latencies vary, and a read that finishes late stalls a
// worker.
constexpr double kHeadroom = 1.5;
// A window is late when at least 1/kLateShare of the takes of reads queued here (and at
// least kLateMin) had to wait for their read or found it still queued.
constexpr int64_t kLateShare = 8;
constexpr int64_t kLateMin = 2;
// A probe multiplies the limit by kProbeGrowth. It is judged once kProbeRoundTrips round
// trips and kEstimateEvery takes have passed: kept when the take rate rose by kProbeGain
// or more (a latency-bound store gives up to kProbeGrowth), else undone and not tried
// again for kProbeHold windows; the limit comes down only after kProbeHold calm windows.
constexpr double kProbeGrowth = 1.5;
constexpr double kProbeGain = 1.2;
constexpr int kProbeRoundTrips = 3;
constexpr int kProbeHold = 8;
// The windows whose rate together a probe must beat.
constexpr size_t kRecentWindows = 4;

}  // namespace

absl::StatusOr<std::unique_ptr<ReadAhead>> ReadAhead::Create(const ReadAheadOptions& options) {
  if (options.max_in_flight < 1 || options.min_in_flight < 1 ||
      options.min_in_flight > options.max_in_flight) {
    return absl::InvalidArgumentError(absl::StrCat(
        "read_ahead: in-flight limits must be 1 <= min <= max, got min ",
        options.min_in_flight, " max ", options.max_in_flight));
  }
  if (options.max_bytes <= 0 || options.max_entries < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "read_ahead: max_bytes must be > 0 and max_entries >= 1, got ", options.max_bytes,
        " and ", options.max_entries));
  }
  return std::unique_ptr<ReadAhead>(new ReadAhead(options));
}

ReadAhead::ReadAhead(const ReadAheadOptions& options) : options_(options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = options.adaptive ? options.min_in_flight : options.max_in_flight;
    floor_ = options.min_in_flight;
    stats_.peak_limit = limit_;
    window_start_ = absl::Now();
  }
  // Outside mu_: the report calls figures() (which takes mu_) under its own lock.
  if (options_.report != nullptr) {
    options_.report->AttachReadAhead([this] { return figures(); },
                                     [this](int floor) { SetFloor(floor); });
  }
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
    urgent_queue_.clear();
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
  if (options_.report != nullptr) options_.report->DetachReadAhead();  // Keeps the last.
}

void ReadAhead::StartFetch(Key key, FetchFn fetch) {
  Queue(key, nullptr, std::move(fetch), false);
}

void ReadAhead::Start(Key key, ReadFn read) { Queue(key, std::move(read), nullptr, false); }

void ReadAhead::StartUrgent(Key key, ReadFn read) {
  Queue(key, std::move(read), nullptr, true);
}

void ReadAhead::Queue(Key key, ReadFn read, FetchFn fetch, bool urgent) {
  const bool fetch_only = fetch != nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || entries_.count(key) > 0) return;
  Entry& entry = entries_[key];
  entry.read = std::move(read);
  entry.fetch = std::move(fetch);
  entry.fetch_only = fetch_only;
  entry.urgent = urgent;
  if (fetch_only) ++queued_fetches_;
  (urgent ? urgent_queue_ : queue_).push_back(key);
  order_.push_back(key);
  ForgetLocked();
  // A thread per read in flight, made when none is free (threads_ only grows here).
  const int allowed = urgent       ? UrgentLimitLocked()
                      : fetch_only ? std::max(limit_, fetch_limit_)
                                   : limit_;
  if (idle_threads_ == 0 && static_cast<int>(threads_.size()) < allowed) {
    threads_.emplace_back([this] { Work(); });
    stats_.threads = static_cast<int>(threads_.size());
  }
  work_.notify_one();
}

void ReadAhead::ForgetLocked() {
  while (static_cast<int>(order_.size()) > options_.max_entries) {
    auto it = entries_.find(order_.front());
    if (it != entries_.end() && it->second.state == State::kRunning) break;
    if (it != entries_.end()) {
      if (it->second.state == State::kDone) done_bytes_ -= it->second.bytes.size();
      if (it->second.state == State::kQueued && it->second.fetch_only) --queued_fetches_;
      entries_.erase(it);
      ++stats_.dropped;
    }
    order_.pop_front();
  }
  // Keys already taken linger in order_ until they reach its front; trim those too, so
  // it stays about as long as entries_.
  while (!order_.empty() && entries_.count(order_.front()) == 0) order_.pop_front();
}

int ReadAhead::UrgentLimitLocked() const {
  return options_.adaptive ? options_.max_in_flight : limit_;
}

int ReadAhead::QueueLimitLocked() const {
  if (queue_.empty()) return limit_;
  auto it = entries_.find(queue_.front());
  return it == entries_.end() || it->second.fetch_only ? std::max(limit_, fetch_limit_) : limit_;
}

bool ReadAhead::CanStartLocked() const {
  if (done_bytes_ >= options_.max_bytes) return false;
  return (!urgent_queue_.empty() && running_ < UrgentLimitLocked()) ||
         (!queue_.empty() && running_ < QueueLimitLocked());
}

void ReadAhead::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_threads_;
    work_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || CanStartLocked();
    });
    --idle_threads_;
    if (stop_) return;
    // Urgent reads first, while their limit allows; the rest within the limit.
    std::deque<Key>& from =
        !urgent_queue_.empty() && running_ < UrgentLimitLocked() ? urgent_queue_ : queue_;
    const Key key = from.front();
    from.pop_front();
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.state != State::kQueued) continue;  // Taken.
    it->second.state = State::kRunning;
    if (it->second.fetch_only) --queued_fetches_;
    if (it->second.urgent) ++stats_.urgent;
    ReadFn read = std::move(it->second.read);
    FetchFn fetch = std::move(it->second.fetch);
    AccountInFlightLocked(absl::Now());
    ++running_;
    ++stats_.started;
    if (it->second.fetch_only) ++stats_.fetches;
    stats_.peak_in_flight = std::max(stats_.peak_in_flight, running_);
    // Reads wait behind the limit: a late window may grow it (EstimateLocked).
    if (running_ >= QueueLimitLocked() && !queue_.empty()) window_full_ = true;
    std::string bytes = it->second.fetch_only ? std::string() : SpareLocked();
    lock.unlock();
    const absl::Time t0 = absl::Now();
    // A fetch with nothing to do waited on no store: no latency to learn from.
    bool measured = true;
    absl::Status status;
    if (fetch != nullptr) {
      absl::StatusOr<bool> requested = fetch();
      measured = !requested.ok() || *requested;
      status = requested.status();
    } else {
      status = read(&bytes);
    }
    const absl::Time t1 = absl::Now();
    const absl::Duration latency = t1 - t0;
    lock.lock();
    AccountInFlightLocked(t1);
    --running_;
    if (measured) {
      total_latency_ += latency;
      ++finished_;
      window_latency_ += latency;
      ++window_reads_;
      window_latencies_.push_back(latency);
    }
    // A running entry is never erased (Take waits, Forget skips it).
    Entry& entry = entries_[key];
    entry.state = State::kDone;
    entry.bytes = std::move(bytes);
    entry.status = std::move(status);
    done_bytes_ += entry.bytes.size();
    TrimSparesLocked();
    done_.notify_all();
  }
}

bool ReadAhead::Take(Key key, std::string* contents, absl::Status* status) {
  std::unique_lock<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  if (++window_takes_ >= kEstimateEvery) EstimateLocked(now);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats_.unknown;
    return false;
  }
  ++window_entry_takes_;
  if (it->second.state == State::kQueued) {
    if (it->second.fetch_only) --queued_fetches_;
    entries_.erase(it);  // Its queue_ key is skipped when reached.
    ++stats_.not_started;
    ++window_late_;
    return false;
  }
  if (it->second.state == State::kRunning) {
    ++stats_.waited;
    ++window_late_;
    done_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return it->second.state == State::kDone;
    });
  } else {
    ++stats_.ready;
  }
  if (it->second.fetch_only) {  // Its bytes are in the cache it filled: read them there.
    entries_.erase(it);
    lock.unlock();
    work_.notify_one();
    return false;
  }
  contents->swap(it->second.bytes);
  *status = std::move(it->second.status);
  done_bytes_ -= contents->size();
  RecycleLocked(std::move(it->second.bytes));  // The caller's buffer, for a later read.
  entries_.erase(it);
  lock.unlock();
  work_.notify_one();  // Bytes were freed: a read may start.
  return true;
}

void ReadAhead::NoteBlockRead(bool cached) {
  std::lock_guard<std::mutex> lock(mu_);
  ++window_block_reads_;
  if (!cached) ++window_late_;
}

void ReadAhead::EstimateLocked(absl::Time now) {
  const double seconds = absl::ToDoubleSeconds(now - window_start_);
  if (!window_latencies_.empty()) {
    const auto quartile = window_latencies_.begin() + window_latencies_.size() / 4;
    std::nth_element(window_latencies_.begin(), quartile, window_latencies_.end());
    round_trip_ = std::min(round_trip_, *quartile);
  }
  if (options_.adaptive && window_reads_ > 0 && seconds > 0) {
    const double latency = absl::ToDoubleSeconds(round_trip_);
    // The rate samples are taken at. For fetch-only reads (a block serves ~10-20 samples)
    // this asks for more in flight than the blocks' own rate would; harmless, as their
    // number is bounded by the samples announced and their bytes by the block cache, and
    // a shuffled epoch needs nearly every block early (measured: counting only the takes
    // of the fetches' claimers left shards from loopback servers ~15% slower).
    // Over this window and the few before it: takes come in bursts of a batch, and one
    // window's rate swings both ways (the limit follows it up at once, down slowly).
    const double rate = RecentRateLocked(seconds);
    const int target = static_cast<int>(std::ceil(kHeadroom * rate * latency)) + 2;
    const bool late = window_late_ >= kLateMin &&
                      window_late_ * kLateShare >= window_entry_takes_ + window_block_reads_;
    const int allowed_before = std::max(limit_, fetch_limit_);
    calm_windows_ = late ? 0 : calm_windows_ + 1;
    const int next = NextLimitLocked(now, rate, target, late);
    if (probe_hold_ > 0) --probe_hold_;
    limit_ = std::clamp(next, floor_, options_.max_in_flight);
    // Fetch-only reads (shards' blocks) follow this window's own rate, unsmoothed (one
    // fetch serves ~10-20 samples: Little's law in samples asks for more than the blocks
    // need, which costs little, as there is one per block an epoch, their bytes are the
    // block cache's, and a shuffled epoch needs nearly every block early), never below
    // limit_, which late windows probe up (a stalled window, takes slow while blocks are
    // missing, left them at 8 in flight: shards through the 20 ms proxy ran at 0.56x of
    // the runs whose limit grew). Not a ratchet: kept up to 128, 100 fetches of 1 MiB in
    // flight cost the client 0.25 s more CPU an epoch (0.75 -> 1.00 s) for no images/s.
    // But not lowered while fetch-only reads are queued: the blocks the announced samples
    // need are waiting, and a window whose takes stalled on them measures a low rate that
    // says nothing of how many are needed (traced through the 20 ms proxy: one fast
    // window raised the limit to 30, the next, stalled, put it back to 12 with ~60 blocks
    // still queued, and the workers waited ~0.4 s for them at 8-12 in flight). It follows
    // the rate again once the queue has drained (the burst at an epoch's start is over).
    const double window_rate = window_takes_ / seconds;
    const int fetch_target = std::clamp(
        std::max(limit_, static_cast<int>(std::ceil(kHeadroom * window_rate * latency)) + 2),
        options_.min_in_flight, options_.max_in_flight);
    fetch_limit_ = queued_fetches_ > 0 ? std::max(fetch_limit_, fetch_target) : fetch_target;
    stats_.peak_limit = std::max({stats_.peak_limit, limit_, fetch_limit_});
    StartThreadsForLimitLocked(allowed_before);
  }
  recent_.emplace_back(window_takes_, seconds);
  if (recent_.size() > kRecentWindows) recent_.pop_front();
  window_start_ = now;
  window_takes_ = window_reads_ = window_entry_takes_ = window_late_ = window_block_reads_ = 0;
  window_full_ = false;
  window_latency_ = absl::ZeroDuration();
  window_latencies_.clear();
}

double ReadAhead::RecentRateLocked(double seconds) const {
  double takes = static_cast<double>(window_takes_);
  for (const auto& [window_takes, window_seconds] : recent_) {
    takes += static_cast<double>(window_takes);
    seconds += window_seconds;
  }
  return takes / seconds;
}

int ReadAhead::NextLimitLocked(absl::Time now, double rate, int target, bool late) {
  if (probe_from_ > 0) {
    // A probe is judged on the takes since it began, over a few round trips (the reads it
    // started take one to come back).
    probe_takes_ += window_takes_;
    if (now - probe_start_ < kProbeRoundTrips * round_trip_ || probe_takes_ < kEstimateEvery) {
      return limit_;
    }
    const double after = probe_takes_ / absl::ToDoubleSeconds(now - probe_start_);
    const int before_probe = probe_from_;
    probe_from_ = 0;
    if (after >= kProbeGain * probe_rate_) return limit_;
    // More in flight bought nothing: back, and no probe for a while.
    probe_hold_ = kProbeHold;
    ++stats_.probes_undone;
    return before_probe;
  }
  if (late && window_full_ && probe_hold_ == 0 && !recent_.empty() &&
      limit_ < options_.max_in_flight) {
    // Takes wait for reads queued behind the limit: try more in flight, and keep them only
    // if takes come faster (a latency-bound store), not if the reads only queue longer at a
    // saturated one. Judged against the rate of the last few windows.
    probe_from_ = limit_;
    probe_rate_ = rate;
    probe_start_ = now;
    probe_takes_ = 0;
    ++stats_.probes;
    return std::max(target, static_cast<int>(std::ceil(limit_ * kProbeGrowth)));
  }
  if (!late && target >= limit_) return target;  // Little's law asks for more: at once.
  if (!late && calm_windows_ >= kProbeHold) {
    // Keeping up for a while: down towards Little's law by an eighth a window (a limit
    // that dropped at once, or after one calm window, would be late again).
    return std::max(target, limit_ - std::max(1, limit_ / 8));
  }
  // Otherwise (late with no probe to make, or calm only briefly) the limit stays: a late
  // window that followed the estimate down would undo kept probes, and one that followed
  // it only up would ratchet on its noise at a saturated store.
  return limit_;
}

void ReadAhead::StartThreadsForLimitLocked(int allowed_before) {
  const int allowed = std::max(limit_, fetch_limit_);
  if (allowed <= allowed_before) return;
  // Threads for the reads the higher limit lets start (Queue makes them only as reads are
  // queued, so reads queued earlier would wait for the next Start).
  const int more =
      std::min(allowed - static_cast<int>(threads_.size()), static_cast<int>(queue_.size()));
  for (int i = 0; i < more; ++i) threads_.emplace_back([this] { Work(); });
  stats_.threads = static_cast<int>(threads_.size());
  work_.notify_all();
}

void ReadAhead::SetFloor(int floor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!options_.adaptive || stop_) return;
  floor_ = std::clamp(floor, options_.min_in_flight, options_.max_in_flight);
  if (limit_ >= floor_) return;  // Lowered (or under the limit): the limit follows demand.
  const int allowed_before = std::max(limit_, fetch_limit_);
  limit_ = floor_;
  fetch_limit_ = std::max(fetch_limit_, limit_);
  stats_.peak_limit = std::max(stats_.peak_limit, limit_);
  StartThreadsForLimitLocked(allowed_before);
}

void ReadAhead::AccountInFlightLocked(absl::Time now) {
  if (running_ > 0) {
    const double seconds = absl::ToDoubleSeconds(now - in_flight_since_);
    in_flight_seconds_ += running_ * seconds;
    busy_seconds_ += seconds;
  }
  in_flight_since_ = now;
}

void ReadAhead::RecycleLocked(std::string buffer) {
  const int64_t capacity = static_cast<int64_t>(buffer.capacity());
  if (capacity <= static_cast<int64_t>(std::string().capacity())) return;  // Nothing held.
  if (static_cast<int>(spares_.size()) >= options_.max_in_flight ||
      done_bytes_ + spare_bytes_ + capacity > options_.max_bytes) {
    return;  // Freed here.
  }
  buffer.clear();
  spare_bytes_ += capacity;
  spares_.push_back(std::move(buffer));
}

void ReadAhead::TrimSparesLocked() {
  while (!spares_.empty() && (done_bytes_ + spare_bytes_ > options_.max_bytes ||
                              static_cast<int>(spares_.size()) > options_.max_in_flight)) {
    spare_bytes_ -= static_cast<int64_t>(spares_.back().capacity());
    spares_.pop_back();
  }
}

std::string ReadAhead::SpareLocked() {
  if (spares_.empty()) return std::string();
  std::string buffer = std::move(spares_.back());
  spares_.pop_back();
  spare_bytes_ -= static_cast<int64_t>(buffer.capacity());
  ++stats_.reused;
  return buffer;
}

ReadAheadFigures ReadAhead::figures() const {
  const ReadAheadStats s = stats();
  ReadAheadFigures f;
  f.present = true;
  f.adaptive = options_.adaptive;
  f.limit = s.limit;
  f.floor = s.floor;
  f.min_in_flight = options_.min_in_flight;
  f.max_in_flight = options_.max_in_flight;
  f.max_bytes = options_.max_bytes;
  f.peak_in_flight = s.peak_in_flight;
  f.threads = s.threads;
  f.started = s.started;
  f.ready = s.ready;
  f.waited = s.waited;
  f.not_started = s.not_started;
  f.reused = s.reused;
  f.urgent = s.urgent;
  f.fetches = s.fetches;
  f.peak_limit = s.peak_limit;
  f.mean_in_flight = s.mean_in_flight;
  f.probes = s.probes;
  f.probes_undone = s.probes_undone;
  f.mean_latency_seconds = absl::ToDoubleSeconds(s.mean_latency);
  return f;
}

ReadAheadStats ReadAhead::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ReadAheadStats s = stats_;
  s.limit = limit_;
  s.fetch_limit = std::max(limit_, fetch_limit_);
  s.floor = floor_;
  s.mean_latency = finished_ > 0 ? total_latency_ / finished_ : absl::ZeroDuration();
  s.mean_in_flight = busy_seconds_ > 0 ? in_flight_seconds_ / busy_seconds_ : 0;
  return s;
}

}  // namespace flowloader
