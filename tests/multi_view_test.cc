// Several views per sample, end to end on real JPEGs and a real oneTBB graph: one decode
// feeds augment branches (one bound to two views, one of its own size and layout); every
// view is a named batch tensor. The guarantees of a one-view pipeline hold for each view:
// byte-identical for any num_workers and across resume, skips counted once, the memory
// plan counting every output's bytes.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

// Delivered is what a run delivered: per tensor name, every row's bytes in order; the
// keys; and every skipped key.
struct Delivered {
  std::vector<std::string> names;
  std::vector<std::string> bytes;  // Parallel to names.
  std::vector<std::string> keys;
  std::vector<std::string> skipped;
  int64_t rows = 0;
};

void Append(const Batch& batch, Delivered* out) {
  if (out->names.empty()) {
    for (const BatchTensor& t : batch.tensors) out->names.push_back(t.name);
    out->bytes.resize(batch.tensors.size());
  }
  ASSERT_EQ(batch.tensors.size(), out->names.size());
  for (const BatchTensor& t : batch.tensors) {
    ASSERT_EQ(t.shape.front(), batch.size()) << t.name;  // Same rows in every tensor.
  }
  testing::AppendTensorBytes(batch, &out->bytes);
  // The batch's own fields are its first tensor.
  EXPECT_EQ(batch.host_data(), batch.tensors.front().host_data);
  EXPECT_EQ(batch.shape(), batch.tensors.front().shape);
  out->keys.insert(out->keys.end(), batch.keys.begin(), batch.keys.end());
  for (const SkippedSample& s : batch.skipped) out->skipped.push_back(s.key);
  out->rows += batch.size();
}

// Drain delivers every batch left (at most `max_batches`).
Delivered Drain(Pipeline& p, int max_batches = 1 << 30) {
  Delivered out;
  const absl::Status s = testing::EachBatch(
      p, nullptr, [&out](const Batch& batch) { Append(batch, &out); }, max_batches);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// ViewStages is read → decode → augment with outputs [view0, view1] (32 px float) and a
// second augment `small` (16 px uint8), built with GraphBuilder. `dct_scaling` off makes
// view0 independent of the other views' crops (docs/specs.md).
std::vector<StageSpec> ViewStages(bool dct_scaling = true) {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode").Option("dct_scaling", dct_scaling ? "true" : "false");
  graph.Add("augment").Outputs({"view0", "view1"}).Option("image_size", "32");
  graph.Add("augment")
      .Name("small")
      .Outputs({"small"})
      .Option("image_size", "16")
      .Option("layout", "uint8_hwc");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  EXPECT_TRUE(stages.ok()) << stages.status();
  return stages.ok() ? *stages : std::vector<StageSpec>{};
}

PipelineOptions ViewOptions(const std::string& data, int workers) {
  PipelineOptions o;
  o.data = data;
  o.batch_size = 8;
  o.num_workers = workers;
  o.prefetch_batches = 3;
  o.epochs = 2;
  o.seed = 7;
  o.device = DeviceChoice::kCpu;
  o.stages = ViewStages();
  return o;
}

std::unique_ptr<Pipeline> MustCreate(const PipelineOptions& o) {
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

class MultiViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(MakeImageFolder(TempDir("multi_view"), 3, 10));
  }
  static std::string* data_;
};
std::string* MultiViewTest::data_ = nullptr;

TEST_F(MultiViewTest, EveryViewIsANamedTensorAndTheViewsDiffer) {
  auto p = MustCreate(ViewOptions(*data_, 2));
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->outputs().size(), 3u);
  EXPECT_EQ(p->outputs()[1].name, "view1");
  EXPECT_EQ(p->outputs()[2].sample_shape, (std::vector<int64_t>{16, 16, 3}));
  const Delivered d = Drain(*p);
  EXPECT_EQ(d.names, (std::vector<std::string>{"view0", "view1", "small"}));
  EXPECT_EQ(d.rows, 60);
  EXPECT_EQ(d.bytes[0].size(), size_t{60} * 3 * 32 * 32 * 4);
  EXPECT_EQ(d.bytes[2].size(), size_t{60} * 16 * 16 * 3);
  // Independent random crops: the two 32 px views are not the same pixels.
  EXPECT_NE(d.bytes[0], d.bytes[1]);
}

TEST_F(MultiViewTest, EachViewIsByteIdenticalForOneOrTwoWorkers) {
  auto one = MustCreate(ViewOptions(*data_, 1));
  auto two = MustCreate(ViewOptions(*data_, 2));
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  const Delivered a = Drain(*one);
  const Delivered b = Drain(*two);
  ASSERT_EQ(a.bytes.size(), 3u);
  EXPECT_EQ(a.keys, b.keys);
  for (size_t k = 0; k < a.bytes.size(); ++k) EXPECT_TRUE(a.bytes[k] == b.bytes[k]) << a.names[k];
}

TEST_F(MultiViewTest, ResumeMidEpochDeliversTheSameBytes) {
  const Delivered whole = Drain(*MustCreate(ViewOptions(*data_, 2)));
  auto first = MustCreate(ViewOptions(*data_, 2));
  ASSERT_NE(first, nullptr);
  const Delivered head = Drain(*first, 5);  // Epoch 0's 4 batches and one of epoch 1.
  PipelineOptions o = ViewOptions(*data_, 2);
  o.resume = first->Checkpoint();
  first.reset();
  auto resumed = MustCreate(o);
  ASSERT_NE(resumed, nullptr);
  const Delivered tail = Drain(*resumed);
  for (size_t k = 0; k < whole.bytes.size(); ++k) {
    EXPECT_TRUE(head.bytes[k] + tail.bytes[k] == whole.bytes[k]) << whole.names[k];
  }
}

TEST_F(MultiViewTest, ViewZeroEqualsTheSingleViewGraphWithoutDctScaling) {
  PipelineOptions multi = ViewOptions(*data_, 2);
  multi.stages = ViewStages(/*dct_scaling=*/false);
  PipelineOptions single = multi;
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode").Option("dct_scaling", "false");
  graph.Add("augment").Option("image_size", "32");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  ASSERT_TRUE(stages.ok()) << stages.status();
  single.stages = *stages;
  const Delivered m = Drain(*MustCreate(multi));
  const Delivered s = Drain(*MustCreate(single));
  ASSERT_EQ(s.bytes.size(), 1u);
  EXPECT_TRUE(m.bytes[0] == s.bytes[0]);
}

TEST_F(MultiViewTest, TheMemoryPlanCountsEveryOutput) {
  const PipelineOptions o = ViewOptions(*data_, 2);
  absl::StatusOr<MemoryPlan> plan = Pipeline::PlanMemory(o);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int64_t pool = -1;
  std::string formula;
  for (const MemoryPart& part : plan->parts()) {
    if (part.key != "batch_pool") continue;
    pool = part.bytes;
    formula = part.formula;
  }
  // Two 3×32² float32 views and one 16²×3 uint8, 8 rows, 3 buffers (regions 64-aligned).
  const int64_t row_bytes = 2 * 3 * 32 * 32 * 4 + 16 * 16 * 3;
  EXPECT_EQ(pool, 3 * 8 * row_bytes);
  EXPECT_TRUE(absl::StrContains(formula, "3×32² float32 + 3×32² float32 + 16²×3 uint8"))
      << formula;
}

TEST_F(MultiViewTest, SkippedSamplesAreCountedOnceAndDropTheirRowInEveryView) {
  const std::string root = MakeImageFolder(TempDir("multi_view_bad"), 2, 6);
  testing::WriteFile(root + "/class_000/zz_broken.jpg", "not a jpeg");
  PipelineOptions o = ViewOptions(root, 2);
  o.epochs = 1;
  auto p = MustCreate(o);
  ASSERT_NE(p, nullptr);
  const Delivered d = Drain(*p);
  EXPECT_EQ(d.rows, 12);
  EXPECT_EQ(p->stats()->skipped.load(), 1u);
  ASSERT_EQ(d.skipped.size(), 1u);
  EXPECT_TRUE(absl::StrContains(d.skipped[0], "zz_broken")) << d.skipped[0];
  EXPECT_EQ(d.bytes[1].size(), size_t{12} * 3 * 32 * 32 * 4);
}

TEST_F(MultiViewTest, EachSampleIsReadAndDecodedOnceForAllItsViews) {
  PipelineOptions o = ViewOptions(*data_, 2);
  o.epochs = 1;
  auto p = MustCreate(o);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Drain(*p).rows, 30);
  for (const auto& stage : p->stats()->stages()) {
    if (stage->name() != "read" && stage->name() != "decode") continue;
    EXPECT_EQ(stage->items_in.load(), 30) << stage->name();
  }
  EXPECT_EQ(p->stats()->skipped.load(), 0u);
}

TEST_F(MultiViewTest, ABatchTensorWithTwoWritersIsRefusedNamingBoth) {
  PipelineOptions o = ViewOptions(*data_, 2);
  o.stages[3].outputs = {"view1"};  // `small` would write view1 too.
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "stages 'augment' and 'small' (augment) both write the batch tensor 'view1': each "
            "batch tensor has one writer; bind one of them to another name (`outputs: "
            "[view1_2]`)");
}

TEST_F(MultiViewTest, OnlyARepeatingPortTakesSeveralNames) {
  PipelineOptions o = ViewOptions(*data_, 2);
  o.stages[1].outputs = {"image", "image2"};  // decode writes one image.
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "stage 'decode' has 1 outputs (image), but `outputs: [image, image2]` names 2: "
            "give one field name per port");
}

}  // namespace
}  // namespace flowloader
