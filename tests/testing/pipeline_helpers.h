// pipeline_helpers.h: running a real pipeline in tests: SmallCpuOptions, Drain (every
// Next until an error or the last epoch), EachBatch (the same loop handing each batch to
// the test), RunAll (every batch of a run as comparable values), AppendTensorBytes,
// MakeKeypointDataset (generated COCO data with keypoints) and LogCapture (the log lines
// a run wrote).
//
// Thread-safety: Drain runs on the calling thread (the pipeline's own workers do the
// rest); LogCapture may be written from any thread and read from any.
#ifndef FLOWLOADER_TESTS_TESTING_PIPELINE_HELPERS_H_
#define FLOWLOADER_TESTS_TESTING_PIPELINE_HELPERS_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/pipeline.h"
#include "stages/reader/env.h"

namespace flowloader::testing {

// SmallCpuOptions is PipelineOptions for a small, fast run over `data`: 16 × 16 outputs,
// batch_size samples per batch, 2 workers, CPU only, files read through `env`.
PipelineOptions SmallCpuOptions(const std::string& data, int batch_size, Env* env);

// Drained is what one Drain call saw.
struct Drained {
  // The first error Next returned; OK if the pipeline finished (or max_calls ran out)
  // first.
  absl::Status status;
  int epochs = 0;                      // Ends of epoch seen.
  int64_t samples = 0;                 // Samples in the delivered batches.
  std::vector<std::string> keys;       // Their keys, in delivery order.
  std::vector<SkippedSample> skipped;  // The batches' skipped samples, in delivery order.
};

// Drain calls pipeline->Next until it returns an error or the pipeline is done (an end
// of epoch with done() true), at most max_calls times, and returns what came out.
Drained Drain(Pipeline* pipeline, int max_calls = std::numeric_limits<int>::max());

// EachBatch calls pipeline.Next until it returns an error (returned) or the pipeline is
// done, or `max_batches` batches came: `before(n)` runs before asking for the n-th batch
// (from 0) and `on_batch` gets each one. Ends of epoch are passed over.
absl::Status EachBatch(Pipeline& pipeline, const std::function<void(int)>& before,
                       const std::function<void(const Batch&)>& on_batch,
                       int max_batches = std::numeric_limits<int>::max());

// Delivered is every batch of a run, as comparable values.
struct Delivered {
  absl::Status status;
  std::vector<std::string> batches;  // Tensor bytes, labels and dataset indices per batch.
  std::vector<std::string> keys;
  std::map<std::string, int> skipped;  // By reason.
  std::map<std::string, int> skipped_keys;  // Times each key was skipped.
};

// RunAll creates a pipeline from `o` and drains it, recording every batch as comparable
// values (Create's error, or the first error Next returned, in `status`). `before`, when
// set, runs before asking for the n-th batch (from 0), as in EachBatch.
Delivered RunAll(const PipelineOptions& o, const std::function<void(int)>& before = nullptr);

// AppendTensorBytes appends each of the batch's tensors' bytes to (*bytes)[k], k its
// place among the batch's tensors (bytes grows to fit).
void AppendTensorBytes(const Batch& batch, std::vector<std::string>* bytes);

// MakeKeypointDataset writes generated COCO data with keypoints (make-dataset --task=
// detection --keypoints: 3 per shape) under `root`: `images` JPEGs of 64 to 96 pixels a
// side with up to `max_instances` shapes each, root/images and
// root/annotations/instances.json.
absl::Status MakeKeypointDataset(const std::string& root, int images, int max_instances);

// LogCapture collects every log line from construction to destruction (it lowers the
// minimum level to kInfo and replaces the log sink; the destructor restores stderr).
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // LinesNaming counts the lines that contain `text`.
  int LinesNaming(absl::string_view text) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace flowloader::testing

#endif  // FLOWLOADER_TESTS_TESTING_PIPELINE_HELPERS_H_
