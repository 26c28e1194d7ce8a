// CheckStagePlan on the built-in stage types and a few declared user stages: every list
// that cannot make a batch is one line naming the stage, the field and the fix; every
// list that can is accepted. Register's checks of the declared fields.
#include "graph/internal/stage_plan.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace graph_internal {
namespace {

absl::Status Noop(SampleContext&) { return absl::OkStatus(); }

// User stages: one declaring nothing, one modifying the batch output in place, one reading
// the decoded image (so it belongs between decode and augment).
const bool kRegistered = [] {
  StageRegistry& r = StageRegistry::Global();
  absl::Status s = r.RegisterFunction("plan_test_undeclared", "declares no field", Noop);
  s.Update(r.RegisterFunction("plan_test_tint", "modifies the output in place", Noop,
                              FunctionStageOptions{0,
                                                   {{kOutputField, FieldKind::kTensor}},
                                                   {{kOutputField, FieldKind::kTensor}}}));
  s.Update(r.RegisterFunction("plan_test_image_stats", "reads the image", Noop,
                              FunctionStageOptions{0, {{kImageField, FieldKind::kImage}}, {}}));
  return s.ok();
}();

StageSpec Stage(const std::string& type, const std::string& name = "") {
  StageSpec spec;
  spec.type = type;
  spec.name = name;
  return spec;
}

std::string Refusal(const std::vector<StageSpec>& stages) {
  absl::Status s = CheckStagePlan(stages, StageRegistry::Global());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(StagePlanTest, ListsThatMakeABatchAreAccepted) {
  ASSERT_TRUE(kRegistered);
  const StageRegistry& r = StageRegistry::Global();
  EXPECT_TRUE(CheckStagePlan({Stage("read"), Stage("decode"), Stage("augment")}, r).ok());
  // A stage declaring nothing goes anywhere (as user stages did before fields existed).
  EXPECT_TRUE(CheckStagePlan({Stage("plan_test_undeclared"), Stage("read"),
                              Stage("plan_test_undeclared", "u2"), Stage("decode"),
                              Stage("augment"), Stage("plan_test_undeclared", "u3")},
                             r)
                  .ok());
  EXPECT_TRUE(CheckStagePlan({Stage("read"), Stage("decode"), Stage("plan_test_image_stats"),
                              Stage("augment"), Stage("plan_test_tint")},
                             r)
                  .ok());
}

TEST(StagePlanTest, DecodeWithoutReadNamesDecodeBytesAndTheFix) {
  EXPECT_EQ(Refusal({Stage("decode"), Stage("augment")}),
            "stage 'decode' reads 'bytes', which no earlier stage writes: put a 'read' stage "
            "before it");
  EXPECT_EQ(Refusal({Stage("read"), Stage("augment", "crop")}),
            "stage 'crop' (augment) reads 'image', which no earlier stage writes: put a "
            "'decode' stage before it");
}

TEST(StagePlanTest, TwoWritersOfTheBatchTensorAreNamedBoth) {
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode"), Stage("augment", "view_a"),
                     Stage("augment", "view_b")}),
            "stages 'view_a' (augment) and 'view_b' (augment) both write the batch tensor "
            "'output': a pipeline has one batch output today; keep one of them");
}

TEST(StagePlanTest, SecondWriterOfAnyFieldIsRefused) {
  const std::string message = Refusal(
      {Stage("read"), Stage("read", "read_again"), Stage("decode"), Stage("augment")});
  EXPECT_TRUE(absl::StartsWith(message, "stages 'read' and 'read_again' (read) both write "
                                        "'bytes': a field has one writer"))
      << message;
}

TEST(StagePlanTest, NoWriterOfTheBatchTensorIsRefused) {
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode")}),
            "no stage of [read, decode] writes the batch tensor 'output', so no batch can be "
            "made: end the list with a stage that writes it ('augment' does)");
}

TEST(StagePlanTest, ReadingAFreedFieldIsRefused) {
  // augment frees the decoded image: a stage after it would see an empty one.
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode"), Stage("augment"),
                     Stage("plan_test_image_stats", "stats")}),
            "stage 'stats' (plan_test_image_stats) reads 'image', which stage 'augment' frees "
            "before it: put 'stats' (plan_test_image_stats) before 'augment'");
}

TEST(StagePlanTest, InPlaceStageNeedsTheWriterBeforeIt) {
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode"), Stage("plan_test_tint"), Stage("augment")}),
            "stage 'plan_test_tint' reads the batch tensor 'output', which no earlier stage "
            "writes: put an 'augment' stage before it");
}

TEST(StagePlanTest, RefusalStartsWithTheStagesLocation) {
  StageSpec decode = Stage("decode");
  decode.where = "train.yaml:9:5";
  const std::string message = Refusal({decode, Stage("augment")});
  EXPECT_TRUE(absl::StartsWith(message, "train.yaml:9:5: stage 'decode' reads 'bytes'"))
      << message;
}

TEST(StagePlanTest, AStagesBadOptionComesBeforeTheListsFields) {
  StageSpec read = Stage("read");
  read.args = {{"max_retries", "many"}};
  EXPECT_EQ(Refusal({read}), "stage 'read' option 'max_retries' must be int, got 'many'");
}

TEST(StagePlanTest, UnknownTypeIsTheRegistrysNotFound) {
  EXPECT_EQ(CheckStagePlan({Stage("nope")}, StageRegistry::Global()).code(),
            absl::StatusCode::kNotFound);
}

TEST(StagePlanTest, RegisterRefusesFieldsASampleDoesNotHold) {
  StageRegistry registry;
  absl::Status unknown = registry.RegisterFunction(
      "t1", "", Noop, FunctionStageOptions{0, {{"mask", FieldKind::kImage}}, {}});
  EXPECT_TRUE(absl::StrContains(unknown.message(),
                                "stage 't1' declares field 'mask', which a sample does not "
                                "have (fields: key, path, label, bytes, image, output)"))
      << unknown;
  absl::Status kind = registry.RegisterFunction(
      "t2", "", Noop, FunctionStageOptions{0, {}, {{kBytesField, FieldKind::kImage}}});
  EXPECT_EQ(kind.message(),
            "stage 't2' declares field 'bytes' as image, but it holds bytes");
  StageSchema frees;
  frees.type = "t3";
  frees.frees = {kBytesField};
  absl::Status freed = registry.Register(
      frees, [](const StageArgs&, StageEnv&) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
        return absl::UnimplementedError("not created here");
      });
  EXPECT_EQ(freed.message(), "stage 't3' frees 'bytes', which is not among its inputs");
  EXPECT_TRUE(registry.Types().empty());
}

}  // namespace
}  // namespace graph_internal
}  // namespace flowloader
