// padded_batch_test: images of different sizes in one batch (size_divisibility, issue
// 33). An op list whose output size depends on the image but has an upper bound (resize
// with max_size, as torchvision's GeneralizedRCNNTransform; scale_jitter) runs in a real
// detection pipeline: each batch tensor is [N, C, Hb, Wb] with Hb, Wb the batch's largest
// sides rounded up, each row holds its image at the top left exactly as the per-sample
// path (batch_size 1, nothing padded) makes it, zeros elsewhere, and its targets
// (boxes, labels, masks at the image's own size) are the per-sample path's. The memory
// plan counts slots of the bound; a list without a bound, a bounded list without
// size_divisibility, and a batch op with it are refused in one line.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include "tests/testing/pipeline_helpers.h"

namespace flowloader {
namespace {

// Row is what a test keeps of one batch row.
struct Row {
  int64_t index = 0;
  int64_t height = 0, width = 0;  // Its image size (Batch::image_sizes).
  std::vector<uint8_t> image;     // The image's own region, compact.
  bool padding_zero = true;       // Every byte of the row outside the image is 0.
  std::vector<float> boxes;
  std::vector<int64_t> labels;
  std::vector<uint8_t> masks;     // K × height × width.
};

struct Shape {
  std::vector<int64_t> dims;
};

class PaddedBatchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = new std::string(std::string(tmp != nullptr ? tmp : "/tmp") + "/padded");
    DetectionDatasetOptions o;
    o.root = *root_;
    o.images = 10;
    o.min_side = 64;  // Portrait and landscape images of different sizes.
    o.max_side = 120;
    o.max_instances = 5;
    ASSERT_TRUE(GenerateDetectionDataset(o).ok());
  }

  static PipelineOptions Options(const std::string& ops, int batch, int divisibility) {
    PipelineOptions o = testing::SmallCpuOptions(*root_ + "/images", batch, nullptr);
    o.annotations = *root_ + "/annotations/instances.json";
    o.shuffle = false;
    o.epochs = 1;
    o.size_divisibility = divisibility;
    o.stages = {StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", ops}}}};
    return o;
  }

  // Rows runs the pipeline and keeps every row; `shapes` gets each batch tensor's shape.
  static std::vector<Row> Rows(const PipelineOptions& o, std::vector<Shape>* shapes) {
    std::vector<Row> rows;
    auto pipeline = Pipeline::Create(o);
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    if (!pipeline.ok()) return rows;
    for (;;) {
      std::shared_ptr<const Batch> batch;
      bool end = false;
      absl::Status s = (*pipeline)->Next(&batch, &end);
      EXPECT_TRUE(s.ok()) << s;
      if (!s.ok()) break;
      if (batch != nullptr && batch->size() > 0) Keep(*batch, &rows, shapes);
      if (end) break;
    }
    return rows;
  }

  static void Keep(const Batch& batch, std::vector<Row>* rows, std::vector<Shape>* shapes) {
    const BatchTensor& t = batch.tensors.at(0);
    shapes->push_back(Shape{t.shape});
    EXPECT_EQ(batch.image_sizes.size(), 2 * static_cast<size_t>(batch.size()));
    const bool chw = t.dtype == DType::kFloat32;
    const size_t e = DTypeBytes(t.dtype);
    const int64_t c = chw ? t.shape[1] : t.shape[3];
    const int64_t hb = chw ? t.shape[2] : t.shape[1], wb = chw ? t.shape[3] : t.shape[2];
    const size_t row_bytes = static_cast<size_t>(c * hb * wb) * e;
    const BatchTargets& targets = batch.targets;
    size_t mask_at = 0;
    for (int64_t r = 0; r < batch.size(); ++r) {
      Row row;
      row.index = batch.indices[r];
      row.height = batch.image_sizes[2 * r];
      row.width = batch.image_sizes[2 * r + 1];
      const auto* base = static_cast<const uint8_t*>(t.host_data) + r * row_bytes;
      // Walk the row element by element: inside the image → kept, else must be 0.
      for (int64_t a = 0; a < (chw ? c : hb); ++a) {
        for (int64_t b = 0; b < (chw ? hb : wb); ++b) {
          for (int64_t d = 0; d < (chw ? wb : c); ++d) {
            const int64_t y = chw ? b : a, x = chw ? d : b;
            const uint8_t* at = base + static_cast<size_t>((a * (chw ? hb : wb) + b) *
                                                               (chw ? wb : c) + d) * e;
            if (y < row.height && x < row.width) {
              row.image.insert(row.image.end(), at, at + e);
            } else {
              for (size_t k = 0; k < e; ++k) row.padding_zero &= at[k] == 0;
            }
          }
        }
      }
      const int64_t begin = targets.offsets[r], end = targets.offsets[r + 1];
      row.boxes.assign(targets.boxes.begin() + 4 * begin, targets.boxes.begin() + 4 * end);
      row.labels.assign(targets.labels.begin() + begin, targets.labels.begin() + end);
      if (targets.has_masks) {
        EXPECT_EQ(static_cast<size_t>(targets.mask_offsets[r]), mask_at) << "row " << r;
        const size_t bytes = static_cast<size_t>((end - begin) * row.height * row.width);
        row.masks.assign(targets.masks.begin() + mask_at, targets.masks.begin() + mask_at + bytes);
        mask_at += bytes;
      }
      rows->push_back(std::move(row));
    }
    if (targets.has_masks) {
      EXPECT_EQ(mask_at, targets.masks.size());
    }
  }

  // ExpectSameAsPerSample runs `ops` padded in batches of 4 and one sample per batch
  // (nothing padded: size_divisibility 0 on one row is the row's own size), and checks
  // every padded row against its per-sample twin.
  static void ExpectSameAsPerSample(const std::string& ops, int divisibility,
                                    int64_t bound_side) {
    std::vector<Shape> shapes, single_shapes;
    const std::vector<Row> rows = Rows(Options(ops, 4, divisibility), &shapes);
    const std::vector<Row> single = Rows(Options(ops, 1, 0), &single_shapes);
    ASSERT_EQ(rows.size(), single.size());
    ASSERT_FALSE(rows.empty());
    std::map<std::pair<int64_t, int64_t>, int> sizes_seen;
    size_t at = 0;
    for (const Shape& shape : shapes) {
      const bool chw = shape.dims.size() == 4 && shape.dims[1] == 3;
      const int64_t hb = chw ? shape.dims[2] : shape.dims[1];
      const int64_t wb = chw ? shape.dims[3] : shape.dims[2];
      int64_t max_h = 0, max_w = 0;
      for (int64_t r = 0; r < shape.dims[0]; ++r, ++at) {
        max_h = std::max(max_h, rows[at].height);
        max_w = std::max(max_w, rows[at].width);
      }
      const int64_t d = std::max(divisibility, 1);
      EXPECT_EQ(hb, (max_h + d - 1) / d * d) << ops;
      EXPECT_EQ(wb, (max_w + d - 1) / d * d) << ops;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& got = rows[i];
      const Row& want = single[i];
      ASSERT_EQ(got.index, want.index);
      EXPECT_EQ(got.height, want.height) << "row " << i;
      EXPECT_EQ(got.width, want.width) << "row " << i;
      EXPECT_LE(std::max(got.height, got.width), bound_side) << "row " << i;
      EXPECT_TRUE(got.image == want.image) << "row " << i << ": pixels differ";
      EXPECT_TRUE(got.padding_zero) << "row " << i;
      EXPECT_TRUE(want.padding_zero) << "row " << i;
      EXPECT_EQ(got.boxes, want.boxes) << "row " << i;
      EXPECT_EQ(got.labels, want.labels) << "row " << i;
      EXPECT_TRUE(got.masks == want.masks) << "row " << i;
      ++sizes_seen[{got.height, got.width}];
    }
    EXPECT_GE(sizes_seen.size(), 3u) << ops << ": the images should differ in size";
  }

  static std::string* root_;
};

std::string* PaddedBatchTest::root_ = nullptr;

TEST_F(PaddedBatchTest, ResizeWithMaxSizePadsEachRowAsThePerSamplePathMakesIt) {
  // GeneralizedRCNNTransform's resize (shorter side 48, longer at most 80), then
  // normalize: float [N, 3, Hb, Wb], Hb and Wb rounded up to 32.
  ExpectSameAsPerSample("resize(size=48, max_size=80); random_horizontal_flip(); normalize()",
                        32, 80);
}

TEST_F(PaddedBatchTest, UnroundedUint8RowsArePaddedToTheBatchMax) {
  ExpectSameAsPerSample("resize(size=40, max_size=70)", 0, 70);
}

TEST_F(PaddedBatchTest, ScaleJitterRowsKeepTheirMasksAtTheirOwnSize) {
  ExpectSameAsPerSample(
      "scale_jitter(target_size=[64, 64], scale_range=[0.5, 1.5]); "
      "random_horizontal_flip(); normalize()",
      16, 97);
}

TEST_F(PaddedBatchTest, TorchvisionSizesFromTheAnnotations) {
  // Each row's size is torchvision's Resize(48, max_size=80) of its image's size.
  detection::CocoOptions c;
  c.annotations = *root_ + "/annotations/instances.json";
  c.images = *root_ + "/images";
  auto coco = detection::CocoDataset::Open(c);
  ASSERT_TRUE(coco.ok()) << coco.status();
  std::vector<Shape> shapes;
  const std::vector<Row> rows = Rows(Options("resize(size=48, max_size=80)", 4, 32), &shapes);
  ASSERT_FALSE(rows.empty());
  for (const Row& row : rows) {
    const auto& image = (*coco)->images().at(static_cast<size_t>(row.index));
    const int s = std::min(image.width, image.height), l = std::max(image.width, image.height);
    int new_short = 48, new_long = static_cast<int>(48.0 * l / s);
    if (new_long > 80) {
      new_short = static_cast<int>(80.0 * new_short / new_long);
      new_long = 80;
    }
    EXPECT_EQ(row.width, image.width <= image.height ? new_short : new_long);
    EXPECT_EQ(row.height, image.width <= image.height ? new_long : new_short);
  }
}

TEST_F(PaddedBatchTest, MemoryPlanCountsSlotsOfTheRoundedBound) {
  // resize(40, max_size=60) → at most 60 × 60, rounded up to 64: the batch pool of a
  // fixed 64 × 64 list.
  absl::StatusOr<MemoryPlan> padded =
      Pipeline::PlanMemory(Options("resize(size=40, max_size=60); normalize()", 4, 16));
  ASSERT_TRUE(padded.ok()) << padded.status();
  absl::StatusOr<MemoryPlan> fixed =
      Pipeline::PlanMemory(Options("resize(size=[64, 64]); normalize()", 4, -1));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  auto pool = [](const MemoryPlan& plan) {
    for (const MemoryPart& part : plan.parts()) {
      if (part.key == "batch_pool") return part.bytes;
    }
    return int64_t{-1};
  };
  EXPECT_GT(pool(*fixed), 0);
  EXPECT_EQ(pool(*padded), pool(*fixed));
}

TEST_F(PaddedBatchTest, RefusesAListWithoutABoundNamingMaxSize) {
  for (const char* ops : {"resize(size=48); normalize()",
                          "random_horizontal_flip(); random_iou_crop(); normalize()"}) {
    auto made = Pipeline::Create(Options(ops, 4, 32));
    ASSERT_FALSE(made.ok()) << ops;
    const std::string message(made.status().message());
    EXPECT_TRUE(absl::StrContains(message, "no upper bound")) << message;
    EXPECT_TRUE(absl::StrContains(message, "max_size")) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The op that loses the bound is named.
  auto made = Pipeline::Create(Options("resize(size=48); normalize()", 4, 32));
  EXPECT_TRUE(absl::StrContains(made.status().message(), "op 1 (resize)")) << made.status();
}

TEST_F(PaddedBatchTest, RefusesABoundedListWithoutSizeDivisibility) {
  auto made = Pipeline::Create(Options("resize(size=48, max_size=80); normalize()", 4, -1));
  ASSERT_FALSE(made.ok());
  const std::string message(made.status().message());
  EXPECT_TRUE(absl::StrContains(message, "depends on the image")) << message;
  EXPECT_TRUE(absl::StrContains(message, "size_divisibility")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// The built-in graph's fixed image_size fills its batch slots exactly: a size_divisibility
// that does not divide it would pad each row past its slot into the next (a hostile CLI
// run, `--size_divisibility=3 --image_size=32`, ended in "double free or corruption").
TEST_F(PaddedBatchTest, RefusesAFixedSizeThatPaddingWouldOverrun) {
  const std::string list = *root_ + "/fixed_size.txt";
  {
    std::ofstream out(list);
    for (int i = 0; i < 10; ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "img_%05d.jpg", i);
      out << *root_ << "/images/" << name << "\t0\n";
    }
  }
  PipelineOptions o = testing::SmallCpuOptions(list, 4, nullptr);
  o.epochs = 1;
  o.image_size = 32;
  o.size_divisibility = 3;
  auto made = Pipeline::Create(o);
  ASSERT_FALSE(made.ok());
  const std::string message(made.status().message());
  EXPECT_TRUE(absl::StrContains(message, "size_divisibility 3 would pad the 32x32 images"))
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  // A size_divisibility that divides the size pads nothing, and runs.
  o.size_divisibility = 16;
  auto fits = Pipeline::Create(o);
  ASSERT_TRUE(fits.ok()) << fits.status();
  const testing::Drained drained = testing::Drain(fits->get());
  EXPECT_TRUE(drained.status.ok()) << drained.status;
  EXPECT_EQ(drained.samples + static_cast<int64_t>(drained.skipped.size()), 10);
}

TEST_F(PaddedBatchTest, RefusesBatchOpsOnPaddedRows) {
  PipelineOptions o = Options("resize(size=48, max_size=80); normalize()", 4, 32);
  o.batch_ops = {StageSpec{"mosaic"}};
  auto made = Pipeline::Create(o);
  ASSERT_FALSE(made.ok());
  const std::string message(made.status().message());
  EXPECT_TRUE(absl::StrContains(message, "size_divisibility")) << message;
  EXPECT_TRUE(absl::StrContains(message, "mosaic")) << message;
}

}  // namespace
}  // namespace flowloader
