// synthetic_stats.h: PipelineStats that move like real runs, for exporter tests.
//
// Until a real pipeline is wired in (and afterwards, for fast deterministic tests) these
// stand in for the graph: MakeTrainStats/AdvanceTrain give a healthy but decode-bound
// run whose consumer starves and whose decoder hits truncated files; MakeStuckStats gives
// a pipeline that hung an hour into its run. Between them every panel, recording rule and
// alert of the shipped dashboard and rules has something to show.
//
// Thread-safety: Make* before sharing; Advance* from one thread at a time per pipeline
// (it only touches atomics, so scrapes may run concurrently). SyntheticDriver is
// thread-safe: it owns its thread and stops it on destruction.
#ifndef FLOWLOADER_EXPORTERS_TESTING_SYNTHETIC_STATS_H_
#define FLOWLOADER_EXPORTERS_TESTING_SYNTHETIC_STATS_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/stage_stats.h"

namespace flowloader {
namespace exporters_testing {

// Shape of the "train" run, per second of simulated time.
inline constexpr int kTrainSamplesPerSecond = 1000;
inline constexpr int kTrainBatchSize = 64;
inline constexpr double kTrainDecodeErrorShare = 0.03;     // "truncated"
// Starving. High enough that rate(...[1m]) > 0.2 holds ~15 s after the first scrape:
// rate() divides by the whole window, so a young series reads low.
inline constexpr double kTrainConsumerWaitShare = 0.75;
inline constexpr double kTrainDecodeUtilization = 0.95;    // On 2 workers: the bottleneck.

// MakeTrainStats builds reader(1) → decode(2) → augment(2) → collate(1) → upload(1),
// with the edges between them, started at `start`; augment has three op rows
// (random_resized_crop, color_jitter, normalize: 50%, 35% and 10% of its busy time).
std::shared_ptr<PipelineStats> MakeTrainStats(absl::string_view name, absl::Time start);

// AdvanceTrain simulates `samples` more samples taking `seconds` of wall time, ending
// at `now`: every stage counts, decode fails kTrainDecodeErrorShare of its items.
void AdvanceTrain(PipelineStats& stats, int samples, double seconds, absl::Time now);

// MakeStuckStats builds a pipeline that started an hour before `now`, delivered its last
// batch ten minutes before `now`, and has two items stuck inside "decode" ever since.
std::shared_ptr<PipelineStats> MakeStuckStats(absl::string_view name, absl::Time now);

// SyntheticDriver advances "train"-shaped pipelines in real time on its own thread.
class SyntheticDriver {
 public:
  SyntheticDriver(std::vector<std::shared_ptr<PipelineStats>> train,
                  absl::Duration step = absl::Milliseconds(100));
  ~SyntheticDriver();
  SyntheticDriver(const SyntheticDriver&) = delete;
  SyntheticDriver& operator=(const SyntheticDriver&) = delete;

 private:
  void Run();

  const std::vector<std::shared_ptr<PipelineStats>> train_;
  const absl::Duration step_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace exporters_testing
}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_TESTING_SYNTHETIC_STATS_H_
