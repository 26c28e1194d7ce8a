// embedding.cc: docs/embedding.md as a program. A pipeline over an ImageFolder whose
// metrics are served on /metrics while it delivers its epochs.
//
//   bazel run //examples:embedding -- DATA EPOCHS METRICS_ADDRESS
//   e.g. DATA=.sample_data EPOCHS=2 METRICS_ADDRESS=127.0.0.1:9464
//
// The text between the [readme:embedding] markers is the docs' snippet, character for
// character (readme_snippets_test checks it; embedding_test runs this program). What is
// around it makes it a program: a TrainStep that prints one line per batch, and main.
//
// Thread-safety: one thread calls Next (the pipeline runs its own workers).

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"

namespace flowloader {
struct Batch;
}  // namespace flowloader

// TrainStep stands in for a training step (defined after the snippet, which includes
// the Batch type it reads).
void TrainStep(const flowloader::Batch& batch);

// [readme:embedding]
#include "exporters/metrics_exporter.h"  // deps = ["//exporters:prometheus"]
#include "runtime/pipeline.h"            // deps = ["//runtime:pipeline"]

// Train delivers `epochs` epochs of the ImageFolder at `data` to TrainStep, with the
// pipeline's metrics on http://<metrics_address>/metrics while it runs.
absl::Status Train(const std::string& data, int64_t epochs,
                   const std::string& metrics_address) {
  flowloader::PipelineOptions options;
  options.data = data;                               // e.g. "/data/imagenet/train"
  options.name = "train";                            // the `pipeline` label in metrics
  options.batch_size = 64;
  options.num_workers = 8;
  options.epochs = epochs;                           // 0 = until Stop()
  absl::StatusOr<std::unique_ptr<flowloader::Pipeline>> pipeline =
      flowloader::Pipeline::Create(options);         // validates everything up front
  if (!pipeline.ok()) return pipeline.status();
  absl::StatusOr<std::shared_ptr<flowloader::MetricsServer>> server =
      flowloader::MetricsServer::Shared(metrics_address);  // e.g. "127.0.0.1:9464"
  if (!server.ok()) return server.status();          // e.g. the port is in use
  absl::StatusOr<flowloader::MetricsRegistration> metrics =
      flowloader::MetricsRegistration::Create(*server, (*pipeline)->stats());
  if (!metrics.ok()) return metrics.status();        // served until `metrics` goes away
  while (true) {
    std::shared_ptr<const flowloader::Batch> batch;
    bool end_of_epoch = false;
    absl::Status s = (*pipeline)->Next(&batch, &end_of_epoch);
    if (!s.ok()) return s;                           // fatal: names the file and reason
    if (end_of_epoch) {
      if ((*pipeline)->done()) return absl::OkStatus();
      continue;
    }
    // batch->shape() = {N, 3, 224, 224}; batch->host_data() (pinned when CUDA is present);
    // batch->device_data() when batch->location == MemoryLocation::kDevice;
    // batch->labels, batch->indices, batch->keys, batch->skipped.
    TrainStep(*batch);
  }  // Dropping a batch returns its buffer; hold fewer than prefetch_batches at once.
}
// [/readme:embedding]

// TrainStep prints "batch EPOCH INDEX shape=[N,C,H,W] dtype=D labels=L,... keys=K,...",
// what embedding_test checks.
void TrainStep(const flowloader::Batch& batch) {
  std::cout << "batch " << batch.epoch << " " << batch.index << " shape=["
            << absl::StrJoin(batch.shape(), ",") << "] dtype=" << flowloader::DTypeName(batch.dtype())
            << " labels=" << absl::StrJoin(batch.labels, ",")
            << " keys=" << absl::StrJoin(batch.keys, ",") << "\n";
}

int main(int argc, char** argv) {
  int64_t epochs = 0;
  if (argc != 4 || !absl::SimpleAtoi(argv[2], &epochs)) {
    std::cerr << "usage: embedding DATA EPOCHS METRICS_ADDRESS\n";
    return 2;
  }
  absl::Status status = Train(argv[1], epochs, argv[3]);
  if (!status.ok()) {
    std::cerr << "embedding: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
