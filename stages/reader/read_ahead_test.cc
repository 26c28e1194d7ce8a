// Tests of ReadAhead: the in-flight limit, order, handing over results and errors, the
// byte and entry bounds, recycled buffers, the adaptive limit, the autotuner's floor, and
// a prompt destructor.
#include "stages/reader/read_ahead.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

ReadAheadOptions Fixed(int in_flight) {
  ReadAheadOptions o;
  o.adaptive = false;
  o.max_in_flight = o.min_in_flight = in_flight;
  return o;
}

// Concurrency counts the reads running at once, and the most ever.
struct Concurrency {
  std::atomic<int> now{0};
  std::atomic<int> peak{0};
  void Enter() {
    const int n = ++now;
    for (int p = peak.load(); n > p && !peak.compare_exchange_weak(p, n);) {
    }
  }
  void Leave() { --now; }
};

// WaitUntilStarted waits until `ra` has started `n` reads (its threads may lag a
// loaded machine).
void WaitUntilStarted(const ReadAhead& ra, int64_t n) {
  while (ra.stats().started < n) absl::SleepFor(absl::Milliseconds(1));
}

// TakeInOrder takes keys 0..n-1 in order, as a worker does, with `read` started for each
// key 256 ahead of the takes, each take once its read has started (a worker that finds
// its read still queued reads it itself).
void TakeInOrder(ReadAhead& ra, int64_t n, const ReadAhead::ReadFn& read) {
  int64_t started = 0;
  for (int64_t taken = 0; taken < n; ++taken) {
    for (; started < taken + 256; ++started) ra.Start({0, started}, read);
    WaitUntilStarted(ra, taken + 1);
    std::string bytes;
    absl::Status status;
    EXPECT_TRUE(ra.Take({0, taken}, &bytes, &status));
  }
}

TEST(ReadAheadTest, KeepsAtMostTheLimitInFlightAndHandsOverEachResult) {
  auto ra = ReadAhead::Create(Fixed(3));
  ASSERT_TRUE(ra.ok()) << ra.status();
  Concurrency c;
  for (int i = 0; i < 12; ++i) {
    (*ra)->Start({0, i}, [&c, i](std::string* out) {
      c.Enter();
      absl::SleepFor(absl::Milliseconds(20));
      c.Leave();
      *out = absl::StrCat("sample ", i);
      return i == 5 ? absl::NotFoundError("gone") : absl::OkStatus();
    });
  }
  for (int i = 0; i < 12; ++i) {
    WaitUntilStarted(**ra, i + 1);  // Else Take leaves it to the caller (tested below).
    std::string bytes;
    absl::Status status;
    // Each read was started (the workers wait for it), none is read twice.
    ASSERT_TRUE((*ra)->Take({0, i}, &bytes, &status)) << i;
    EXPECT_EQ(bytes, absl::StrCat("sample ", i));
    EXPECT_EQ(status.ok(), i != 5) << status;
  }
  EXPECT_EQ(c.peak.load(), 3);  // 12 reads of 20 ms, 3 at a time.
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_EQ(s.started, 12);
  EXPECT_EQ(s.peak_in_flight, 3);
  EXPECT_EQ(s.threads, 3);
  EXPECT_EQ(s.ready + s.waited, 12);
}

TEST(ReadAheadTest, AReadNotStartedIsLeftToTheCaller) {
  auto ra = ReadAhead::Create(Fixed(1));
  ASSERT_TRUE(ra.ok());
  std::atomic<bool> release{false};
  std::atomic<bool> running{false};
  std::atomic<int> runs{0};
  (*ra)->Start({0, 0}, [&](std::string* out) {
    running.store(true);
    while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
    *out = "first";
    return absl::OkStatus();
  });
  (*ra)->Start({0, 1}, [&](std::string*) {
    ++runs;
    return absl::OkStatus();
  });
  while (!running.load()) absl::SleepFor(absl::Milliseconds(1));
  std::string bytes;
  absl::Status status;
  EXPECT_FALSE((*ra)->Take({0, 1}, &bytes, &status));  // Queued behind the first: dropped.
  EXPECT_FALSE((*ra)->Take({7, 7}, &bytes, &status));  // Never started.
  release.store(true);
  ASSERT_TRUE((*ra)->Take({0, 0}, &bytes, &status));
  EXPECT_EQ(bytes, "first");
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ((*ra)->stats().not_started, 1);
  EXPECT_EQ((*ra)->stats().unknown, 1);
}

TEST(ReadAheadTest, NoReadStartsWhileTheFinishedBytesFillTheBudget) {
  ReadAheadOptions o = Fixed(4);
  o.max_bytes = 100;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  std::atomic<int> runs{0};
  for (int i = 0; i < 3; ++i) {
    (*ra)->Start({0, i}, [&runs](std::string* out) {
      ++runs;
      *out = std::string(100, 'x');  // One read fills the budget.
      return absl::OkStatus();
    });
  }
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_LE(runs.load(), 4);  // Those started before the first finished, no more after.
  const int before = runs.load();
  std::string bytes;
  absl::Status status;
  ASSERT_TRUE((*ra)->Take({0, 0}, &bytes, &status));
  for (int i = 1; i < 3; ++i) {
    // A later read either ran once the first was taken, or is read by the caller.
    if ((*ra)->Take({0, i}, &bytes, &status)) {
      EXPECT_EQ(bytes.size(), 100u);
    }
  }
  EXPECT_GE(runs.load(), before);
}

TEST(ReadAheadTest, TheBufferHandedInAtTakeIsFilledByALaterRead) {
  auto ra = ReadAhead::Create(Fixed(1));
  ASSERT_TRUE(ra.ok());
  std::atomic<size_t> capacity_seen{0};
  auto read = [&capacity_seen](std::string* out) {
    capacity_seen.store(out->capacity());
    EXPECT_TRUE(out->empty());  // A recycled buffer comes empty.
    out->append("bytes");
    return absl::OkStatus();
  };
  (*ra)->Start({0, 0}, read);
  WaitUntilStarted(**ra, 1);
  std::string spare;
  spare.reserve(1 << 20);  // The worker's spare buffer.
  const char* const spare_data = spare.data();
  absl::Status status;
  ASSERT_TRUE((*ra)->Take({0, 0}, &spare, &status));
  EXPECT_EQ(spare, "bytes");
  (*ra)->Start({0, 1}, read);
  WaitUntilStarted(**ra, 2);
  std::string bytes;
  ASSERT_TRUE((*ra)->Take({0, 1}, &bytes, &status));
  EXPECT_EQ(bytes, "bytes");
  EXPECT_GE(capacity_seen.load(), size_t{1} << 20);  // The second read filled it...
  EXPECT_EQ(bytes.data(), spare_data);               // ...and handed it over.
  EXPECT_EQ((*ra)->stats().reused, 1);
}

// Workers hand buffers back a batch at a time: spares are kept past the adaptive limit
// (up to max_in_flight, within max_bytes), so every read of the next burst fills one.
TEST(ReadAheadTest, SparesHandedBackInABurstAreAllReused) {
  ReadAheadOptions o;  // Adaptive: the limit stays at min_in_flight for these 16 reads.
  o.min_in_flight = 1;
  o.max_in_flight = 16;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  auto read = [](std::string* out) {
    out->append("bytes");
    return absl::OkStatus();
  };
  for (int i = 0; i < 8; ++i) (*ra)->Start({0, i}, read);
  WaitUntilStarted(**ra, 8);
  absl::Status status;
  for (int i = 0; i < 8; ++i) {
    std::string spare;
    spare.reserve(4096);  // Each worker's spare, handed in at its Take.
    ASSERT_TRUE((*ra)->Take({0, i}, &spare, &status));
  }
  ASSERT_EQ((*ra)->stats().limit, 1);
  for (int i = 8; i < 16; ++i) (*ra)->Start({0, i}, read);
  WaitUntilStarted(**ra, 16);
  for (int i = 8; i < 16; ++i) {
    std::string bytes;
    ASSERT_TRUE((*ra)->Take({0, i}, &bytes, &status));
    EXPECT_GE(bytes.capacity(), 4096u) << i;
  }
  EXPECT_EQ((*ra)->stats().reused, 8);
}

TEST(ReadAheadTest, AFetchOnlyReadIsWaitedForAndLeavesTheReadToTheCaller) {
  auto ra = ReadAhead::Create(Fixed(1));
  ASSERT_TRUE(ra.ok());
  std::atomic<bool> release{false};
  std::atomic<bool> fetched{false};
  (*ra)->StartFetch({0, 0}, [&]() {
    while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
    fetched = true;  // E.g. a block now in the cache.
    return true;
  });
  WaitUntilStarted(**ra, 1);
  std::string buffer;
  buffer.reserve(1 << 16);  // The worker's own buffer: not taken by a fetch-only read.
  const char* const data = buffer.data();
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(20));
    release = true;
  });
  absl::Status status;
  EXPECT_FALSE((*ra)->Take({0, 0}, &buffer, &status)) << "the caller reads it itself";
  EXPECT_TRUE(fetched.load()) << "...after the fetch finished";
  releaser.join();
  EXPECT_EQ(buffer.data(), data);
  EXPECT_EQ((*ra)->stats().waited + (*ra)->stats().ready, 1);
  EXPECT_EQ((*ra)->stats().reused, 0);
}

TEST(ReadAheadTest, SpareBuffersCountAgainstTheByteBudget) {
  ReadAheadOptions o = Fixed(4);
  o.max_bytes = 1000;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  auto read = [](std::string* out) {
    *out = "x";
    return absl::OkStatus();
  };
  (*ra)->Start({0, 0}, read);
  WaitUntilStarted(**ra, 1);
  std::string big;
  big.reserve(4000);  // Past max_bytes: freed, not kept.
  absl::Status status;
  ASSERT_TRUE((*ra)->Take({0, 0}, &big, &status));
  (*ra)->Start({0, 1}, read);
  WaitUntilStarted(**ra, 2);
  std::string bytes;
  ASSERT_TRUE((*ra)->Take({0, 1}, &bytes, &status));
  EXPECT_EQ((*ra)->stats().reused, 0);
}

TEST(ReadAheadTest, ForgetsReadsNeverTakenPastMaxEntries) {
  ReadAheadOptions o = Fixed(2);
  o.max_entries = 4;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  for (int i = 0; i < 10; ++i) {
    (*ra)->Start({0, i}, [](std::string* out) {
      *out = "x";
      return absl::OkStatus();
    });
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::string bytes;
  absl::Status status;
  EXPECT_FALSE((*ra)->Take({0, 0}, &bytes, &status));  // Forgotten.
  EXPECT_TRUE((*ra)->Take({0, 9}, &bytes, &status));
  EXPECT_GE((*ra)->stats().dropped, 5);
}

// Urgent reads (the batch being dispatched) run before every read queued earlier, and
// a fixed limit holds for them too.
TEST(ReadAheadTest, UrgentReadsRunBeforeQueuedOnesWithinAFixedLimit) {
  auto ra = ReadAhead::Create(Fixed(1));
  ASSERT_TRUE(ra.ok());
  std::atomic<bool> release{false};
  std::atomic<bool> running{false};
  std::mutex mu;
  std::string order;  // The reads in the order they ran.
  (*ra)->Start({0, 0}, [&](std::string*) {
    running.store(true);
    while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
    return absl::OkStatus();
  });
  while (!running.load()) absl::SleepFor(absl::Milliseconds(1));
  Concurrency c;
  auto read = [&](const char* name) {
    return [&, name](std::string* out) {
      c.Enter();
      {
        std::lock_guard<std::mutex> lock(mu);
        order += name;
      }
      absl::SleepFor(absl::Milliseconds(2));
      c.Leave();
      *out = name;
      return absl::OkStatus();
    };
  };
  (*ra)->Start({0, 1}, read("q1 "));
  (*ra)->Start({0, 2}, read("q2 "));
  (*ra)->StartUrgent({0, 3}, read("u3 "));
  (*ra)->StartUrgent({0, 4}, read("u4 "));
  release.store(true);
  std::string bytes;
  absl::Status status;
  WaitUntilStarted(**ra, 5);  // All of them, so no Take finds one queued.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*ra)->Take({0, i}, &bytes, &status)) << i;
  EXPECT_EQ(order, "u3 u4 q1 q2 ");
  EXPECT_EQ(c.peak.load(), 1);
  EXPECT_EQ((*ra)->stats().urgent, 2);
  EXPECT_EQ((*ra)->stats().peak_in_flight, 1);
}

// In the adaptive mode urgent reads run past the adaptive limit (8 at the start), up to
// max_in_flight: a first batch of 64 reads of 20 ms costs about one round trip, not 8.
TEST(ReadAheadTest, UrgentReadsRunPastTheAdaptiveLimitUpToMaxInFlight) {
  ReadAheadOptions o;  // Adaptive, from min_in_flight.
  o.max_in_flight = 48;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  Concurrency c;
  std::atomic<bool> release{false};
  for (int i = 0; i < 64; ++i) {
    (*ra)->StartUrgent({0, i}, [&](std::string* out) {
      c.Enter();
      while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
      c.Leave();
      *out = "x";
      return absl::OkStatus();
    });
  }
  (*ra)->Start({0, 64}, [](std::string* out) {
    *out = "later";
    return absl::OkStatus();
  });
  WaitUntilStarted(**ra, 48);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(c.now.load(), 48) << "past the adaptive limit, never past max_in_flight";
  EXPECT_EQ((*ra)->stats().limit, o.min_in_flight);
  release.store(true);
  std::string bytes;
  absl::Status status;
  for (int i = 0; i <= 64; ++i) {
    WaitUntilStarted(**ra, i + 1);
    ASSERT_TRUE((*ra)->Take({0, i}, &bytes, &status)) << i;
  }
  EXPECT_EQ(bytes, "later");
  EXPECT_EQ((*ra)->stats().urgent, 64);
  EXPECT_EQ((*ra)->stats().peak_in_flight, 48);
}

TEST(ReadAheadTest, TheAdaptiveLimitGrowsWhileTheReadsAreTheBottleneck) {
  ReadAheadOptions o;  // Adaptive, from 8.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  // 20 ms reads taken as fast as they come: 8 in flight give 400 takes/s, which needs
  // 1.5 × 400 × 0.02 + 2 = 14: the limit grows.
  TakeInOrder(**ra, 400, [](std::string* out) {
    absl::SleepFor(absl::Milliseconds(20));
    *out = "x";
    return absl::OkStatus();
  });
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_GT(s.limit, 16) << "probes " << s.probes << ", undone " << s.probes_undone;
  EXPECT_GT(s.peak_in_flight, 16);
}

// A server that serves one read at a time, 2 ms each (500 reads/s): with N in flight
// every read waits ~N × 2 ms. More in flight buys nothing, so the limit must settle,
// not follow the queueing latency up to max_in_flight (1.5 × 500/s × N × 2 ms = 1.5 N).
TEST(ReadAheadTest, QueueingAtTheServerDoesNotRatchetTheLimit) {
  ReadAheadOptions o;  // Adaptive, from 8, up to 128.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  std::mutex server;
  TakeInOrder(**ra, 400, [&server](std::string* out) {
    std::lock_guard<std::mutex> one_at_a_time(server);
    absl::SleepFor(absl::Milliseconds(2));
    *out = "x";
    return absl::OkStatus();
  });
  // The lock is not fair: a quarter of the reads get through in about one service time,
  // so the round trip is ~2 ms and the limit stays near its floor of 8 (measured: 8-12).
  // A late window probes 1.5 × the limit; the probe buys no faster takes and is undone
  // (on a loaded machine one may look faster by chance; one may still be under way when
  // the run ends: up to 1.5 × 12).
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_LE(s.limit, 18) << "the mean latency ratchets it up (measured 13..128)";
  EXPECT_GE(2 * s.probes_undone, s.probes - 1) << "most probes are undone; probes " << s.probes;
}

// Shards' blocks behind a 20 ms round trip: each fetch-only read brings a block that
// holds 8 samples, and only its first sample (the claimer, as the read stage announces
// them) has a read here; a claimer that finds its fetch still queued fetches the block
// itself (a worker through the block cache). Takes wait on the fetches, so the limit must
// grow past its start of 8 and the fetches really run more than 8 at once.
TEST(ReadAheadTest, FetchOnlyReadsGrowPastTheStartWhileTakesWaitForThem) {
  ReadAheadOptions o;  // Adaptive, from 8.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  constexpr int64_t kPerBlock = 8;
  constexpr int64_t kSamples = 2048;
  auto fetch = []() -> absl::StatusOr<bool> {
    absl::SleepFor(absl::Milliseconds(20));
    return true;
  };
  int64_t announced = 0;
  for (int64_t taken = 0; taken < kSamples; ++taken) {
    for (; announced < std::min(taken + 256, kSamples); ++announced) {
      if (announced % kPerBlock == 0) (*ra)->StartFetch({0, announced}, fetch);
    }
    const int64_t not_started = (*ra)->stats().not_started;
    std::string bytes;
    absl::Status status;
    EXPECT_FALSE((*ra)->Take({0, taken}, &bytes, &status)) << "a fetch hands over no bytes";
    if ((*ra)->stats().not_started > not_started) fetch().status().IgnoreError();  // Its own fetch.
    (*ra)->NoteBlockRead(true);  // Read from the cache; its block came before it.
  }
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_EQ(s.fetches + s.not_started, kSamples / kPerBlock);
  EXPECT_GT(s.peak_limit, o.min_in_flight) << "probes " << s.probes;
  EXPECT_GT(s.peak_in_flight, o.min_in_flight);
  EXPECT_GT(s.mean_in_flight, o.min_in_flight);
}

// Workers that find the blocks of their samples missing (NoteBlockRead(false): their
// block's fetch is queued behind the limit, or still running) make the window late, and a
// late window with fetches queued probes a higher limit.
TEST(ReadAheadTest, BlockReadsThatFindTheirBlocksMissingProbeAHigherLimit) {
  ReadAheadOptions o;  // Adaptive, from 8.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  for (int64_t i = 0; i < 1024; ++i) {
    (*ra)->StartFetch({0, i}, []() -> absl::StatusOr<bool> {
      absl::SleepFor(absl::Milliseconds(20));
      return true;
    });
  }
  for (int64_t taken = 0; taken < 160; ++taken) {
    absl::SleepFor(absl::Milliseconds(1));
    (*ra)->NoteBlockRead(false);
    std::string bytes;
    absl::Status status;
    (*ra)->Take({1, taken}, &bytes, &status);  // Samples of blocks, no read of their own.
  }
  EXPECT_GE((*ra)->stats().probes, 1);
  EXPECT_GT((*ra)->stats().peak_limit, o.min_in_flight);
}

// Fetches that found nothing to do (their blocks cached, or brought by another fetch's
// run of blocks) waited on no store: their ~0 s are left out of the round trip and the
// mean latency, which stay those of the fetches that sent a request, so Little's law
// still sees the store's 20 ms (with them counted, 3 in 4 latencies ~0 made the round
// trip ~0, and the limit stayed at 8).
TEST(ReadAheadTest, FetchesWithNothingToDoAreLeftOutOfTheLatency) {
  ReadAheadOptions o;  // Adaptive, from 8.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  for (int64_t i = 0; i < 1000; ++i) {
    (*ra)->StartFetch({0, i}, [i]() -> absl::StatusOr<bool> {
      if (i % 4 != 0) return false;  // Its block came with an earlier run.
      absl::SleepFor(absl::Milliseconds(20));
      return true;
    });
  }
  std::string bytes;
  absl::Status status;
  for (int64_t taken = 0; (*ra)->stats().started < 600 && taken < 100000; ++taken) {
    absl::SleepFor(absl::Microseconds(500));
    (*ra)->NoteBlockRead(true);
    (*ra)->Take({1, taken}, &bytes, &status);  // Samples of cached blocks.
  }
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_GE(s.mean_latency, absl::Milliseconds(20)) << "only the fetches that waited";
  EXPECT_GT(s.fetch_limit, o.min_in_flight) << "Little's law on 20 ms";
}

// A shuffled epoch's first blocks: fetches queued far beyond those in flight. One window
// whose takes came fast (samples whose blocks were there) raises the fetch-only limit;
// the windows after it, whose takes stall on missing blocks, measure a low rate, and do
// not lower it while fetches are still queued (it fell back to the read limit, ~8-12,
// with ~60 blocks still to come, before).
TEST(ReadAheadTest, TheFetchLimitIsNotLoweredWhileFetchesAreQueued) {
  ReadAheadOptions o;  // Adaptive, from 8.
  o.max_entries = 100000;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  // 50 ms each, 20000 of them: at most 128 at once, the queue lasts >= 7.8 s.
  for (int64_t i = 0; i < 20000; ++i) {
    (*ra)->StartFetch({0, i}, []() -> absl::StatusOr<bool> {
      absl::SleepFor(absl::Milliseconds(50));
      return true;
    });
  }
  absl::SleepFor(absl::Milliseconds(60));  // The first fetches come back: a round trip.
  std::string bytes;
  absl::Status status;
  int64_t taken = 0;
  // Stalled takes (5 ms each, their blocks missing), then fast ones (samples of cached
  // blocks, no read of their own here) until one window of them has raised the fetch
  // limit (its own rate × 50 ms) above the read limit (the recent windows' rate).
  for (int i = 0; i < 2 * 32; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
    (*ra)->NoteBlockRead(false);
    (*ra)->Take({1, taken++}, &bytes, &status);
  }
  while ((*ra)->stats().fetch_limit < 64 && taken < 2000) {
    absl::SleepFor(absl::Microseconds(200));
    (*ra)->NoteBlockRead(true);
    (*ra)->Take({1, taken++}, &bytes, &status);
  }
  const int raised = (*ra)->stats().fetch_limit;
  ASSERT_GE(raised, 64) << "a fast window's rate × 50 ms";
  ASSERT_LT((*ra)->stats().limit, raised) << "the read limit follows the recent windows";
  // Stalled takes: 5 ms each, their blocks missing; 4 windows, with fetches queued all
  // along (those windows' reads still finish, so each is estimated).
  const int64_t fetches_before = (*ra)->stats().fetches;
  for (int i = 0; i < 4 * 32; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
    (*ra)->NoteBlockRead(false);
    (*ra)->Take({1, taken++}, &bytes, &status);
  }
  const ReadAheadStats s = (*ra)->stats();
  ASSERT_LT(s.started, 20000) << "fetches still queued";
  ASSERT_GT(s.fetches, fetches_before) << "reads finished in the stalled windows";
  EXPECT_GE(s.fetch_limit, raised) << "limit " << s.limit;
}

// Reads that queue a little at the store (20 ms + 0.5 ms for each read in flight, as
// through a proxy on busy cores) still finish faster the more are in flight. Little's law
// with the quietest round trip stops short (at N in flight, rate × round trip × 1.5 falls
// below N once the latency is 1.5 × the quietest); probing on late takes goes on while
// more in flight brings faster takes.
TEST(ReadAheadTest, ProbesPastLittlesLawWhileMoreInFlightBringsFasterTakes) {
  ReadAheadOptions o;  // Adaptive, from 8, up to 128.
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok());
  Concurrency c;
  TakeInOrder(**ra, 3000, [&c](std::string* out) {
    c.Enter();
    absl::SleepFor(absl::Milliseconds(20) + c.now.load() * absl::Microseconds(500));
    c.Leave();
    *out = "x";
    return absl::OkStatus();
  });
  const ReadAheadStats s = (*ra)->stats();
  EXPECT_GT(s.probes - s.probes_undone, 0) << "a probe that brought faster takes is kept";
  EXPECT_GT(s.peak_limit, 24) << "probes " << s.probes << ", undone " << s.probes_undone;
}

TEST(ReadAheadTest, TheDestructorDropsQueuedReadsAndWaitsOnlyForRunningOnes) {
  auto ra = ReadAhead::Create(Fixed(2));
  ASSERT_TRUE(ra.ok());
  std::atomic<int> runs{0};
  for (int i = 0; i < 100; ++i) {
    (*ra)->Start({0, i}, [&runs](std::string*) {
      ++runs;
      absl::SleepFor(absl::Milliseconds(50));
      return absl::OkStatus();
    });
  }
  absl::SleepFor(absl::Milliseconds(10));
  const absl::Time t0 = absl::Now();
  ra->reset();
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(500));
  EXPECT_LE(runs.load(), 4);
}

// The autotuner's floor (SetFloor): raised, that many reads start at once, without a take
// or an estimate; lowered past the start, it stops at min_in_flight and the limit stays
// until calm windows bring it down; a fixed limit ignores it.
TEST(ReadAheadTest, ARaisedFloorStartsThatManyReadsAtOnce) {
  auto fixed = ReadAhead::Create(Fixed(3));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  (*fixed)->SetFloor(20);
  EXPECT_EQ((*fixed)->stats().limit, 3);

  Concurrency c;  // Before the read-ahead: its destructor waits for reads that use these.
  std::atomic<bool> release{false};
  ReadAheadOptions o;
  o.min_in_flight = 2;
  o.max_in_flight = 32;
  auto ra = ReadAhead::Create(o);
  ASSERT_TRUE(ra.ok()) << ra.status();
  for (int i = 0; i < 40; ++i) {
    (*ra)->Start({0, i}, [&](std::string* out) {
      c.Enter();
      while (!release.load()) absl::SleepFor(absl::Milliseconds(1));
      c.Leave();
      *out = "bytes";
      return absl::OkStatus();
    });
  }
  WaitUntilStarted(**ra, 2);
  EXPECT_EQ((*ra)->stats().limit, 2);
  (*ra)->SetFloor(10);
  while (c.now.load() < 10) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(20));  // No more than the floor start.
  EXPECT_EQ(c.peak.load(), 10);
  EXPECT_EQ((*ra)->stats().limit, 10);
  EXPECT_EQ((*ra)->figures().floor, 10);
  (*ra)->SetFloor(1);  // Below the read-ahead's own floor: clamped to it.
  EXPECT_EQ((*ra)->stats().floor, 2);
  EXPECT_EQ((*ra)->stats().limit, 10);
  release = true;
}

TEST(ReadAheadTest, RefusesBadLimits) {
  ReadAheadOptions o;
  o.min_in_flight = 0;
  EXPECT_FALSE(ReadAhead::Create(o).ok());
  o = ReadAheadOptions();
  o.min_in_flight = o.max_in_flight + 1;
  EXPECT_FALSE(ReadAhead::Create(o).ok());
  o = ReadAheadOptions();
  o.max_bytes = 0;
  EXPECT_FALSE(ReadAhead::Create(o).ok());
}

}  // namespace
}  // namespace flowloader
