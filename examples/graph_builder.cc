// graph_builder.cc: docs/embedding.md "Graphs in C++" as a program. Builds, with
// GraphBuilder, the graph of a spec that binds decode's output to `pixels` and augment's to
// `view0`, runs it and, on the same seed, the built-in read → decode → augment, and checks
// that every delivered byte is the same: naming the fields changes the graph's words, not
// its data.
//
//   bazel run //examples:graph_builder -- DATA
//
// The text between the [readme:graph_builder] markers is the docs' snippet, character for
// character (readme_snippets_test checks it; graph_builder_test runs this program).
//
// Thread-safety: one thread drives both pipelines.

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

// [readme:graph_builder]
#include "graph/graph_builder.h"  // deps = ["//graph:graph_builder"]
#include "runtime/pipeline.h"     // deps = ["//runtime:pipeline"]

// UseNamedViews gives `options` the graph of a spec's stages list, built in code:
// decode writes `pixels`, augment reads it and writes the batch tensor `view0`. Build
// refuses, in the words Pipeline::Create would use, a graph that cannot make a batch.
absl::Status UseNamedViews(flowloader::PipelineOptions* options) {
  flowloader::GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode").Name("jpeg").Outputs({"pixels"});
  graph.Add("augment")
      .Inputs({"pixels"})
      .Outputs({"view0"})
      .Option("image_size", "96")
      .Option("layout", "uint8_hwc");
  absl::StatusOr<std::vector<flowloader::StageSpec>> stages = graph.Build();
  if (!stages.ok()) return stages.status();
  options->stages = *std::move(stages);
  return absl::OkStatus();
}
// [/readme:graph_builder]

namespace {

using flowloader::Batch;
using flowloader::examples::NextBatch;
using flowloader::Pipeline;
using flowloader::PipelineOptions;

// SameBatch says where `named` differs from `builtin` (rows, shape or any byte).
absl::Status SameBatch(const Batch& builtin, const Batch& named) {
  if (builtin.shape() != named.shape() || builtin.keys != named.keys) {
    return absl::InternalError(
        absl::StrCat("batch ", builtin.index, ": the two pipelines delivered other samples"));
  }
  if (std::memcmp(builtin.host_data(), named.host_data(), builtin.bytes()) != 0) {
    return absl::InternalError(absl::StrCat("batch ", builtin.index, ": other bytes"));
  }
  return absl::OkStatus();
}

absl::Status CompareWithTheBuiltinGraph(const std::string& data) {
  PipelineOptions builtin_options;
  builtin_options.data = data;
  builtin_options.name = "builtin";
  builtin_options.batch_size = 4;
  builtin_options.num_workers = 2;
  builtin_options.seed = 7;
  builtin_options.image_size = 96;
  builtin_options.layout = "uint8_hwc";
  PipelineOptions named_options = builtin_options;
  named_options.name = "named";
  if (absl::Status s = UseNamedViews(&named_options); !s.ok()) return s;

  absl::StatusOr<std::unique_ptr<Pipeline>> builtin = Pipeline::Create(builtin_options);
  if (!builtin.ok()) return builtin.status();
  absl::StatusOr<std::unique_ptr<Pipeline>> named = Pipeline::Create(named_options);
  if (!named.ok()) return named.status();
  int64_t batches = 0;
  int64_t bytes = 0;
  while (true) {
    absl::StatusOr<std::shared_ptr<const Batch>> x = NextBatch(**builtin);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::shared_ptr<const Batch>> y = NextBatch(**named);
    if (!y.ok()) return y.status();
    if ((*x == nullptr) != (*y == nullptr)) {
      return absl::InternalError("the two pipelines delivered different batch counts");
    }
    if (*x == nullptr) break;
    if (absl::Status s = SameBatch(**x, **y); !s.ok()) return s;
    ++batches;
    bytes += (*x)->bytes();
  }
  std::cout << batches << " batches, " << bytes
            << " bytes, the same as the built-in graph's\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  return flowloader::examples::RunOnData(argc, argv, "graph_builder",
                                         CompareWithTheBuiltinGraph);
}
