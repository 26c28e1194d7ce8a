// load_spec.cc: docs/specs.md "Writing a spec", the C++ side: a pipeline from a spec file.
// Prints one line per batch and a total.
//
//   bazel run //examples:load_spec -- SPEC.yaml
//
// The text between the [readme:load_spec] markers is the docs' snippet, character for
// character (readme_snippets_test checks it; load_spec_test runs this program).
//
// Thread-safety: one thread calls Next.

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"

// [readme:load_spec]
#include "runtime/spec.h"  // deps = ["//runtime:spec"]

// PipelineFromSpec creates the pipeline the spec file at `path` describes.
absl::StatusOr<std::unique_ptr<flowloader::Pipeline>> PipelineFromSpec(
    const std::string& path) {
  absl::StatusOr<flowloader::PipelineOptions> options = flowloader::LoadSpecFile(path);
  if (!options.ok()) return options.status();        // "FILE:LINE:COLUMN: what is wrong"
  return flowloader::Pipeline::Create(*options);
}
// [/readme:load_spec]

namespace {

// RunSpec drains the spec's pipeline, printing "batch EPOCH INDEX shape=[...]" per batch
// and "total BATCHES batches SAMPLES samples" at the end.
absl::Status RunSpec(const std::string& path) {
  absl::StatusOr<std::unique_ptr<flowloader::Pipeline>> pipeline = PipelineFromSpec(path);
  if (!pipeline.ok()) return pipeline.status();
  int64_t batches = 0;
  int64_t samples = 0;
  while (true) {
    std::shared_ptr<const flowloader::Batch> batch;
    bool end_of_epoch = false;
    absl::Status s = (*pipeline)->Next(&batch, &end_of_epoch);
    if (!s.ok()) return s;
    if (end_of_epoch) {
      if ((*pipeline)->done()) break;
      continue;
    }
    std::cout << "batch " << batch->epoch << " " << batch->index << " shape=["
              << absl::StrJoin(batch->shape(), ",") << "]\n";
    ++batches;
    samples += batch->size();
  }
  std::cout << "total " << batches << " batches " << samples << " samples\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: load_spec SPEC\n";
    return 2;
  }
  absl::Status status = RunSpec(argv[1]);
  if (!status.ok()) {
    std::cerr << "load_spec: " << status.message() << "\n";
    return 1;
  }
  return 0;
}
