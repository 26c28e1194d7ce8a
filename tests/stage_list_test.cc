// Stage lists a new user writes: what `flowloader stages` prints, pasted as a spec's
// `stages:` list, runs and delivers every sample; a list that cannot make a batch (no
// read, two augments) is refused at Pipeline::Create in one line naming the stage and the
// field it lacks, located at its spec item; a list file of absolute paths is read.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/stage.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "runtime/spec.h"
#include "stages/core/log.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using ::flowloader::testing::Drain;
using ::flowloader::testing::Drained;

constexpr int kSamples = 6;  // 2 classes × 3 images.

// A user stage declared to modify the batch output in place (so it belongs after augment),
// named to sort before every built-in: Help must still list it after them.
const bool kUserStageRegistered =
    StageRegistry::Global()
        .RegisterFunction("brighten", "adds 1 to every uint8 of the output",
                          [](SampleContext& s) {
                            auto* px = static_cast<uint8_t*>(s.output());
                            for (size_t i = 0; i < s.output_bytes(); ++i) ++px[i];
                            return absl::OkStatus();
                          },
                          FunctionStageOptions{0,
                                               {{kOutputField, FieldKind::kTensor}},
                                               {{kOutputField, FieldKind::kTensor}}})
        .ok();

class StageListTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(
        flowloader::testing::MakeImageFolder(flowloader::testing::TempDir("folder"), 2, 3));
  }
  static void TearDownTestSuite() { delete data_; }

  // Spec is a small CPU run over the test data whose `stages:` list is `stages`, at line 9
  // of "t.yaml" (so its first item is at 9:3 or 9:5, as the text indents it).
  static std::string Spec(const std::string& stages) {
    return absl::StrCat("data: ", *data_,
                        "\nbatch_size: 4\nnum_workers: 2\nepochs: 1\nshuffle: false\n"
                        "device: cpu\npin_memory: false\nstages:\n",
                        stages);
  }

  // Create parses `spec` as "t.yaml" and creates its pipeline.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(const std::string& spec) {
    absl::StatusOr<PipelineOptions> options = ParseSpec(spec, "", "t.yaml");
    if (!options.ok()) return options.status();
    return Pipeline::Create(*options);
  }

  static std::string* data_;
};

std::string* StageListTest::data_ = nullptr;

// WithoutDetectionStages drops the `annotations`, `sanitize_bounding_boxes` and
// `label_map` items from a stages list: they need a COCO file (`annotations:`) or label
// maps (`label_maps:`), which ImageFolder data lacks (detection_pipeline_test and
// segmentation_pipeline_test run them with their data).
std::string WithoutDetectionStages(const std::string& help) {
  std::string out;
  bool skipping = false;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (absl::StartsWith(line, "- type: ") || absl::StartsWith(line, "# ")) {
      skipping = line == "- type: annotations" || line == "- type: sanitize_bounding_boxes" ||
                 line == "- type: label_map";
    }
    if (!skipping) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST_F(StageListTest, StagesHelpPastedAsASpecsStagesListDeliversEverySample) {
  ASSERT_TRUE(kUserStageRegistered);
  // As printed, at the left margin under `stages:` (how one pastes it), less the
  // detection stages (ImageFolder data has no annotations).
  auto pipeline = Create(Spec(WithoutDetectionStages(StageRegistry::Global().Help())));
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const Drained d = Drain(pipeline->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.samples, kSamples);
  EXPECT_TRUE(d.skipped.empty()) << d.skipped.size() << " skipped, the first as "
                                 << d.skipped.front().reason;
}

TEST_F(StageListTest, StagesHelpListsTheBuiltinsInPipelineOrderThenUserTypes) {
  ASSERT_TRUE(kUserStageRegistered);
  const std::string help = StageRegistry::Global().Help();
  std::vector<std::string> types;
  for (absl::string_view line : absl::StrSplit(help, '\n')) {
    if (absl::ConsumePrefix(&line, "- type: ")) types.emplace_back(line);
  }
  ASSERT_GE(types.size(), 4u) << help;
  EXPECT_EQ(std::vector<std::string>(types.begin(), types.begin() + 3),
            (std::vector<std::string>{"read", "decode", "augment"}));
  EXPECT_TRUE(std::is_sorted(types.begin() + 3, types.end())) << help;
  EXPECT_NE(std::find(types.begin() + 3, types.end(), "brighten"), types.end()) << help;
  // Each type's fields, as comments.
  EXPECT_TRUE(absl::StrContains(
      help, "- type: decode\n  # decodes JPEG"))
      << help;
  EXPECT_TRUE(absl::StrContains(help, "  # reads: bytes (bytes); writes: image (image); frees: bytes\n"))
      << help;
  EXPECT_TRUE(absl::StrContains(help, "  # reads: output (tensor); writes: output (tensor)\n"))
      << help;
}

TEST_F(StageListTest, SpecWithoutReadIsRefusedAtCreateNamingDecodeAndBytes) {
  auto pipeline = Create(Spec("  - type: decode\n  - type: augment\n"));
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pipeline.status().message(),
            "t.yaml:9:5: stage 'decode' reads 'bytes', which no earlier stage writes: put a "
            "'read' stage before it");
}

TEST_F(StageListTest, TwoAugmentStagesAreRefusedAtCreateNamingBoth) {
  auto pipeline = Create(Spec(
      "  - type: read\n  - type: decode\n"
      "  - {type: augment, name: view_a}\n  - {type: augment, name: view_b}\n"));
  ASSERT_FALSE(pipeline.ok());
  const std::string message(pipeline.status().message());
  EXPECT_TRUE(absl::StartsWith(message, "t.yaml:12:")) << message;
  EXPECT_TRUE(absl::StrContains(
      message, "stages 'view_a' (augment) and 'view_b' (augment) both write the batch tensor "
               "'output': each batch tensor has one writer"))
      << message;
}

TEST_F(StageListTest, ListFileOfAbsolutePathsDeliversEverySample) {
  // The list lives apart from the images and names each by its absolute path.
  const std::string list_dir = flowloader::testing::TempDir("lists");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(*data_)) {
    if (entry.path().extension() == ".jpg") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), static_cast<size_t>(kSamples));
  std::string list;
  for (size_t i = 0; i < files.size(); ++i) absl::StrAppend(&list, files[i], "\t", i % 2, "\n");
  flowloader::testing::WriteFile(list_dir + "/train.tsv", list);

  PipelineOptions o = flowloader::testing::SmallCpuOptions(list_dir + "/train.tsv", 4, nullptr);
  o.shuffle = false;
  auto pipeline = Pipeline::Create(o);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  const Drained d = Drain(pipeline->get());
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_TRUE(d.skipped.empty()) << d.skipped.size() << " skipped, the first as "
                                 << d.skipped.front().reason;
  EXPECT_EQ(d.keys, files);  // The key is the path as the list wrote it.
}

}  // namespace
}  // namespace flowloader
