// segmentation_pipeline_test: semantic segmentation through a real pipeline: images and
// PNG label maps paired by key (two directories, or a list file), the label_map stage
// writes the map, and every geometric op of the transforms list moves it with the pixels
// by nearest neighbour (ignore_index where an op uncovers it). The images here are
// lossless PNGs whose every pixel is its label's colour, so with nearest interpolation
// the output image, read back through the colour table, must equal the batch's mask at
// every pixel: the map moved exactly as the image did. (Every crop here is less than
// twice its output, so the decoder keeps every pixel: for larger shrinks it may average
// PNG blocks or DCT-scale a JPEG, which blends image pixels, never the map's.) Bad pairs
// are skipped and counted.
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/pipeline.h"
#include "runtime/segmentation_dataset.h"
#include "stages/core/rng.h"
#include "stages/decode/encoder.h"
#include "tests/testing/pipeline_helpers.h"

namespace flowloader {
namespace {

// Colour is label c's colour in the test images (distinct for every c, never black).
void Colour(int c, uint8_t rgb[3]) {
  rgb[0] = static_cast<uint8_t>(c * 37 % 251 + 1);
  rgb[1] = static_cast<uint8_t>(c * 91 % 241 + 3);
  rgb[2] = static_cast<uint8_t>(c * 13 % 239 + 7);
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// WritePair writes IMAGES/name.png (each pixel its label's colour) and MAPS/name.png
// (gray labels in 0..20, changing at every pixel), w × h; the map is map_w × map_h.
void WritePair(const std::string& root, const std::string& name, int w, int h, int map_w,
               int map_h, uint64_t seed) {
  SampleRng rng(seed, 0, 0, 5);
  Image labels, image;
  labels.Resize(map_w, map_h, 1);
  for (uint8_t& v : labels.pixels) v = static_cast<uint8_t>(rng.UniformInt(0, 21));
  image.Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int c = x < map_w && y < map_h ? labels.pixels[y * map_w + x] : 0;
      Colour(c, &image.pixels[3 * (static_cast<size_t>(y) * w + x)]);
    }
  }
  Write(root + "/images/" + name + ".png", decode::EncodePng(image.view()).value());
  Write(root + "/maps/" + name + ".png", decode::EncodePng(labels.view()).value());
}

class SegmentationPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = new std::string(std::string(tmp != nullptr ? tmp : "/tmp") + "/segmentation");
    for (const std::string& d : {*root_, *root_ + "/images", *root_ + "/maps"}) {
      ::mkdir(d.c_str(), 0755);
    }
    for (int i = 0; i < 10; ++i) {
      WritePair(*root_, absl::StrCat("p", i), 40 + 7 * i, 60 - 3 * i, 40 + 7 * i, 60 - 3 * i,
                static_cast<uint64_t>(i));
    }
  }

  static PipelineOptions Options(const std::string& ops) {
    PipelineOptions o = testing::SmallCpuOptions(*root_ + "/images", 4, nullptr);
    o.label_maps = *root_ + "/maps";
    o.shuffle = false;
    o.epochs = 1;
    o.stages = {StageSpec{"read"}, StageSpec{"label_map"}, StageSpec{"decode"},
                StageSpec{"transforms", "", {{"ops", ops}}}};
    return o;
  }

  // CheckMasksFollowImages runs `ops` (uint8 output, nearest interpolation) and checks
  // every output pixel: its colour is its mask's label's, or black where the mask is
  // ignore_index (the ops' padding). Returns the rows seen.
  static int64_t CheckMasksFollowImages(const std::string& ops, int side, int* ignored) {
    auto pipeline = Pipeline::Create(Options(ops));
    EXPECT_TRUE(pipeline.ok()) << pipeline.status();
    if (!pipeline.ok()) return 0;
    std::map<uint32_t, int> label_of;
    for (int c = 0; c < 21; ++c) {
      uint8_t rgb[3];
      Colour(c, rgb);
      label_of[rgb[0] << 16 | rgb[1] << 8 | rgb[2]] = c;
    }
    int64_t rows = 0;
    absl::Status s = testing::EachBatch(**pipeline, [](int) {}, [&](const Batch& batch) {
      const BatchTargets& t = batch.targets;
      ASSERT_TRUE(t.present && t.has_semantic);
      ASSERT_EQ(t.mask_height, side);
      ASSERT_EQ(t.mask_width, side);
      ASSERT_EQ(t.semantic.size(), static_cast<size_t>(batch.size()) * side * side);
      const uint8_t* pixels = static_cast<const uint8_t*>(batch.host_data());
      for (int64_t r = 0; r < batch.size(); ++r, ++rows) {
        for (int p = 0; p < side * side; ++p) {
          const uint8_t* px = pixels + 3 * (r * side * side + p);
          const int64_t mask = t.semantic[r * side * side + p];  // int64, widened.
          if (mask == 255) {
            ++*ignored;
            ASSERT_EQ(px[0] | px[1] | px[2], 0) << "row " << r << " pixel " << p;
            continue;
          }
          auto it = label_of.find(px[0] << 16 | px[1] << 8 | px[2]);
          ASSERT_NE(it, label_of.end()) << "row " << r << " pixel " << p << " blended";
          ASSERT_EQ(it->second, mask) << "row " << r << " pixel " << p;
        }
      }
    });
    EXPECT_TRUE(s.ok()) << s;
    return rows;
  }

  static std::string* root_;
};

std::string* SegmentationPipelineTest::root_ = nullptr;

TEST_F(SegmentationPipelineTest, TheHeadAndEveryLaterOpMoveTheMapWithThePixels) {
  int ignored = 0;
  EXPECT_EQ(CheckMasksFollowImages(
                "random_resized_crop(size=56, interpolation=nearest); random_horizontal_flip(); "
                "random_vertical_flip(); random_crop(size=50, padding=3); "
                "pad(padding=[1, 2, 1, 0]); center_crop(size=48)",
                48, &ignored),
            10);
  EXPECT_GT(ignored, 0);  // random_crop's padding showed somewhere, as ignore_index.
}

TEST_F(SegmentationPipelineTest, TheEvalHeadMovesTheMap) {
  int ignored = 0;
  EXPECT_EQ(CheckMasksFollowImages(
                "resize(size=40, interpolation=nearest); center_crop(size=36)", 36, &ignored),
            10);
  EXPECT_EQ(ignored, 0);
}

TEST_F(SegmentationPipelineTest, ColourOpsLeaveTheMapAndNormalizeMakesFloatImages) {
  PipelineOptions o = Options(
      "random_resized_crop(size=16); random_horizontal_flip(); color_jitter(brightness=0.4, "
      "contrast=0.4, saturation=0.4); normalize()");
  testing::Delivered d = testing::RunAll(o);
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.keys.size(), 10u);
}

TEST_F(SegmentationPipelineTest, AffineAndRotationMoveTheMap) {
  PipelineOptions o = Options(
      "random_affine(degrees=20, translate=[0.1, 0.1], scale=[0.8, 1.2], shear=5); "
      "random_rotation(degrees=30, expand=true); resize(size=[16, 16]); normalize()");
  testing::Delivered d = testing::RunAll(o);
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.keys.size(), 10u);
}

TEST_F(SegmentationPipelineTest, AnOpThatCannotMoveTheMapIsRefusedInOneLine) {
  // After a head, and as the first op of a list without one (which was not checked).
  for (const char* ops : {"random_resized_crop(size=16); trivial_augment_wide()",
                          "trivial_augment_wide(); resize(size=[16, 16])"}) {
    auto pipeline = Pipeline::Create(Options(ops));
    ASSERT_FALSE(pipeline.ok()) << ops;
    EXPECT_TRUE(absl::StrContains(pipeline.status().message(), "trivial_augment_wide"))
        << pipeline.status();
    EXPECT_TRUE(absl::StrContains(pipeline.status().message(), "label map"))
        << pipeline.status();
    EXPECT_EQ(pipeline.status().message().find('\n'), std::string::npos);
  }
}

TEST_F(SegmentationPipelineTest, MismatchedAndMissingMapsAreSkippedAndCounted) {
  const std::string root = *root_ + "_bad";
  for (const std::string& d : {root, root + "/images", root + "/maps"}) ::mkdir(d.c_str(), 0755);
  WritePair(root, "good", 30, 30, 30, 30, 1);
  WritePair(root, "small_map", 30, 30, 29, 30, 2);
  WritePair(root, "no_map", 30, 30, 30, 30, 3);
  std::remove((root + "/maps/no_map.png").c_str());
  PipelineOptions o = Options("random_resized_crop(size=16)");
  o.data = root + "/images";
  o.label_maps = root + "/maps";
  testing::Delivered d = testing::RunAll(o);
  ASSERT_TRUE(d.status.ok()) << d.status;
  EXPECT_EQ(d.keys.size(), 1u);
  EXPECT_EQ(d.skipped["size_mismatch"], 1);
  EXPECT_EQ(d.skipped["missing_label"], 1);
}

TEST_F(SegmentationPipelineTest, MakeDatasetsListFileGivesItsLabels) {
  SegmentationDatasetOptions g;
  g.root = *root_ + "_made";
  g.images = 6;
  g.min_side = 64;
  g.max_side = 80;
  ASSERT_TRUE(GenerateSegmentationDataset(g).ok());
  PipelineOptions o = testing::SmallCpuOptions("", 3, nullptr);
  o.label_maps = g.root + "/train.txt";
  o.shuffle = false;
  o.epochs = 1;
  auto pipeline = Pipeline::Create(o);  // The default segmentation stages.
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  std::map<int64_t, int64_t> seen;
  int64_t rows = 0;
  absl::Status s = testing::EachBatch(**pipeline, [](int) {}, [&](const Batch& batch) {
    ASSERT_TRUE(batch.targets.has_semantic);
    rows += batch.size();
    for (int64_t v : batch.targets.semantic) ++seen[v];  // int64 class indices.
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(rows, 6);
  for (const auto& [label, count] : seen) {
    EXPECT_TRUE(label < kSegmentationClasses || label == 255) << label;
  }
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen.size(), 2u);  // Background, void and at least one shape class.
}

}  // namespace
}  // namespace flowloader
