// read_ahead.h: reads started before the read stage asks for them, so that remote data
// (s3://, http(s)://) has many requests in flight instead of one per worker.
//
// A worker reading an object from a server waits a round trip per sample; with two
// workers that is two requests in flight, and a 20 ms round trip caps a run at ~100
// images/s. The pipeline knows the epoch's sample order when it dispatches a batch, so
// the read stage hears of the samples coming next (Start) and this class reads them on
// its own threads, up to an in-flight limit, while the workers decode. A worker then
// Takes the finished bytes (waiting if the read is under way), or reads the sample itself
// when its read was not started yet (so a worker never queues behind read-ahead).
//   * Bounded: at most `limit` reads in flight; no read starts while the finished,
//     untaken bytes exceed max_bytes (the memory plan's `read_ahead` part); at most
//     max_entries reads remembered (a sample never taken, e.g. failed by an earlier stage,
//     is forgotten once max_entries newer ones were started).
//   * The limit follows demand (adaptive, the default): Little's law, in flight = rate ×
//     latency, with the rate samples are taken and the round trip of the reads (× 1.5
//     headroom, + 2), between min_in_flight and max_in_flight, re-estimated every
//     kEstimateEvery takes. A read-bound pipeline takes as fast as reads finish, so the
//     estimate grows by half each time until the reads keep up (or max_in_flight).
//     The round trip is the lowest of the windows' first-quartile latencies so far, not
//     the latest mean (as BBR uses the minimum RTT): reads queued behind each other at a
//     busy server or CPU take longer the more are in flight, and a mean would feed that
//     back into a larger limit until max_in_flight (measured: through a 20 ms proxy the
//     limit ran to 128 and the mean latency to 146 ms, for fewer images/s than 48).
//   * Probing past Little's law: on a busy client or through a proxy the latency of
//     every read grows with the reads in flight, so the quietest round trip × 1.5 stops
//     the estimate short while more in flight would still bring faster takes (measured:
//     s3:// objects through a 20 ms proxy settled at ~40 in flight; a fixed 128 took
//     ~35% more images/s). A window is late when 1/8 or more of its takes waited for
//     their reads (or found them queued, or, for shards, found their blocks missing:
//     NoteBlockRead); a late window whose reads queued behind the limit multiplies it by
//     1.5, and the probe is judged a few round trips later: kept if takes came 20% faster
//     than over the last 4 windows, else undone and not tried for 8 windows (a saturated
//     store: more in flight only queues longer). Little's law still raises the limit at
//     once; it lowers it only after 8 windows in a row that kept up, by an eighth a
//     window (a late window leaves it as it is).
//   * Fetch-only reads have a limit of their own, at least the one above: Little's law
//     on each window's own take rate (in samples, more than the blocks' own rate asks;
//     there is one per block an epoch, their bytes are the block cache's, and a
//     shuffled epoch needs nearly every block early). A stalled window (takes slow while
//     blocks are missing) used to leave them at 8 in flight; its late takes now probe
//     the limit above up. It is not lowered while fetch-only reads are queued (a
//     shuffled epoch's first blocks: a window stalled on them measures a low rate that
//     says nothing of how many are still needed); it follows the rate once they ran.
//   * Buffers are recycled: Take hands the caller's buffer (the worker's spare, see
//     graph/internal/sample_buffers.h) back in exchange for the finished bytes, and the
//     next read fills it. A fresh ~100 KB buffer per read cost page faults and a copy
//     per growth (perf, s3:// ImageFolder, 2000 GETs: 5% of the client's CPU). Spares
//     count against max_bytes with the finished bytes, and are at most max_in_flight
//     buffers, not the adaptive limit: workers hand buffers back in bursts (a batch's
//     takes) while reads start at the limit's pace, and a cap of `limit` (8) freed
//     about half of them, each free trimming the heap and each fresh buffer faulting
//     its pages in again (perf, s3:// ImageFolder from the gateway: 955-1231 of 1999
//     reads reused a buffer; ~7000 page faults an epoch above a disk run's).
//   * Fetch-only reads (StartFetch) prepare a sample's bytes elsewhere instead of
//     returning them: the read stage fetches the blocks of a shard admitted to the block
//     cache (once per block, not once per member), and the worker then copies its member
//     out of the cache into its own recycled buffer. Take waits for such a read and says
//     "read it yourself"; it holds no bytes and no spare buffer.
//   * Urgent reads (StartUrgent) are those of the batch being dispatched now (the run's
//     first batch: nothing was announced ahead of it): the consumer already waits for
//     them, so they run before every queued read and, in the adaptive mode, past the
//     adaptive limit up to max_in_flight: a 20 ms round trip then costs the first batch
//     about one round trip instead of batch / min_in_flight of them. A fixed limit
//     (read_ahead=N) holds for them too.
//   * A floor from outside (SetFloor): the runtime's autotuner, which sees the consumer
//     wait for workers that wait on reads, raises the fewest reads kept in flight (at once
//     past Little's law and a probe's judgement) and lowers it back when the run is calm;
//     the limit then follows demand above it, down to it only (runtime/autotune_policy.h).
//   * Threads blocked on the network cost no CPU: one thread per read in flight, made
//     when first needed, joined by the destructor. Cancellation is the Env's (StorageEnv::
//     Cancel on Pipeline::Stop ends each read in flight within ~100 ms); the destructor
//     drops the queued reads and waits for those in flight.
//
// Thread-safety: thread-safe.
#ifndef FLOWLOADER_STAGES_READER_READ_AHEAD_H_
#define FLOWLOADER_STAGES_READER_READ_AHEAD_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "stages/reader/storage_stats.h"

namespace flowloader {

struct ReadAheadOptions {
  // Most reads in flight at once; >= 1. Default 128.
  int max_in_flight = 128;
  // Fewest reads in flight the adaptive limit goes down to (and starts at); in
  // [1, max_in_flight]. Default 8 (the read stage starts objects of their own at 16:
  // graph/read_stage.cc).
  int min_in_flight = 8;
  // true: the limit follows demand (see above); false: always max_in_flight.
  bool adaptive = true;
  // Finished bytes not yet taken past which no read starts; > 0. Default 64 MiB.
  int64_t max_bytes = int64_t{64} << 20;
  // Reads remembered (queued, running or finished, not taken); >= 1. Default 4096.
  int max_entries = 4096;
  // Where the figures are published (StorageStats::AttachReadAhead: the summary JSON);
  // null: nowhere.
  std::shared_ptr<const StorageStats> report;
};

// ReadAheadStats are a ReadAhead's counts so far.
struct ReadAheadStats {
  int64_t started = 0;      // Reads run on the read-ahead threads.
  int64_t ready = 0;        // Takes whose read had finished.
  int64_t waited = 0;       // Takes that waited for their read to finish.
  int64_t not_started = 0;  // Takes of a read not started yet (the worker read itself).
  int64_t unknown = 0;      // Takes of a sample never Started (or forgotten).
  int64_t dropped = 0;      // Reads forgotten untaken (max_entries).
  int64_t reused = 0;       // Reads that filled a recycled buffer.
  int64_t urgent = 0;       // Reads started from StartUrgent.
  int64_t fetches = 0;      // Fetch-only reads run (StartFetch).
  int64_t probes = 0;       // Times a late window raised the limit to probe (see above).
  int64_t probes_undone = 0;  // Probes that bought no faster takes, and were undone.
  int limit = 0;            // The in-flight limit now.
  int fetch_limit = 0;      // The in-flight limit for fetch-only reads now (>= limit).
  int floor = 0;            // The fewest the limit goes down to now (SetFloor).
  int peak_limit = 0;       // The highest the limit went.
  // Reads in flight on average while at least one was (time-weighted): the concurrency
  // the reads really had, against `limit`.
  double mean_in_flight = 0;
  int peak_in_flight = 0;   // The most reads in flight at once.
  int threads = 0;          // Threads made.
  absl::Duration mean_latency;  // Of the reads run.
};

class ReadAhead {
 public:
  // Key is a sample's place in the run: its epoch and position in the epoch's order.
  using Key = std::pair<int64_t, int64_t>;
  // ReadFn reads one sample's bytes into *contents (the read stage's own read).
  using ReadFn = std::function<absl::Status(std::string* contents)>;

  static absl::StatusOr<std::unique_ptr<ReadAhead>> Create(const ReadAheadOptions& options);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Start queues `read` for the sample at `key`, after those already queued. A key
  // already known is left as it is.
  void Start(Key key, ReadFn read);
  // StartFetch queues `fetch` as Start does, for a read that returns no bytes (it fills
  // a cache the caller then reads): Take waits for it to finish and returns false.
  // `fetch` returns whether it waited on the store (sent a request); one that found
  // nothing to do (its blocks cached, or brought by another fetch's run) measured no
  // round trip, and its latency is left out of the estimate (a window of such ~0 s
  // latencies set the round trip to ~0, and Little's law then kept the limit at 8).
  using FetchFn = std::function<absl::StatusOr<bool>()>;
  void StartFetch(Key key, FetchFn fetch);
  // StartUrgent queues `read` as Start does, ahead of every read queued by Start or
  // StartFetch and past the adaptive limit (see above).
  void StartUrgent(Key key, ReadFn read);

  // Take hands over the read of `key`: true when it was started here, with its result in
  // *status and its bytes swapped into *contents (after waiting for it to finish), the
  // buffer *contents held kept for a later read; false when it was never started here
  // (unknown, or still queued: it is dropped), and the caller reads the sample itself;
  // false too for a fetch-only read (StartFetch), after waiting for it to finish.
  bool Take(Key key, std::string* contents, absl::Status* status);

  // NoteBlockRead tells of a sample read through blocks that fetch-only reads bring
  // (its own Take returned false): `cached` when its blocks were all there, else it waits
  // for a fetch or fetches itself, and the window counts it late (a take of a sample
  // without a read here shows nothing of that otherwise).
  void NoteBlockRead(bool cached);

  // SetFloor makes `floor` (clamped to [min_in_flight, max_in_flight]) the fewest reads
  // the adaptive limit keeps: raised, the limit goes there at once (threads made for the
  // queued reads it lets start); lowered, the limit comes down by itself after calm
  // windows. A fixed limit (read_ahead=N) ignores it.
  void SetFloor(int floor);

  ReadAheadStats stats() const;
  // figures are stats() as the summary reports them.
  ReadAheadFigures figures() const;
  const ReadAheadOptions& options() const { return options_; }

 private:
  enum class State { kQueued, kRunning, kDone };
  struct Entry {
    ReadFn read;
    FetchFn fetch;            // StartFetch's, instead of `read`.
    bool fetch_only = false;  // StartFetch: no bytes, no spare buffer.
    bool urgent = false;      // StartUrgent: queued in urgent_queue_.
    State state = State::kQueued;
    std::string bytes;
    absl::Status status;
  };

  explicit ReadAhead(const ReadAheadOptions& options);
  // Queue is Start, StartFetch (with `fetch` set) and StartUrgent.
  void Queue(Key key, ReadFn read, FetchFn fetch, bool urgent);
  // Work is a read-ahead thread: it runs queued reads while the limits allow.
  void Work();
  bool CanStartLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // QueueLimitLocked is the in-flight limit for the read at the front of queue_:
  // max(limit_, fetch_limit_) for a fetch-only read, else limit_.
  int QueueLimitLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // UrgentLimitLocked is the in-flight limit for urgent reads: max_in_flight when
  // adaptive, else the fixed limit.
  int UrgentLimitLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forget drops the oldest entries past max_entries (not those running).
  void ForgetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Estimate updates the limit from the take rate and read latency (adaptive).
  void EstimateLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RecentRateLocked is the take rate over recent_ and this window (of `seconds`).
  double RecentRateLocked(double seconds) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NextLimitLocked is the limit after a window (before clamping): a probe judged or
  // begun, Little's law followed up at once, or down after calm windows.
  int NextLimitLocked(absl::Time now, double rate, int target, bool late)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // StartThreadsForLimitLocked makes threads for queued reads a raised limit lets start.
  void StartThreadsForLimitLocked(int allowed_before) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AccountInFlight adds the reads in flight since the last change to the time-weighted
  // sums (mean_in_flight); call before running_ changes.
  void AccountInFlightLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recycle keeps `buffer` (emptied) for a later read while the bounds allow; TrimSpares
  // frees spares past them; SpareLocked is a kept buffer, or an empty string.
  void RecycleLocked(std::string buffer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TrimSparesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string SpareLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ReadAheadOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_;   // A read may start (or stop_).
  std::condition_variable done_;   // A read finished.
  std::map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<Key> queue_ ABSL_GUARDED_BY(mu_);  // Queued keys in order (stale ones skipped).
  std::deque<Key> urgent_queue_ ABSL_GUARDED_BY(mu_);  // The same, for StartUrgent: first.
  std::deque<Key> order_ ABSL_GUARDED_BY(mu_);  // Every remembered key, oldest first.
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_threads_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t done_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Finished, not taken.
  std::vector<std::string> spares_ ABSL_GUARDED_BY(mu_);  // Empty buffers for reads.
  int64_t spare_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // Their capacities.
  int limit_ ABSL_GUARDED_BY(mu_) = 0;
  int floor_ ABSL_GUARDED_BY(mu_) = 0;  // SetFloor's; min_in_flight until set.
  // The limit for fetch-only reads (adaptive): at least limit_, Little's law on each
  // window's own rate (see EstimateLocked).
  int fetch_limit_ ABSL_GUARDED_BY(mu_) = 0;
  // Fetch-only reads queued, not started: while any are, fetch_limit_ is not lowered.
  int queued_fetches_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  ReadAheadStats stats_ ABSL_GUARDED_BY(mu_);
  absl::Duration total_latency_ ABSL_GUARDED_BY(mu_);  // Of the finished reads.
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  // The estimate's window: takes and summed read latency since window_start_.
  absl::Time window_start_ ABSL_GUARDED_BY(mu_);
  int64_t window_takes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t window_reads_ ABSL_GUARDED_BY(mu_) = 0;
  // Takes of reads queued here (not of unknown samples), and those that were late (waited
  // for their read, or found it still queued); whether reads waited behind the limit.
  int64_t window_entry_takes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t window_late_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t window_block_reads_ ABSL_GUARDED_BY(mu_) = 0;  // NoteBlockRead calls.
  bool window_full_ ABSL_GUARDED_BY(mu_) = false;
  // The last windows' takes and seconds; windows in a row not late.
  std::deque<std::pair<int64_t, double>> recent_ ABSL_GUARDED_BY(mu_);
  int calm_windows_ ABSL_GUARDED_BY(mu_) = 0;
  // A probe in progress (probe_from_ > 0: the limit before it), and probes held off.
  int probe_from_ ABSL_GUARDED_BY(mu_) = 0;
  double probe_rate_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time probe_start_ ABSL_GUARDED_BY(mu_);
  int64_t probe_takes_ ABSL_GUARDED_BY(mu_) = 0;
  int probe_hold_ ABSL_GUARDED_BY(mu_) = 0;
  // mean_in_flight's sums: reads × seconds, and seconds with a read in flight.
  absl::Time in_flight_since_ ABSL_GUARDED_BY(mu_);
  double in_flight_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  double busy_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration window_latency_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> window_latencies_ ABSL_GUARDED_BY(mu_);
  // The lowest first-quartile latency of a window so far: the round trip without queueing.
  absl::Duration round_trip_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  std::vector<std::thread> threads_;  // Guarded by mu_ while growing; joined unlocked.
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_READER_READ_AHEAD_H_
