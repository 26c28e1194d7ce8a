// loader.h: what the Python module's DataLoader drives: a Pipeline, its metrics, and a
// fetch thread, so the Python thread can wait for a batch in short slices (checking for
// Ctrl-C between them) instead of blocking inside Pipeline::Next.
//
// The fetch thread calls Next only when asked (one request at a time), so it never holds
// a batch the caller did not ask for: the caller's view of the pipeline's batch buffers
// stays exact, which the hold rule (HoldLimit) relies on. A request interrupted by the
// caller (KeyboardInterrupt) keeps its result for the next WaitNext, so no batch is lost.
//
// Live views: every zero-copy tensor handed out holds a BatchView (a shared_ptr to its
// Batch); live_views() counts them across threads, down when the last tensor over a batch
// is freed (by torch, from any thread), which returns the buffer to the pool.
//
// Thread-safety: WaitNext from one thread at a time; everything else from any thread.
// The destructor stops the pipeline and joins the fetch thread.
#ifndef FLOWLOADER_PYTHON_INTERNAL_LOADER_H_
#define FLOWLOADER_PYTHON_INTERNAL_LOADER_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "exporters/metrics_exporter.h"
#include "runtime/pipeline.h"

namespace flowloader {
namespace python_internal {

struct LoaderOptions {
  PipelineOptions pipeline;
  // Serve the pipeline's metrics at http://ADDRESS/metrics; empty = none.
  std::string metrics_address;
};

// Fetched is one Pipeline::Next result.
struct Fetched {
  absl::Status status;
  std::shared_ptr<const Batch> batch;  // Null at an end of epoch or on error.
  bool end_of_epoch = false;
};

class Loader {
 public:
  // Create builds the pipeline (Pipeline::Create's errors) and its metrics endpoint.
  static absl::StatusOr<std::unique_ptr<Loader>> Create(const LoaderOptions& options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // WaitNext asks for the next result (unless one is already on its way) and waits up to
  // `timeout` for it. Returns true and fills *out when it came; false on a timeout, in
  // which case the request stays pending for the next call.
  bool WaitNext(absl::Duration timeout, Fetched* out);

  // NextCursor is where the caller's next batch comes from: Checkpoint() of the pipeline,
  // once any pending request has finished (a finished but untaken batch is the next one).
  Cursor NextCursor();
  // WaitCursor is NextCursor waiting at most `timeout` for a pending request: false on
  // a timeout (the caller checks for Ctrl-C and asks again).
  bool WaitCursor(absl::Duration timeout, Cursor* out);

  // SummaryJson is `flowloader run --summary_json`'s object for this loader so far.
  std::string SummaryJson() const;

  // Stop ends the pipeline; a pending request returns Cancelled.
  void Stop();

  Pipeline& pipeline() { return *pipeline_; }
  const std::shared_ptr<std::atomic<int>>& live_views() const { return live_views_; }

 private:
  explicit Loader(std::unique_ptr<Pipeline> pipeline);
  void FetchLoop();
  void Record(const Fetched& fetched) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Time created_ = absl::Now();
  std::unique_ptr<Pipeline> pipeline_;
  std::shared_ptr<MetricsServer> server_;
  MetricsRegistration metrics_;
  const std::shared_ptr<std::atomic<int>> live_views_ = std::make_shared<std::atomic<int>>(0);

  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;  // A Next is wanted or running.
  bool ready_ ABSL_GUARDED_BY(mu_) = false;      // `result_` holds an untaken result.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Fetched result_ ABSL_GUARDED_BY(mu_);
  // For SummaryJson: when the first batch and each epoch's end were handed out.
  double first_batch_seconds_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<double> epoch_end_seconds_ ABSL_GUARDED_BY(mu_);
  std::thread fetcher_;  // Last: starts after everything it reads.
};

}  // namespace python_internal
}  // namespace flowloader

#endif  // FLOWLOADER_PYTHON_INTERNAL_LOADER_H_
