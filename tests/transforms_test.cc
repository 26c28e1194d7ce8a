// Op lists end to end on real JPEGs and a real oneTBB graph: the default list is the
// augment stage byte for byte; any list is byte-identical for any num_workers and across
// resume (every draw is keyed by seed, epoch, sample, view and op); a view without a
// crop-and-resize head sees the whole image beside views that decode only their crops.
#include <string>
#include <vector>

#include "graph/graph_builder.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "runtime/spec.h"
#include "stages/core/log.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::MakeImageFolder;
using testing::TempDir;

// Delivered is every tensor's bytes in delivery order, by tensor.
struct Delivered {
  std::vector<std::string> bytes;
  int64_t rows = 0;
};

Delivered Drain(Pipeline& p, int max_batches = 1 << 30) {
  Delivered out;
  const absl::Status s = testing::EachBatch(
      p, nullptr,
      [&out](const Batch& batch) {
        testing::AppendTensorBytes(batch, &out.bytes);
        out.rows += batch.size();
      },
      max_batches);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<StageSpec> Build(GraphBuilder& graph) {
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  EXPECT_TRUE(stages.ok()) << stages.status();
  return stages.ok() ? *stages : std::vector<StageSpec>{};
}

PipelineOptions Options(const std::string& data, int workers, std::vector<StageSpec> stages) {
  PipelineOptions o;
  o.data = data;
  o.batch_size = 8;
  o.num_workers = workers;
  o.prefetch_batches = 3;
  o.epochs = 2;
  o.seed = 11;
  o.device = DeviceChoice::kCpu;
  o.stages = std::move(stages);
  return o;
}

// Three views: a planned bicubic crop with pixel ops after it, two of the same list
// (independent draws), and a whole-image list.
std::vector<StageSpec> MixedViews() {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("transforms")
      .Name("crops")
      .Outputs({"a", "b"})
      .Option("ops",
              "random_resized_crop(size=32, interpolation=bicubic); random_horizontal_flip(); "
              "center_crop(size=28); normalize()");
  graph.Add("transforms")
      .Name("whole")
      .Outputs({"whole"})
      .Option("ops", "resize(size=[20, 24]); random_horizontal_flip(); normalize(mean=0.5, std=0.5)");
  return Build(graph);
}

std::unique_ptr<Pipeline> MustCreate(const PipelineOptions& o) {
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

class TransformsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SetMinLogLevel(LogLevel::kWarning);
    data_ = new std::string(MakeImageFolder(TempDir("transforms"), 3, 8));
  }
  static std::string* data_;
};
std::string* TransformsTest::data_ = nullptr;

TEST_F(TransformsTest, DefaultListIsTheAugmentStageByteForByte) {
  GraphBuilder fused;
  fused.Add("read");
  fused.Add("decode");
  fused.Add("augment").Option("image_size", "32");
  GraphBuilder listed;
  listed.Add("read");
  listed.Add("decode");
  listed.Add("transforms")
      .Option("ops", "random_resized_crop(size=32); random_horizontal_flip(); normalize()");
  const Delivered a = Drain(*MustCreate(Options(*data_, 2, Build(fused))));
  const Delivered b = Drain(*MustCreate(Options(*data_, 2, Build(listed))));
  ASSERT_EQ(a.bytes.size(), 1u);
  EXPECT_EQ(a.rows, 48);
  EXPECT_TRUE(a.bytes == b.bytes);
}

TEST_F(TransformsTest, ViewsHaveTheirShapesAndDiffer) {
  auto p = MustCreate(Options(*data_, 2, MixedViews()));
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->outputs().size(), 3u);
  EXPECT_EQ(p->outputs()[0].sample_shape, (std::vector<int64_t>{3, 28, 28}));
  EXPECT_EQ(p->outputs()[2].sample_shape, (std::vector<int64_t>{3, 20, 24}));
  const Delivered d = Drain(*p);
  EXPECT_EQ(d.rows, 48);
  EXPECT_NE(d.bytes[0], d.bytes[1]);  // Same list, independent draws.
}

TEST_F(TransformsTest, ByteIdenticalForOneOrTwoWorkers) {
  const Delivered one = Drain(*MustCreate(Options(*data_, 1, MixedViews())));
  const Delivered two = Drain(*MustCreate(Options(*data_, 2, MixedViews())));
  ASSERT_EQ(one.bytes.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(one.bytes[k] == two.bytes[k]) << k;
}

TEST_F(TransformsTest, ResumeMidEpochDeliversTheSameBytes) {
  const Delivered whole = Drain(*MustCreate(Options(*data_, 2, MixedViews())));
  auto first = MustCreate(Options(*data_, 2, MixedViews()));
  ASSERT_NE(first, nullptr);
  const Delivered head = Drain(*first, 4);  // Epoch 0's 3 batches and one of epoch 1.
  PipelineOptions o = Options(*data_, 2, MixedViews());
  o.resume = first->Checkpoint();
  first.reset();
  const Delivered tail = Drain(*MustCreate(o));
  for (size_t k = 0; k < whole.bytes.size(); ++k) {
    EXPECT_TRUE(head.bytes[k] + tail.bytes[k] == whole.bytes[k]) << k;
  }
}

// The four recipes of runtime/specs run from their specs, with one tensor per view.
TEST_F(TransformsTest, RecipeSpecsRun) {
  const struct {
    const char* spec;
    std::vector<std::string> tensors;
    std::vector<int64_t> first_shape;
  } kRecipes[] = {
      {"torchvision_v2", {"output"}, {3, 176, 176}},
      {"timm_randaugment", {"output"}, {3, 224, 224}},
      {"simclr", {"view1", "view2"}, {3, 224, 224}},
      {"dino",
       {"global1", "global2", "local1", "local2", "local3", "local4", "local5", "local6",
        "local7", "local8"},
       {3, 224, 224}},
  };
  for (const auto& recipe : kRecipes) {
    SCOPED_TRACE(recipe.spec);
    absl::StatusOr<PipelineOptions> o =
        LoadSpecFile(std::string("runtime/specs/") + recipe.spec + ".yaml");
    ASSERT_TRUE(o.ok()) << o.status();
    o->data = *data_;
    o->batch_size = 4;
    o->num_workers = 2;
    o->device = DeviceChoice::kCpu;
    auto p = MustCreate(*o);
    ASSERT_NE(p, nullptr);
    std::vector<std::string> names;
    for (const auto& t : p->outputs()) names.push_back(t.name);
    EXPECT_EQ(names, recipe.tensors);
    EXPECT_EQ(p->outputs()[0].sample_shape, recipe.first_shape);
    const Delivered d = Drain(*p, 2);
    EXPECT_EQ(d.rows, 8);
    EXPECT_EQ(d.bytes.size(), recipe.tensors.size());
  }
}

TEST_F(TransformsTest, ABadListIsRefusedAtCreate) {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("transforms").Option("ops", "normalize(); random_horizontal_flip()");
  absl::StatusOr<std::unique_ptr<Pipeline>> p =
      Pipeline::Create(Options(*data_, 2, Build(graph)));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("must come before normalize"), std::string::npos)
      << p.status();
}

}  // namespace
}  // namespace flowloader
