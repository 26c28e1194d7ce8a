// multi_view.cc: docs/embedding.md "Several views in C++" as a program. Builds, with
// GraphBuilder, one decode feeding two augment branches: one bound to two 224² views
// (independent random crops and flips), one making a 96² uint8 view. Runs it over DATA
// and checks each batch has the three named tensors, with the same rows, and that the two
// 224² views differ.
//
//   bazel run //examples:multi_view -- DATA
//
// The text between the [readme:multi_view] markers is the docs' snippet, character for
// character (readme_snippets_test checks it; multi_view_test runs this program).
//
// Thread-safety: one thread drives the pipeline.

#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/internal/example_support.h"

// [readme:multi_view]
#include "graph/graph_builder.h"  // deps = ["//graph:graph_builder"]
#include "runtime/pipeline.h"     // deps = ["//runtime:pipeline"]

// UseThreeViews gives `options` a graph that decodes each sample once (the region that
// covers every crop) and writes three batch tensors: two independent 224² train views
// (`view0`, `view1`) and a 96² uint8 view (`small`). A batch has them, in this order, in
// batch->tensors; batch->host_data() and batch->shape() are view0's.
absl::Status UseThreeViews(flowloader::PipelineOptions* options) {
  flowloader::GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("augment").Outputs({"view0", "view1"});  // Same options, own random draws.
  graph.Add("augment")
      .Name("small")
      .Outputs({"small"})
      .Option("image_size", "96")
      .Option("layout", "uint8_hwc");
  absl::StatusOr<std::vector<flowloader::StageSpec>> stages = graph.Build();
  if (!stages.ok()) return stages.status();
  options->stages = *std::move(stages);
  return absl::OkStatus();
}
// [/readme:multi_view]

namespace {

using flowloader::Batch;
using flowloader::examples::NextBatch;
using flowloader::BatchTensor;
using flowloader::Pipeline;
using flowloader::PipelineOptions;

// CheckBatch says where `batch` is not three views of the same rows.
absl::Status CheckBatch(const Batch& batch) {
  if (batch.tensors.size() != 3) {
    return absl::InternalError(absl::StrCat("batch ", batch.index, ": ", batch.tensors.size(),
                                            " tensors, want 3"));
  }
  for (const BatchTensor& t : batch.tensors) {
    if (t.shape.empty() || t.shape[0] != batch.size()) {
      return absl::InternalError(absl::StrCat("batch ", batch.index, ": tensor ", t.name,
                                              " has other rows than the batch"));
    }
  }
  const BatchTensor& a = batch.tensors[0];
  const BatchTensor& b = batch.tensors[1];
  if (std::memcmp(a.host_data, b.host_data, a.bytes()) == 0) {
    return absl::InternalError(absl::StrCat("batch ", batch.index, ": view0 equals view1"));
  }
  return absl::OkStatus();
}

absl::Status RunThreeViews(const std::string& data) {
  PipelineOptions options;
  options.data = data;
  options.batch_size = 4;
  options.num_workers = 2;
  options.seed = 7;
  if (absl::Status s = UseThreeViews(&options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(options);
  if (!pipeline.ok()) return pipeline.status();
  int64_t batches = 0;
  int64_t rows = 0;
  std::string names;
  while (true) {
    absl::StatusOr<std::shared_ptr<const Batch>> next = NextBatch(**pipeline);
    if (!next.ok()) return next.status();
    const std::shared_ptr<const Batch>& batch = *next;
    if (batch == nullptr) break;
    if (absl::Status s = CheckBatch(*batch); !s.ok()) return s;
    if (names.empty()) {
      for (const BatchTensor& t : batch->tensors) absl::StrAppend(&names, " ", t.name);
    }
    ++batches;
    rows += batch->size();
  }
  std::cout << batches << " batches, " << rows << " rows, tensors" << names << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  return flowloader::examples::RunOnData(argc, argv, "multi_view", RunThreeViews);
}
