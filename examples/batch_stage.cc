// batch_stage.cc: docs/extending.md "Adding a batch stage" as a program. Registers the
// batch stage type "brighten", runs the built-in float pipeline with it in batch_ops and,
// on the same seed, without it, and checks that every delivered float of the first is the
// second's plus 0.5: the batch stage ran once per batch, on every row, in place.
//
//   bazel run //examples:batch_stage -- DATA
//
// The text between the [readme:batch_stage] markers is the docs' snippet, character for
// character (readme_snippets_test checks it; batch_stage_test runs this program).
//
// Thread-safety: one thread drives both pipelines.

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "examples/internal/example_support.h"
#include "runtime/pipeline.h"

// [readme:batch_stage]
#include "graph/batch_stage.h"  // deps = ["//graph:stage"]

// Brighten adds `amount` to every float of every view, in place.
class Brighten : public flowloader::BatchStage {
 public:
  explicit Brighten(float amount) : amount_(amount) {}
  absl::Status Process(flowloader::BatchContext& batch) const override {
    for (size_t k = 0; k < batch.batch->tensors.size(); ++k) {
      float* x = static_cast<float*>(batch.data[k]);  // Writable rows of tensor k.
      const size_t n = batch.batch->tensors[k].bytes() / sizeof(float);
      for (size_t i = 0; i < n; ++i) x[i] += amount_;
    }
    return absl::OkStatus();  // An error stops the pipeline, naming the op and the batch.
  }
 private:
  const float amount_;
};

absl::Status RegisterBrighten() {
  flowloader::StageSchema schema;
  schema.type = "brighten";
  schema.doc = "adds amount to every pixel of every view";
  schema.options = {{"amount", flowloader::OptionType::kFloat, "0.1", "added", {}}};
  return flowloader::StageRegistry::Global().RegisterBatch(
      schema, [](const flowloader::StageArgs& args, flowloader::BatchStageEnv& env)
                  -> absl::StatusOr<std::unique_ptr<flowloader::BatchStage>> {
        for (const flowloader::OutputSpec& o : env.outputs) {
          if (!o.is_float) return absl::InvalidArgumentError("brighten needs float views");
        }
        return std::make_unique<Brighten>(static_cast<float>(args.GetFloat("amount")));
      });
}
// [/readme:batch_stage]

namespace {

using flowloader::Batch;
using flowloader::examples::NextBatch;
using flowloader::Pipeline;
using flowloader::PipelineOptions;

// CheckBrightened says where `bright` is not `plain` with every float x as x + 0.5.
absl::Status CheckBrightened(const Batch& plain, const Batch& bright) {
  if (plain.shape() != bright.shape() || plain.keys != bright.keys) {
    return absl::InternalError(absl::StrCat("batch ", plain.index,
                                            ": the two pipelines delivered other samples"));
  }
  const auto* x = static_cast<const float*>(plain.host_data());
  const auto* y = static_cast<const float*>(bright.host_data());
  for (size_t i = 0; i < plain.bytes() / sizeof(float); ++i) {
    if (y[i] != x[i] + 0.5f) {
      return absl::InternalError(absl::StrCat("batch ", plain.index, " float ", i, ": ", y[i],
                                              " is not ", x[i], " + 0.5"));
    }
  }
  return absl::OkStatus();
}

// CompareWithAndWithoutBrighten runs both pipelines over `data` and checks every batch.
absl::Status CompareWithAndWithoutBrighten(const std::string& data) {
  if (absl::Status s = RegisterBrighten(); !s.ok()) return s;
  PipelineOptions plain_options;
  plain_options.data = data;
  plain_options.name = "plain";
  plain_options.batch_size = 4;
  plain_options.num_workers = 2;
  plain_options.image_size = 32;
  plain_options.seed = 7;  // The same random crops and flips in both pipelines.
  PipelineOptions bright_options = plain_options;
  bright_options.name = "bright";
  flowloader::StageSpec op;
  op.type = "brighten";
  op.args = {{"amount", "0.5"}};
  bright_options.batch_ops = {op};

  absl::StatusOr<std::unique_ptr<Pipeline>> plain = Pipeline::Create(plain_options);
  if (!plain.ok()) return plain.status();
  absl::StatusOr<std::unique_ptr<Pipeline>> bright = Pipeline::Create(bright_options);
  if (!bright.ok()) return bright.status();
  int64_t batches = 0;
  while (true) {
    absl::StatusOr<std::shared_ptr<const Batch>> x = NextBatch(**plain);
    if (!x.ok()) return x.status();
    absl::StatusOr<std::shared_ptr<const Batch>> y = NextBatch(**bright);
    if (!y.ok()) return y.status();
    if ((*x == nullptr) != (*y == nullptr)) {
      return absl::InternalError("the two pipelines delivered different batch counts");
    }
    if (*x == nullptr) break;
    if (absl::Status s = CheckBrightened(**x, **y); !s.ok()) return s;
    ++batches;
  }
  const flowloader::StageStats* stage = (*bright)->stats()->Stage("brighten");
  std::cout << "brighten ran on " << (stage == nullptr ? 0 : stage->items_out.load())
            << " batches of " << batches << "; every float x + 0.5 of the pipeline without it\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  return flowloader::examples::RunOnData(argc, argv, "batch_stage",
                                         CompareWithAndWithoutBrighten);
}
