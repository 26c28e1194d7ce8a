// detection_dataset_test: make-dataset --task=detection writes JPEGs and a COCO file that
// the COCO reader reads back with exact boxes, areas and masks in all three forms.
#include "runtime/detection_dataset.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "stages/detection/coco.h"
#include "stages/detection/rle.h"

namespace flowloader {
namespace {

std::string TempRoot(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(DetectionDatasetTest, AnnotationsAreExactInEveryForm) {
  DetectionDatasetOptions o;
  o.root = TempRoot("det");
  o.images = 20;
  o.min_side = 64;
  o.max_side = 96;
  o.max_instances = 9;
  ASSERT_TRUE(GenerateDetectionDataset(o).ok());
  ASSERT_TRUE(GenerateDetectionDataset(o).ok());  // Same options: left as is.

  detection::CocoOptions c;
  c.annotations = o.root + "/annotations/instances.json";
  c.images = o.root + "/images";
  auto coco = detection::CocoDataset::Open(c);
  ASSERT_TRUE(coco.ok()) << coco.status();
  const auto& d = **coco;
  ASSERT_EQ(d.images().size(), 20u);
  EXPECT_TRUE(d.skipped().empty());
  ASSERT_EQ(d.categories().size(), 4u);
  EXPECT_EQ(d.categories()[3].id, 12);
  EXPECT_EQ(d.categories()[3].label, 4);
  int polygons = 0, strings_or_lists = 0, crowds = 0, empty = 0;
  detection::Targets t;
  for (size_t i = 0; i < d.images().size(); ++i) {
    const detection::CocoImage& image = d.images()[i];
    struct stat st;
    EXPECT_EQ(::stat(d.FullPath(image).c_str(), &st), 0) << d.FullPath(image);
    d.MakeTargets(i, &t);
    if (t.size() == 0) ++empty;
    for (int64_t k = 0; k < t.size(); ++k) {
      const detection::CocoInstance& instance = image.instances[k];
      polygons += !instance.polygons.empty();
      strings_or_lists += instance.has_rle;
      crowds += instance.iscrowd != 0;
      const detection::Rle rle = detection::RleFromMask(t.masks.data() + k * t.mask_plane(),
                                                        image.height, image.width);
      double box[4];
      detection::RleBox(rle, box);
      EXPECT_EQ(t.boxes[4 * k], box[0]);
      EXPECT_EQ(t.boxes[4 * k + 1], box[1]);
      EXPECT_EQ(t.boxes[4 * k + 2], box[0] + box[2]);
      EXPECT_EQ(t.boxes[4 * k + 3], box[1] + box[3]);
      EXPECT_EQ(t.area[k], static_cast<float>(detection::RleArea(rle)));
      EXPECT_GT(t.area[k], 0);
    }
  }
  EXPECT_EQ(empty, 2);  // Every tenth image.
  EXPECT_GT(polygons, 0);
  EXPECT_GT(crowds, 0);                 // Uncompressed lists.
  EXPECT_GT(strings_or_lists, crowds);  // And compressed strings.
}

TEST(DetectionDatasetTest, RefusesANonEmptyRootWithoutOverwrite) {
  DetectionDatasetOptions o;
  o.root = TempRoot("det_other");
  ASSERT_EQ(::mkdir(o.root.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((o.root + "/keep").c_str(), 0755), 0);
  o.images = 1;
  absl::Status s = GenerateDetectionDataset(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("--overwrite"), std::string::npos);
}

}  // namespace
}  // namespace flowloader
