// custom_stage.cc: docs/extending.md "Adding a stage" as a program. Registers the stage
// type "invert", runs the built-in uint8 pipeline with it appended and, on the same seed,
// without it, and checks that every delivered byte of the first is 255 minus the
// second's: the stage ran on every sample, after augment, on the batch memory.
//
//   bazel run //examples:custom_stage -- DATA
//
// The text between the [readme:custom_stages] markers is the docs' snippet, character
// for character (readme_snippets_test checks it; custom_stage_test runs this program).
//
// Thread-safety: one thread drives both pipelines.

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/internal/example_support.h"

// [readme:custom_stages]
#include "graph/stage.h"       // deps = ["//graph:stage"]
#include "runtime/pipeline.h"  // deps = ["//runtime:pipeline"]

// RegisterInvert adds the stage type "invert" to the process's registry; call it once,
// before a pipeline (or a spec) names it. Fails if the name is taken.
absl::Status RegisterInvert() {
  return flowloader::StageRegistry::Global().RegisterFunction(
      "invert", "255 - x on the uint8 output",
      [](flowloader::SampleContext& s) {
        auto* px = static_cast<uint8_t*>(s.output());
        for (size_t i = 0; i < s.output_bytes(); ++i) px[i] = 255 - px[i];
        return absl::OkStatus();                     // an error skips (or fails) the sample
      });
}

// AddInvert runs "invert" after the built-in read, decode and augment of `options`.
absl::Status AddInvert(flowloader::PipelineOptions* options) {
  options->layout = "uint8_hwc";
  absl::StatusOr<std::vector<flowloader::StageSpec>> stages =
      flowloader::DefaultStages(*options);           // read, decode, augment
  if (!stages.ok()) return stages.status();
  options->stages = *std::move(stages);
  options->stages.push_back({"invert", "my_invert", {}, /*concurrency=*/1});
  return absl::OkStatus();
}
// [/readme:custom_stages]

namespace {

using flowloader::Batch;
using flowloader::examples::NextBatch;
using flowloader::Pipeline;
using flowloader::PipelineOptions;

// CheckInverted says where `inverted` is not `plain` with every byte x as 255 - x.
absl::Status CheckInverted(const Batch& plain, const Batch& inverted) {
  if (plain.shape() != inverted.shape() || plain.keys != inverted.keys) {
    return absl::InternalError(absl::StrCat("batch ", plain.index,
                                            ": the two pipelines delivered other samples"));
  }
  const auto* x = static_cast<const uint8_t*>(plain.host_data());
  const auto* y = static_cast<const uint8_t*>(inverted.host_data());
  for (size_t i = 0; i < plain.bytes(); ++i) {
    if (y[i] != 255 - x[i]) {
      return absl::InternalError(absl::StrCat("batch ", plain.index, " byte ", i, ": ",
                                              int{y[i]}, " is not 255 - ", int{x[i]}));
    }
  }
  return absl::OkStatus();
}

// CompareWithAndWithoutInvert runs both pipelines over `data` and checks every batch.
absl::Status CompareWithAndWithoutInvert(const std::string& data) {
  if (absl::Status s = RegisterInvert(); !s.ok()) return s;
  PipelineOptions plain_options;
  plain_options.data = data;
  plain_options.name = "plain";
  plain_options.batch_size = 4;
  plain_options.num_workers = 2;
  plain_options.seed = 7;  // The same random crops and flips in both pipelines.
  plain_options.layout = "uint8_hwc";
  PipelineOptions inverted_options = plain_options;
  inverted_options.name = "inverted";
  if (absl::Status s = AddInvert(&inverted_options); !s.ok()) return s;

  absl::StatusOr<std::unique_ptr<Pipeline>> plain = Pipeline::Create(plain_options);
  if (!plain.ok()) return plain.status();
  absl::StatusOr<std::unique_ptr<Pipeline>> inverted = Pipeline::Create(inverted_options);
  if (!inverted.ok()) return inverted.status();
  int64_t batches = 0;
  int64_t bytes = 0;
  while (true) {
    absl::StatusOr<std::shared_ptr<const Batch>> x = NextBatch(**plain);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::shared_ptr<const Batch>> y = NextBatch(**inverted);
    if (!y.ok()) return y.status();
    if ((*x == nullptr) != (*y == nullptr)) {
      return absl::InternalError("the two pipelines delivered different batch counts");
    }
    if (*x == nullptr) break;
    if (absl::Status s = CheckInverted(**x, **y); !s.ok()) return s;
    ++batches;
    bytes += (*x)->bytes();
  }
  const flowloader::StageStats* stage = (*inverted)->stats()->Stage("my_invert");
  std::cout << "my_invert ran on " << (stage == nullptr ? 0 : stage->items_out.load())
            << " samples; " << batches << " batches, " << bytes
            << " bytes, every byte 255 - x of the pipeline without it\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  return flowloader::examples::RunOnData(argc, argv, "custom_stage",
                                         CompareWithAndWithoutInvert);
}
