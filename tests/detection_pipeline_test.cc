// detection_pipeline_test: COCO annotations through a real pipeline: the annotations
// stage writes the targets, the transforms head moves boxes and masks with the pixels
// exactly as the geometry functions (torchvision v2's semantics, checked by
// detection_parity_test) say, sanitize drops what the crop leaves degenerate, and the
// batch carries them flat with per-row offsets. Misuse is refused at Create in one line.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "runtime/detection_dataset.h"
#include "runtime/pipeline.h"
#include "stages/detection/coco.h"
#include "stages/detection/geometry.h"
#include "stages/detection/rle.h"
#include "tests/testing/pipeline_helpers.h"

namespace flowloader {
namespace {

class DetectionPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = new std::string(std::string(tmp != nullptr ? tmp : "/tmp") + "/detection");
    DetectionDatasetOptions o;
    o.root = *root_;
    o.images = 12;
    o.min_side = 64;
    o.max_side = 96;
    o.max_instances = 9;
    ASSERT_TRUE(GenerateDetectionDataset(o).ok());
  }

  static PipelineOptions Options(const std::string& ops, bool sanitize = false) {
    PipelineOptions o = testing::SmallCpuOptions(*root_ + "/images", 4, nullptr);
    o.annotations = *root_ + "/annotations/instances.json";
    o.shuffle = false;
    o.epochs = 1;
    o.stages = {StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", ops}}}};
    if (sanitize) o.stages.push_back(StageSpec{"sanitize_bounding_boxes"});
    return o;
  }

  static std::unique_ptr<detection::CocoDataset> Coco() {
    detection::CocoOptions c;
    c.annotations = *root_ + "/annotations/instances.json";
    c.images = *root_ + "/images";
    return std::move(detection::CocoDataset::Open(c).value());
  }

  // Delivered is what a test keeps of a batch (holding the batches themselves would hold
  // the pool's buffers and stall the pipeline).
  struct Delivered {
    int64_t rows = 0;
    std::vector<int64_t> indices;
    BatchTargets targets;
    std::vector<SkippedSample> skipped;
    int64_t size() const { return rows; }
  };

  static std::vector<std::shared_ptr<const Delivered>> Run(const PipelineOptions& o) {
    auto pipeline = Pipeline::Create(o);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    std::vector<std::shared_ptr<const Delivered>> batches;
    if (!pipeline.ok()) return batches;
    for (;;) {
      std::shared_ptr<const Batch> batch;
      bool end = false;
      absl::Status s = (*pipeline)->Next(&batch, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) break;
      if (batch != nullptr) {
        auto d = std::make_shared<Delivered>();
        d->rows = batch->size();
        d->indices = batch->indices;
        d->targets = batch->targets;
        d->skipped = batch->skipped;
        batches.push_back(std::move(d));
      }
      if (end) break;
    }
    return batches;
  }

  static std::string* root_;
};

std::string* DetectionPipelineTest::root_ = nullptr;

// ResizedSize is torchvision's _compute_resized_output_size for Resize(size=short).
void ResizedSize(int w, int h, int short_side, int* rw, int* rh) {
  const int s = std::min(w, h), l = std::max(w, h);
  const int long_side = static_cast<int>(static_cast<double>(short_side) * l / s);
  *rw = w <= h ? short_side : long_side;
  *rh = w <= h ? long_side : short_side;
}

TEST_F(DetectionPipelineTest, ResizeAndCenterCropMoveEveryTargetAsTheGeometrySays) {
  const auto batches = Run(Options("resize(size=64); center_crop(size=48)"));
  const auto coco = Coco();
  int64_t rows = 0, instances = 0;
  for (const auto& batch : batches) {
    const BatchTargets& t = batch->targets;
    ASSERT_TRUE(t.present);
    ASSERT_EQ(t.rows(), batch->size());
    ASSERT_TRUE(t.has_masks);
    EXPECT_EQ(t.mask_height, 48);
    EXPECT_EQ(t.mask_width, 48);
    for (int64_t r = 0; r < batch->size(); ++r, ++rows) {
      detection::Targets want;
      coco->MakeTargets(static_cast<size_t>(batch->indices[r]), &want);
      int rw = 0, rh = 0;
      ResizedSize(want.canvas_width, want.canvas_height, 64, &rw, &rh);
      detection::Apply(detection::Geometry::Resize(rh, rw), &want);
      detection::Apply(detection::Geometry::CenterCrop(48, 48), &want);
      const int64_t begin = t.offsets[r], count = t.offsets[r + 1] - begin;
      ASSERT_EQ(count, want.size());
      EXPECT_EQ(t.image_ids[r], coco->images()[batch->indices[r]].id);
      for (int64_t k = 0; k < count; ++k, ++instances) {
        for (int c = 0; c < 4; ++c) {
          EXPECT_NEAR(t.boxes[4 * (begin + k) + c], want.boxes[4 * k + c], 1e-4);
        }
        EXPECT_EQ(t.labels[begin + k], want.labels[k]);
        EXPECT_EQ(t.iscrowd[begin + k], want.iscrowd[k]);
        EXPECT_EQ(t.area[begin + k], want.area[k]);
      }
      const size_t plane = 48 * 48;
      ASSERT_EQ(want.masks.size(), count * plane);
      EXPECT_TRUE(std::equal(want.masks.begin(), want.masks.end(),
                             t.masks.begin() + begin * plane));
    }
  }
  EXPECT_EQ(rows, 12);
  EXPECT_GT(instances, 12);
}

TEST_F(DetectionPipelineTest, RandomCropsKeepMasksInsideTheirBoxesAndAreDeterministic) {
  const std::string ops =
      "random_resized_crop(size=48, scale=[0.3, 1.0]); random_horizontal_flip(); "
      "normalize()";
  PipelineOptions one = Options(ops, /*sanitize=*/true);
  one.num_workers = 1;
  const auto a = Run(one);
  const auto b = Run(Options(ops, /*sanitize=*/true));
  ASSERT_EQ(a.size(), b.size());
  int64_t instances = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const BatchTargets& t = a[i]->targets;
    EXPECT_EQ(t.boxes, b[i]->targets.boxes);  // Any num_workers: the same draws.
    EXPECT_EQ(t.masks, b[i]->targets.masks);
    EXPECT_EQ(t.labels, b[i]->targets.labels);
    const int64_t total = t.offsets.back();
    instances += total;
    for (int64_t k = 0; k < total; ++k) {
      const float* box = &t.boxes[4 * k];
      // Sanitized: inside the 48 × 48 canvas, at least 1 px each way.
      EXPECT_GE(box[0], 0);
      EXPECT_LE(box[2], 48);
      EXPECT_LE(box[3], 48);
      EXPECT_GE(box[2] - box[0], 1);
      EXPECT_GE(box[3] - box[1], 1);
      // The mask (nearest neighbour) lies within its box give or take a source pixel.
      const detection::Rle rle = detection::RleFromMask(t.masks.data() + k * 48 * 48, 48, 48);
      double m[4];
      detection::RleBox(rle, m);
      if (m[2] == 0) continue;  // A sliver whose mask fell between sampled pixels.
      EXPECT_GE(m[0], std::floor(box[0]) - 2);
      EXPECT_GE(m[1], std::floor(box[1]) - 2);
      EXPECT_LE(m[0] + m[2], std::ceil(box[2]) + 2);
      EXPECT_LE(m[1] + m[3], std::ceil(box[3]) + 2);
    }
  }
  EXPECT_GT(instances, 0);
}

// A list without a head: the whole image, each op after it moving the targets in order.
TEST_F(DetectionPipelineTest, OpsAfterTheHeadMoveTargetsInOrder) {
  const auto batches = Run(Options(
      "random_vertical_flip(p=1); pad(padding=[3, 5, 7, 9]); resize(size=[40, 44])"));
  const auto coco = Coco();
  int64_t rows = 0;
  for (const auto& batch : batches) {
    const BatchTargets& t = batch->targets;
    ASSERT_TRUE(t.has_masks);
    EXPECT_EQ(t.mask_height, 40);
    EXPECT_EQ(t.mask_width, 44);
    for (int64_t r = 0; r < batch->size(); ++r, ++rows) {
      detection::Targets want;
      coco->MakeTargets(static_cast<size_t>(batch->indices[r]), &want);
      detection::Apply(detection::Geometry::VerticalFlip(), &want);
      detection::Apply(detection::Geometry::Pad(3, 5, 7, 9), &want);
      detection::Apply(detection::Geometry::Resize(40, 44), &want);
      const int64_t begin = t.offsets[r], count = t.offsets[r + 1] - begin;
      ASSERT_EQ(count, want.size());
      for (int64_t k = 0; k < 4 * count; ++k) {
        EXPECT_NEAR(t.boxes[4 * begin + k], want.boxes[k], 1e-4);
      }
      EXPECT_TRUE(std::equal(want.masks.begin(), want.masks.end(),
                             t.masks.begin() + begin * 40 * 44));
    }
  }
  EXPECT_EQ(rows, 12);
}

// ExpectSaneAndSame checks a detection recipe's batches: the same targets from 1 and 4
// workers, every box sanitized inside the side × side canvas, each mask inside its box.
template <typename Batches>
void ExpectSaneAndSame(const Batches& a, const Batches& b, int side, int64_t* instances) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const BatchTargets& t = a[i]->targets;
    EXPECT_EQ(t.boxes, b[i]->targets.boxes);
    EXPECT_EQ(t.masks, b[i]->targets.masks);
    EXPECT_EQ(t.labels, b[i]->targets.labels);
    EXPECT_EQ(t.mask_height, side);
    const int64_t total = t.offsets.back();
    *instances += total;
    for (int64_t k = 0; k < total; ++k) {
      const float* box = &t.boxes[4 * k];
      EXPECT_GE(box[0], 0);
      EXPECT_GE(box[1], 0);
      EXPECT_LE(box[2], side);
      EXPECT_LE(box[3], side);
      EXPECT_GE(box[2] - box[0], 1);
      EXPECT_GE(box[3] - box[1], 1);
      const detection::Rle rle =
          detection::RleFromMask(t.masks.data() + k * side * side, side, side);
      double m[4];
      detection::RleBox(rle, m);
      if (m[2] == 0) continue;
      EXPECT_GE(m[0], std::floor(box[0]) - 2);
      EXPECT_GE(m[1], std::floor(box[1]) - 2);
      EXPECT_LE(m[0] + m[2], std::ceil(box[2]) + 2);
      EXPECT_LE(m[1] + m[3], std::ceil(box[3]) + 2);
    }
  }
}

// Keypoints (make-dataset --keypoints: 3 per shape) ride through the head and the ops
// after it as the geometry functions say, batch flat as [total, P, 3], and sanitize drops
// them with their boxes.
TEST_F(DetectionPipelineTest, KeypointsMoveWithTheBoxesAndBatchFlat) {
  const std::string root = *root_ + "_keypoints";
  ASSERT_TRUE(testing::MakeKeypointDataset(root, 12, 9).ok());
  auto with_keypoints = [&root](const std::string& ops, bool sanitize) {
    PipelineOptions o = Options(ops, sanitize);
    o.data = root + "/images";
    o.annotations = root + "/annotations/instances.json";
    return o;
  };
  detection::CocoOptions c;
  c.annotations = root + "/annotations/instances.json";
  c.images = root + "/images";
  const auto coco = std::move(detection::CocoDataset::Open(c).value());
  ASSERT_EQ(coco->NumKeypoints(), 3);
  int64_t rows = 0;
  for (const auto& batch : Run(with_keypoints(
           "resize(size=64); center_crop(size=48); random_horizontal_flip(p=1); "
           "random_rotation(degrees=[30, 30], expand=true); resize(size=[40, 44])",
           false))) {
    const BatchTargets& t = batch->targets;
    ASSERT_TRUE(t.has_keypoints);
    ASSERT_EQ(t.num_keypoints, 3);
    ASSERT_EQ(t.keypoints.size(), static_cast<size_t>(t.offsets.back()) * 9);
    for (int64_t r = 0; r < batch->size(); ++r, ++rows) {
      detection::Targets want;
      coco->MakeTargets(static_cast<size_t>(batch->indices[r]), &want);
      int rw = 0, rh = 0;
      ResizedSize(want.canvas_width, want.canvas_height, 64, &rw, &rh);
      detection::Apply(detection::Geometry::Resize(rh, rw), &want);
      detection::Apply(detection::Geometry::CenterCrop(48, 48), &want);
      detection::Apply(detection::Geometry::HorizontalFlip(), &want);
      // Rotation by 30° about the centre; with expand v2 shifts the points by the rotated
      // canvas's half extent e, on the canvas PIL grows to 66 × 66.
      const double a = -30 * 3.14159265358979323846 / 180, ca = std::cos(a), sa = std::sin(a);
      const double e = 24 * (std::fabs(ca) + std::fabs(sa));
      for (size_t i = 0; i < want.keypoints.size(); i += 3) {
        const double x = want.keypoints[i] - 24, y = want.keypoints[i + 1] - 24;
        want.keypoints[i] = static_cast<float>(ca * x - sa * y + e);
        want.keypoints[i + 1] = static_cast<float>(sa * x + ca * y + e);
      }
      want.canvas_width = want.canvas_height = 66;
      detection::ApplyToKeypoints(detection::Geometry::Resize(40, 44), 66, 66,
                                  want.keypoints.data(), want.size() * 3, 3);
      const int64_t begin = t.offsets[r], count = t.offsets[r + 1] - begin;
      ASSERT_EQ(count, want.size());
      for (int64_t k = 0; k < 9 * count; ++k) {
        EXPECT_NEAR(t.keypoints[9 * begin + k], want.keypoints[k], 2e-3) << k;
      }
    }
  }
  EXPECT_EQ(rows, 12);
  // Random crops and sanitize: keypoints stay aligned with the kept boxes, the same for
  // any num_workers.
  const std::string ops = "random_resized_crop(size=48, scale=[0.1, 0.5]); normalize()";
  PipelineOptions one = with_keypoints(ops, /*sanitize=*/true);
  one.num_workers = 1;
  const auto x = Run(one), y = Run(with_keypoints(ops, /*sanitize=*/true));
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i]->targets.keypoints.size(), static_cast<size_t>(x[i]->targets.offsets.back()) * 9);
    EXPECT_EQ(x[i]->targets.keypoints, y[i]->targets.keypoints);
  }
}

// keypoint_flip reorders each instance's points as the flip mirrors them (references'
// flip_inds), in the op-by-op path and after random_resized_crop (whose fused head must
// then leave the flip to the op); a list that is not a permutation is refused at Create.
TEST_F(DetectionPipelineTest, KeypointFlipSwapsEachInstancesPoints) {
  const std::string root = *root_ + "_keypoint_flip";
  ASSERT_TRUE(testing::MakeKeypointDataset(root, 8, 5).ok());
  auto options = [&root](const std::string& ops) {
    PipelineOptions o = Options(ops);
    o.data = root + "/images";
    o.annotations = root + "/annotations/instances.json";
    return o;
  };
  const int perm[3] = {2, 0, 1};
  for (const std::string head : {"resize(size=[40, 44])", "random_resized_crop(size=40)"}) {
    const auto plain = Run(options(head + "; random_horizontal_flip(p=1)"));
    const auto swapped =
        Run(options(head + "; random_horizontal_flip(p=1, keypoint_flip=[2, 0, 1])"));
    ASSERT_EQ(plain.size(), swapped.size());
    ASSERT_FALSE(plain.empty());
    for (size_t b = 0; b < plain.size(); ++b) {
      const BatchTargets& p = plain[b]->targets;
      const BatchTargets& q = swapped[b]->targets;
      ASSERT_TRUE(p.has_keypoints && q.has_keypoints);
      ASSERT_EQ(p.boxes, q.boxes) << head;
      ASSERT_EQ(p.keypoints.size(), q.keypoints.size());
      for (size_t k = 0; k < p.keypoints.size() / 9; ++k) {
        for (int i = 0; i < 3; ++i) {
          for (int c = 0; c < 3; ++c) {
            EXPECT_EQ(q.keypoints[9 * k + 3 * i + c], p.keypoints[9 * k + 3 * perm[i] + c])
                << head << " instance " << k << " point " << i;
          }
        }
      }
    }
  }
  for (const std::string flip : {"[0, 0, 1]", "[1, 2, 3]", "[0.5, 1]", "left"}) {
    auto p = Pipeline::Create(options("random_horizontal_flip(keypoint_flip=" + flip + ")"));
    ASSERT_FALSE(p.ok()) << flip;
    EXPECT_NE(p.status().message().find("(random_horizontal_flip): keypoint_flip must be"),
              std::string::npos)
        << p.status();
    EXPECT_EQ(p.status().message().find('\n'), std::string::npos);
  }
  // coco_person is COCO's 17 points: on 3 points per instance each sample is refused,
  // counted and named.
  const auto coco = Run(options("resize(size=[40, 44]); "
                                "random_horizontal_flip(p=1, keypoint_flip=coco_person)"));
  int64_t skipped = 0;
  for (const auto& b : coco) {
    for (const SkippedSample& s : b->skipped) {
      ++skipped;
      EXPECT_NE(s.message.find("keypoint_flip lists 17 points"), std::string::npos) << s.message;
    }
  }
  EXPECT_EQ(skipped, 8);
}

TEST_F(DetectionPipelineTest, SsdJitterAndAffineRecipesRunAndAreDeterministic) {
  const std::string recipes[] = {
      "random_photometric_distort(); random_zoom_out(fill=[123, 117, 104]); "
      "random_iou_crop(); random_horizontal_flip(); resize(size=[48, 48]); normalize()",
      "scale_jitter(target_size=48); random_horizontal_flip(); fixed_size_crop(size=48); "
      "normalize()",
      // Affine and rotation (with expand, then a fixed size) move boxes and masks too.
      "random_affine(degrees=20, translate=[0.1, 0.1], scale=[0.8, 1.2], shear=5); "
      "random_rotation(degrees=15, expand=true); random_horizontal_flip(); "
      "resize(size=[48, 48]); normalize()",
      // Ops over sub-lists move them through the sub-ops they run.
      "random_choice(transforms=[random_zoom_out(); random_horizontal_flip(p=1); "
      "color_jitter(brightness=0.3)]); random_order(transforms=[random_horizontal_flip(); "
      "random_vertical_flip(); random_affine(degrees=10)]); "
      "compose(transforms=[random_crop(size=40, pad_if_needed=true); random_invert()], p=0.5); "
      "resize(size=[48, 48]); normalize()"};
  for (const std::string& ops : recipes) {
    PipelineOptions one = Options(ops, /*sanitize=*/true);
    one.num_workers = 1;
    int64_t instances = 0;
    ExpectSaneAndSame(Run(one), Run(Options(ops, /*sanitize=*/true)), 48, &instances);
    EXPECT_GT(instances, 0) << ops;
  }
}

TEST_F(DetectionPipelineTest, RefusesOpsAndStagesThatCannotMoveTheTargets) {
  struct Case {
    std::vector<StageSpec> stages;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "random_resized_crop(size=32); "
                                             "trivial_augment_wide(); normalize()"}}}},
       "op 2 (trivial_augment_wide) cannot move the boxes"},
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "random_resized_crop(size=32); "
                                             "random_choice(transforms=[random_invert(); "
                                             "random_perspective()]); normalize()"}}}},
       "op 2 (random_choice holding random_perspective) cannot move the boxes"},
      // The first op of a list without a head is checked too (it ran, leaving the boxes
      // where they were while the pixels moved).
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "trivial_augment_wide(); "
                                             "fixed_size_crop(size=32); normalize()"}}}},
       "op 1 (trivial_augment_wide) cannot move the boxes"},
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "random_order(transforms=[random_perspective(); "
                                             "random_invert()]); fixed_size_crop(size=32); "
                                             "normalize()"}}}},
       "op 1 (random_order holding random_perspective) cannot move the boxes"},
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "scale_jitter(target_size=64); normalize()"}}}},
       "fixed_size_crop"},
      {{StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"}, StageSpec{"augment"}},
       "augment cannot move the boxes"},
      {{StageSpec{"read"}, StageSpec{"decode"},
        StageSpec{"transforms", "", {{"ops", "random_resized_crop(size=32)"}}},
        StageSpec{"sanitize_bounding_boxes"}},
       "boxes"},
  };
  for (const Case& c : cases) {
    PipelineOptions o = Options("normalize()");
    o.stages = c.stages;
    auto pipeline = Pipeline::Create(o);
    ASSERT_FALSE(pipeline.ok()) << c.says;
    EXPECT_TRUE(absl::StrContains(pipeline.status().message(), c.says)) << pipeline.status();
  }
  // Without an annotations file the annotations stage says what to give.
  PipelineOptions plain = Options("random_resized_crop(size=32)");
  plain.annotations.clear();
  plain.data = *root_;  // Not an ImageFolder either way: refused before the stage.
  EXPECT_FALSE(Pipeline::Create(plain).ok());
}

TEST_F(DetectionPipelineTest, SkipsAnImageWhoseSizeIsNotItsAnnotations) {
  const std::string json = *root_ + "/annotations/instances.json";
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Image 1000's width, whatever it is, becomes 65535.
  const size_t at = text.find("\"width\":", text.find("\"file_name\":\"img_00000.jpg\""));
  ASSERT_NE(at, std::string::npos);
  const size_t end = text.find_first_of(",}", at);
  text.replace(at, end - at, "\"width\":65535");
  const std::string bad = *root_ + "/annotations/wrong_size.json";
  std::ofstream(bad) << text;
  PipelineOptions o = Options("random_resized_crop(size=32)");
  o.annotations = bad;
  const auto batches = Run(o);
  int64_t rows = 0;
  std::map<std::string, int> reasons;
  for (const auto& batch : batches) {
    rows += batch->size();
    for (const SkippedSample& s : batch->skipped) ++reasons[s.reason];
  }
  EXPECT_EQ(rows, 11);
  EXPECT_EQ(reasons["size_mismatch"], 1);
}

}  // namespace
}  // namespace flowloader
