// CheckStagePlan on the built-in stage types and a few declared user stages: every list
// that cannot make a batch is one line naming the stage, the field and the fix; every
// list that can is accepted. Register's checks of the declared fields.
#include "graph/stage_plan.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
  s.Update(r.RegisterFunction("plan_test_sharpen", "reads an image, writes an image", Noop,
                              FunctionStageOptions{0,
                                                   {{kImageField, FieldKind::kImage}},
                                                   {{kImageField, FieldKind::kImage}}}));
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
            "'output': each batch tensor has one writer; bind one of them to another name "
            "(`outputs: [output_2]`)");
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

TEST(StagePlanTest, AFieldIsFreedAfterItsLastReader) {
  // augment declares that it frees the image, but a stage after it reads the image: the
  // image is freed by that last reader's turn instead (augment is told not to free it).
  absl::StatusOr<StagePlan> plan =
      PlanStages({Stage("read"), Stage("decode"), Stage("augment"),
                  Stage("plan_test_image_stats", "stats")},
                 StageRegistry::Global());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->stages[1].frees, std::vector<std::string>{"bytes"});  // decode, last reader.
  EXPECT_TRUE(plan->stages[2].frees.empty());                           // augment is not.
  absl::StatusOr<StagePlan> alone =
      PlanStages({Stage("read"), Stage("decode"), Stage("augment")}, StageRegistry::Global());
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->stages[2].frees, std::vector<std::string>{"image"});
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
                                "have (fields: key, path, label, bytes, image, output, boxes, "
                                "masks)"))
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

// Bound is `stage` with its ports bound, each binding written at `line` of train.yaml.
StageSpec Bound(StageSpec stage, std::vector<std::string> inputs,
                std::vector<std::string> outputs, int line) {
  stage.where = absl::StrCat("train.yaml:", line, ":5");
  for (const std::string& name : inputs) {
    stage.inputs.push_back(name);
    stage.inputs_where.push_back(absl::StrCat("train.yaml:", line, ":14"));
  }
  for (const std::string& name : outputs) {
    stage.outputs.push_back(name);
    stage.outputs_where.push_back(absl::StrCat("train.yaml:", line, ":15"));
  }
  return stage;
}

TEST(StagePlanTest, BoundFieldNamesAreFollowedToTheBatchTensor) {
  absl::StatusOr<StagePlan> plan = PlanStages(
      {Stage("read"), Bound(Stage("decode"), {}, {"pixels"}, 3),
       Bound(Stage("plan_test_sharpen", "sharpen"), {"pixels"}, {"pixels"}, 4),
       Bound(Stage("augment"), {"pixels"}, {"view0"}, 5)},
      StageRegistry::Global());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch_tensors, std::vector<std::string>{"view0"});
  ASSERT_EQ(plan->stages.size(), 4u);
  EXPECT_EQ(plan->stages[3].inputs[0].name, "pixels");
  EXPECT_EQ(plan->stages[3].outputs[0].name, "view0");
  std::vector<std::string> names;
  for (const FieldFlow& f : plan->fields) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"key", "path", "label", "bytes", "pixels", "view0"}));
  EXPECT_EQ(plan->fields[4].writer, 1);                          // pixels: decode.
  EXPECT_EQ(plan->fields[4].readers, (std::vector<int>{2, 3}));  // sharpen (in place), augment.
  EXPECT_TRUE(plan->fields[5].batch_tensor);
}

TEST(StagePlanTest, ASecondImageFieldIsRefusedUntilSamplesHoldSeveral) {
  EXPECT_EQ(Refusal({Stage("read"), Bound(Stage("decode"), {}, {"pixels"}, 3),
                     Bound(Stage("plan_test_sharpen", "sharpen"), {"pixels"}, {"sharp"}, 4),
                     Bound(Stage("augment"), {"sharp"}, {}, 5)}),
            "train.yaml:4:15: stage 'sharpen' (plan_test_sharpen) writes 'sharp' and stage "
            "'decode' writes 'pixels': a sample holds one image field today; keep one of them");
}

TEST(StagePlanTest, DefaultBindingsPlanReadDecodeAugment) {
  absl::StatusOr<StagePlan> plan =
      PlanStages({Stage("read"), Stage("decode"), Stage("augment")}, StageRegistry::Global());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch_tensors, std::vector<std::string>{kOutputField});
  EXPECT_EQ(plan->stages[1].inputs[0].name, kBytesField);
  EXPECT_EQ(plan->stages[1].outputs[0].name, kImageField);
}

TEST(StagePlanTest, AnUnknownInputNameIsRefusedAtItsLocation) {
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode"), Bound(Stage("augment"), {"nope"}, {}, 7)}),
            "train.yaml:7:14: stage 'augment' reads 'nope', which no stage writes (image fields "
            "written before it: image): bind its input 'image' to one of those");
}

TEST(StagePlanTest, AnInputOfTheWrongKindIsRefused) {
  EXPECT_EQ(Refusal({Stage("read"), Bound(Stage("augment"), {"bytes"}, {}, 6)}),
            "train.yaml:6:14: stage 'augment' input 'image' needs a field of kind image, but "
            "'bytes' (written by 'read') is bytes (no image field is written before it)");
}

TEST(StagePlanTest, ACycleIsRefusedWithItsPath) {
  EXPECT_EQ(Refusal({Stage("read"), Bound(Stage("plan_test_sharpen", "a"), {"x"}, {"y"}, 3),
                     Bound(Stage("plan_test_sharpen", "b"), {"y"}, {"x"}, 4),
                     Stage("augment")}),
            "train.yaml:3:14: stage 'a' (plan_test_sharpen) reads 'x', written by 'b' "
            "(plan_test_sharpen), which depends on it: a cycle "
            "('a' → 'y' → 'b' → 'x' → 'a'); a field must be written before it is read");
}

TEST(StagePlanTest, AFieldWrittenByALaterStageNamesThatStage) {
  EXPECT_EQ(Refusal({Stage("read"), Bound(Stage("augment"), {"pixels"}, {}, 3),
                     Bound(Stage("decode"), {}, {"pixels"}, 4)}),
            "train.yaml:3:14: stage 'augment' reads 'pixels', which no earlier stage writes: "
            "put stage 'decode' before it");
}

TEST(StagePlanTest, TwoAugmentBranchesMakeTwoBatchTensorsInOrder) {
  absl::StatusOr<StagePlan> plan =
      PlanStages({Stage("read"), Stage("decode"),
                  Bound(Stage("augment", "view_a"), {}, {"view0"}, 4),
                  Bound(Stage("augment", "view_b"), {}, {"view1"}, 5)},
                 StageRegistry::Global());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch_tensors, (std::vector<std::string>{"view0", "view1"}));
  // Both branches read the one decoded image; the last of them frees it.
  EXPECT_TRUE(plan->stages[2].frees.empty());
  EXPECT_EQ(plan->stages[3].frees, std::vector<std::string>{"image"});
}

TEST(StagePlanTest, AugmentsRepeatingOutputTakesOneNamePerView) {
  absl::StatusOr<StagePlan> plan =
      PlanStages({Stage("read"), Stage("decode"),
                  Bound(Stage("augment"), {}, {"view0", "view1", "view2"}, 4)},
                 StageRegistry::Global());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch_tensors, (std::vector<std::string>{"view0", "view1", "view2"}));
  ASSERT_EQ(plan->stages[2].outputs.size(), 3u);
  EXPECT_EQ(plan->stages[2].outputs[2].kind, FieldKind::kTensor);
}

TEST(StagePlanTest, AViewNamedTwiceIsRefused) {
  EXPECT_EQ(Refusal({Stage("read"), Stage("decode"),
                     Bound(Stage("augment"), {}, {"view0", "view0"}, 4)}),
            "train.yaml:4:15: stage 'augment' writes the batch tensor 'view0' twice: give each "
            "of its outputs its own name");
}

TEST(StagePlanTest, ABindingNeedsOneNamePerPort) {
  EXPECT_EQ(Refusal({Stage("read"), Bound(Stage("decode"), {}, {"a", "b"}, 3)}),
            "train.yaml:3:5: stage 'decode' has 1 outputs (image), but `outputs: [a, b]` names "
            "2: give one field name per port");
}

}  // namespace
}  // namespace graph_internal
}  // namespace flowloader
