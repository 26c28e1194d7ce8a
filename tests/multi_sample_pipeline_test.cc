// multi_sample_pipeline_test: the multi-sample batch ops (mosaic, copy_paste) in a real
// detection pipeline: the same bytes (images and every target) for 1 and 2 workers and
// after a resume mid-epoch, targets that stay consistent with the canvas, the stage's
// part in the memory plan, and the refusals at Create in one line.
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "runtime/detection_dataset.h"
#include "runtime/pipeline.h"
#include "tests/testing/pipeline_helpers.h"

namespace flowloader {
namespace {

class MultiSamplePipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = new std::string(std::string(tmp != nullptr ? tmp : "/tmp") + "/multi_sample");
    DetectionDatasetOptions o;
    o.root = *root_;
    o.images = 14;
    o.min_side = 64;
    o.max_side = 96;
    o.max_instances = 6;
    ASSERT_TRUE(GenerateDetectionDataset(o).ok());
  }

  // Options: 14 images in batches of 4 (the last one partial), two epochs, shuffled.
  static PipelineOptions Options(StageSpec op, int workers, const std::string& ops) {
    PipelineOptions o;
    o.data = *root_ + "/images";
    o.annotations = *root_ + "/annotations/instances.json";
    o.batch_size = 4;
    o.num_workers = workers;
    o.prefetch_batches = 3;
    o.epochs = 2;
    o.seed = 11;
    o.device = DeviceChoice::kCpu;
    o.stages = {StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", ops}}}, StageSpec{"sanitize_bounding_boxes"}};
    o.batch_ops = {std::move(op)};
    return o;
  }

  static StageSpec Op(const std::string& type, std::map<std::string, std::string> args = {}) {
    StageSpec s;
    s.type = type;
    s.args = std::move(args);
    return s;
  }

  // Bytes is a batch's image rows and every target, as one string.
  static std::string Bytes(const Batch& b) {
    std::string s(static_cast<const char*>(b.host_data()), b.bytes());
    const BatchTargets& t = b.targets;
    auto add = [&s](const auto& v) {
      s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0]));
      s.push_back('|');
    };
    add(t.offsets), add(t.boxes), add(t.labels), add(t.iscrowd), add(t.area);
    add(t.image_ids), add(t.masks), add(t.keypoints);
    return s;
  }

  // Drain runs `p` for up to max_batches and keeps each batch's Bytes; *checks runs on
  // each batch when given.
  static std::vector<std::string> Drain(Pipeline& p, int max_batches = 1 << 30,
                                        void (*checks)(const Batch&) = nullptr) {
    std::vector<std::string> out;
    while (static_cast<int>(out.size()) < max_batches) {
      std::shared_ptr<const Batch> b;
      bool end = false;
      const absl::Status s = p.Next(&b, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || (end && p.done())) break;
      if (b == nullptr) continue;
      if (checks != nullptr) checks(*b);
      out.push_back(Bytes(*b));
    }
    return out;
  }

  static std::unique_ptr<Pipeline> MustCreate(const PipelineOptions& o) {
    auto p = Pipeline::Create(o);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }

  // SameForWorkersAndResume checks the determinism the batch stages promise.
  static void SameForWorkersAndResume(const StageSpec& op, const std::string& ops) {
    const std::vector<std::string> one = Drain(*MustCreate(Options(op, 1, ops)));
    const std::vector<std::string> two = Drain(*MustCreate(Options(op, 2, ops)));
    ASSERT_EQ(one.size(), 8u);  // 4 batches an epoch, 2 epochs.
    EXPECT_TRUE(one == two);
    auto first = MustCreate(Options(op, 2, ops));
    std::vector<std::string> resumed = Drain(*first, 5);  // Into epoch 1.
    PipelineOptions o = Options(op, 2, ops);
    o.resume = first->Checkpoint();
    first.reset();
    for (std::string& s : Drain(*MustCreate(o))) resumed.push_back(std::move(s));
    EXPECT_TRUE(resumed == one);
    // And the op did something: not the bytes of the same graph without it.
    PipelineOptions plain = Options(op, 2, ops);
    plain.batch_ops.clear();
    EXPECT_FALSE(Drain(*MustCreate(plain)) == one);
  }

  static std::string* root_;
};

std::string* MultiSamplePipelineTest::root_ = nullptr;

// CheckCanvas checks that every box is inside the 48 × 48 canvas and has its masks.
void CheckCanvas(const Batch& b) {
  const BatchTargets& t = b.targets;
  ASSERT_TRUE(t.present && t.has_masks);
  ASSERT_EQ(t.rows(), b.size());
  ASSERT_EQ(t.masks.size(), t.labels.size() * 48 * 48);
  for (size_t k = 0; k < t.labels.size(); ++k) {
    const float* box = &t.boxes[4 * k];
    EXPECT_TRUE(box[0] >= 0 && box[1] >= 0 && box[2] <= 48 && box[3] <= 48);
    EXPECT_TRUE(box[2] > box[0] && box[3] > box[1]);
  }
}

TEST_F(MultiSamplePipelineTest, MosaicIsTheSameForAnyWorkersAndOnResume) {
  SameForWorkersAndResume(Op("mosaic", {{"p", "0.7"}}), "resize(size=[48, 48])");
  auto p = MustCreate(Options(Op("mosaic"), 2, "resize(size=[48, 48])"));
  Drain(*p, 8, CheckCanvas);
}

TEST_F(MultiSamplePipelineTest, MosaicOnNormalizedImages) {
  SameForWorkersAndResume(Op("mosaic", {{"p", "0.5"}}),
                          "resize(size=[48, 48]); normalize()");
}

TEST_F(MultiSamplePipelineTest, CopyPasteIsTheSameForAnyWorkersAndOnResume) {
  SameForWorkersAndResume(Op("copy_paste"), "resize(size=[48, 48])");
  SameForWorkersAndResume(Op("copy_paste", {{"blending", "false"}, {"p", "0.5"}}),
                          "resize(size=[48, 48]); normalize()");
  auto p = MustCreate(Options(Op("copy_paste"), 2, "resize(size=[48, 48])"));
  Drain(*p, 8, CheckCanvas);
}

// Keypoints (make-dataset --keypoints) ride through both ops: a row the op leaves has its
// points unchanged (they were dropped before), a mosaic row has P points per kept
// instance, unlabelled (v = 0) where they lie off its canvas, and copy_paste keeps them.
TEST_F(MultiSamplePipelineTest, KeypointsRideThroughBothOps) {
  const std::string root = *root_ + "_keypoints";
  ASSERT_TRUE(testing::MakeKeypointDataset(root, 14, 6).ok());
  auto options = [&root](StageSpec op) {
    PipelineOptions o = Options(std::move(op), 2, "resize(size=[48, 48])");
    o.data = root + "/images";
    o.annotations = root + "/annotations/instances.json";
    o.epochs = 1;
    return o;
  };
  // Rows is what the test keeps of a batch (the pipeline reuses its buffers).
  struct Rows {
    std::string pixels;
    size_t row_bytes = 0;
    int64_t rows = 0;
    bool has_keypoints = false;
    int num_keypoints = 0;
    std::vector<int64_t> offsets;
    std::vector<float> keypoints;
  };
  auto batches = [](const PipelineOptions& o) {
    std::vector<Rows> out;
    auto p = MustCreate(o);
    while (p != nullptr) {
      std::shared_ptr<const Batch> b;
      bool end = false;
      const absl::Status s = p->Next(&b, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok() || (end && p->done())) break;
      if (b == nullptr || b->size() == 0) continue;
      Rows r;
      r.pixels.assign(static_cast<const char*>(b->host_data()), b->bytes());
      r.rows = b->size();
      r.row_bytes = b->bytes() / static_cast<size_t>(r.rows);
      r.has_keypoints = b->targets.has_keypoints;
      r.num_keypoints = b->targets.num_keypoints;
      r.offsets = b->targets.offsets;
      r.keypoints = b->targets.keypoints;
      out.push_back(std::move(r));
    }
    return out;
  };
  PipelineOptions plain_options = options(Op("mosaic"));
  plain_options.batch_ops.clear();
  const std::vector<Rows> plain = batches(plain_options);
  ASSERT_EQ(plain.size(), 4u);
  for (const char* type : {"mosaic", "copy_paste"}) {
    const std::vector<Rows> got = batches(options(Op(type, {{"p", "0.5"}})));
    ASSERT_EQ(got.size(), plain.size());
    int left = 0, changed = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const Rows& t = got[i];
      const Rows& u = plain[i];
      ASSERT_TRUE(t.has_keypoints) << type;
      ASSERT_EQ(t.num_keypoints, 3);
      ASSERT_EQ(t.keypoints.size(), static_cast<size_t>(t.offsets.back()) * 9) << type;
      for (int64_t r = 0; r < t.rows; ++r) {
        if (t.pixels.compare(r * t.row_bytes, t.row_bytes, u.pixels, r * u.row_bytes,
                             u.row_bytes) != 0) {
          ++changed;
          continue;
        }
        ++left;  // The op left this row: its points are the plain graph's.
        const std::vector<float> want(u.keypoints.begin() + 9 * u.offsets[r],
                                      u.keypoints.begin() + 9 * u.offsets[r + 1]);
        const std::vector<float> have(t.keypoints.begin() + 9 * t.offsets[r],
                                      t.keypoints.begin() + 9 * t.offsets[r + 1]);
        EXPECT_EQ(have, want) << type << " batch " << i << " row " << r;
      }
      for (size_t j = 0; j < t.keypoints.size(); j += 3) {
        const float x = t.keypoints[j], y = t.keypoints[j + 1], v = t.keypoints[j + 2];
        if (std::string(type) == "mosaic" && (x < 0 || y < 0 || x > 48 || y > 48)) {
          EXPECT_EQ(v, 0) << "a point off the mosaic's canvas is labelled";
        }
      }
    }
    EXPECT_GT(left, 0) << type;
    EXPECT_GT(changed, 0) << type;
  }
}

TEST_F(MultiSamplePipelineTest, MemoryPlanCountsTheCopies) {
  for (const char* type : {"mosaic", "copy_paste"}) {
    auto plan = Pipeline::PlanMemory(Options(Op(type), 2, "resize(size=[48, 48])"));
    ASSERT_TRUE(plan.ok()) << plan.status();
    bool found = false;
    for (const MemoryPart& part : plan->parts()) {
      found |= absl::StartsWith(part.key, type) && part.bytes > 4 * 48 * 48 * 3;
    }
    EXPECT_TRUE(found) << type;
  }
}

TEST_F(MultiSamplePipelineTest, RefusesMisuseAtCreateInOneLine) {
  struct Case {
    PipelineOptions options;
    const char* expected;
  };
  PipelineOptions no_masks = Options(Op("copy_paste"), 1, "resize(size=[48, 48])");
  no_masks.stages[1].args["masks"] = "false";
  PipelineOptions no_targets = Options(Op("mosaic"), 1, "resize(size=[48, 48])");
  no_targets.stages = {StageSpec{"read"}, StageSpec{"decode"},
                       StageSpec{"transforms", "", {{"ops", "resize(size=[48, 48])"}}}};
  const std::vector<Case> cases = {
      {Options(Op("mosaic", {{"p", "1.5"}}), 1, "resize(size=[48, 48])"),
       "mosaic: option 'p' must be in [0, 1], got 1.5"},
      {Options(Op("mosaic", {{"center_min", "1"}, {"center_max", "0.5"}}), 1,
               "resize(size=[48, 48])"),
       "option 'center_max' must be in [center_min, 2]"},
      {Options(Op("mosaic", {{"fill", "300"}}), 1, "resize(size=[48, 48])"),
       "option 'fill' must be in [0, 255] on a uint8 image, got 300"},
      {Options(Op("copy_paste", {{"p", "-1"}}), 1, "resize(size=[48, 48])"),
       "copy_paste: option 'p' must be in [0, 1], got -1"},
      {no_masks, "set its option masks: true"},
      {no_targets, "mosaic moves instance targets, and the graph writes none"},
  };
  for (const Case& c : cases) {
    auto p = Pipeline::Create(c.options);
    ASSERT_FALSE(p.ok()) << c.expected;
    const std::string message(p.status().message());
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace flowloader
