// coco_test: the COCO instances reader on files the test writes: labels, boxes, masks
// from polygons and both RLE forms, and every kind of bad input counted or refused.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

#include "gtest/gtest.h"
#include "stages/detection/coco.h"
#include "stages/detection/rle.h"

namespace flowloader::detection {
namespace {

std::string WriteJson(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<std::unique_ptr<CocoDataset>> OpenText(const std::string& name,
                                                      const std::string& text,
                                                      CocoOptions options = {}) {
  options.annotations = WriteJson(name, text);
  options.images = "images";
  return CocoDataset::Open(options);
}

// Two images (4 × 3 and 8 × 6), categories 7 and 3 (labels 2 and 1).
const char kGood[] = R"({
  "images": [{"id": 10, "file_name": "a.jpg", "width": 4, "height": 3},
             {"id": 11, "file_name": "b.jpg", "width": 8, "height": 6},
             {"id": 12, "file_name": "c.jpg", "width": 8, "height": 6}],
  "categories": [{"id": 7, "name": "dog"}, {"id": 3, "name": "cat"}],
  "annotations": [
    {"id": 1, "image_id": 10, "category_id": 7, "bbox": [1, 0, 2, 2], "iscrowd": 0,
     "area": 4, "segmentation": [[1, 0, 3, 0, 3, 2, 1, 2]]},
    {"id": 2, "image_id": 11, "category_id": 3, "bbox": [0, 0, 8, 6], "iscrowd": 1,
     "area": 2, "segmentation": {"counts": [7, 2, 39], "size": [6, 8]}},
    {"id": 3, "image_id": 11, "category_id": 7, "bbox": [1, 0, 1, 6], "iscrowd": 0,
     "area": 6, "segmentation": {"counts": "66T1", "size": [6, 8]}}
  ]})";

TEST(CocoTest, ReadsBoxesLabelsAndMasks) {
  auto coco = OpenText("good.json", kGood);
  ASSERT_TRUE(coco.ok()) << coco.status();
  const CocoDataset& d = **coco;
  ASSERT_EQ(d.images().size(), 3u);
  ASSERT_EQ(d.categories().size(), 2u);
  EXPECT_EQ(d.categories()[0].id, 3);  // Sorted by id, from first_label 1.
  EXPECT_EQ(d.categories()[0].label, 1);
  EXPECT_EQ(d.categories()[1].name, "dog");
  EXPECT_EQ(d.FullPath(d.images()[1]), "images/b.jpg");
  EXPECT_EQ(d.MaxInstances(), 2);
  EXPECT_TRUE(d.skipped().empty());

  Targets t;
  d.MakeTargets(0, &t);
  EXPECT_EQ(t.image_id, 10);
  EXPECT_EQ(t.boxes, (std::vector<float>{1, 0, 3, 2}));  // xywh → xyxy.
  EXPECT_EQ(t.labels, (std::vector<int64_t>{2}));
  ASSERT_EQ(t.masks.size(), 12u);
  EXPECT_EQ(RleArea(RleFromMask(t.masks.data(), 3, 4)),
            RleArea(RleFromPolygon({1, 0, 3, 0, 3, 2, 1, 2}, 3, 4)));

  d.MakeTargets(1, &t);
  ASSERT_EQ(t.size(), 2);
  EXPECT_EQ(t.iscrowd, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(t.labels, (std::vector<int64_t>{1, 2}));
  // Uncompressed runs 7, 2, 39: column-major pixels 7 and 8 = (1, 1) and (1, 2).
  const uint8_t* m0 = t.masks.data();
  EXPECT_EQ(m0[1 * 8 + 1], 1);
  EXPECT_EQ(m0[2 * 8 + 1], 1);
  EXPECT_EQ(RleArea(RleFromMask(m0, 6, 8)), 2);
  // "66T1": runs 6, 6, 36 ("T1" = 4 + 1·32: two characters): column 1 set.
  const uint8_t* m1 = t.masks.data() + 48;
  for (int y = 0; y < 6; ++y) EXPECT_EQ(m1[y * 8 + 1], 1) << y;
  EXPECT_EQ(RleArea(RleFromMask(m1, 6, 8)), 6);

  d.MakeTargets(2, &t);  // No annotation: kept with empty targets.
  EXPECT_EQ(t.size(), 0);
  EXPECT_EQ(t.canvas_width, 8);
}

TEST(CocoTest, SkipEmptyDropsAndCountsImagesWithoutInstances) {
  CocoOptions options;
  options.skip_empty = true;
  auto coco = OpenText("skip_empty.json", kGood, options);
  ASSERT_TRUE(coco.ok()) << coco.status();
  EXPECT_EQ((*coco)->images().size(), 2u);
  EXPECT_EQ((*coco)->skipped().at("empty_image"), 1);
}

TEST(CocoTest, CountsEveryKindOfBadAnnotation) {
  const char json[] = R"({
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
    "categories": [{"id": 1, "name": "x"}],
    "annotations": [
      {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]},
      {"id": 2, "image_id": 1, "category_id": 1, "bbox": [1, 1, "NaN", 2]},
      {"id": 3, "image_id": 1, "category_id": 1, "bbox": [1, 1, 0, 2]},
      {"id": 4, "image_id": 1, "category_id": 1, "bbox": [-5, 8, 20, 20]},
      {"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": [[1, 1, 2, 2]]},
      {"id": 6, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": {"counts": [50, 60], "size": [10, 10]}},
      {"id": 7, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": {"counts": [100], "size": [5, 20]}},
      {"id": 8, "image_id": 1, "category_id": 99, "bbox": [1, 1, 2, 2]},
      {"id": 9, "image_id": 42, "category_id": 1, "bbox": [1, 1, 2, 2]},
      {"id": 10, "image_id": 1, "category_id": 1, "bbox": [20, 20, 2, 2]}
    ]})";
  auto coco = OpenText("bad.json", json);
  ASSERT_TRUE(coco.ok()) << coco.status();
  const auto& skipped = (*coco)->skipped();
  EXPECT_EQ(skipped.at("bad_box"), 1);
  EXPECT_EQ(skipped.at("degenerate_box"), 2);  // Zero width; wholly outside.
  EXPECT_EQ(skipped.at("box_clamped"), 2);     // Kept once, dropped once.
  EXPECT_EQ(skipped.at("bad_polygon"), 1);
  EXPECT_EQ(skipped.at("bad_rle"), 2);         // Overrun; wrong size.
  EXPECT_EQ(skipped.at("unknown_category"), 1);
  EXPECT_EQ(skipped.at("unknown_image"), 1);
  ASSERT_EQ((*coco)->images()[0].instances.size(), 2u);
  const float* clamped = (*coco)->images()[0].instances[1].box;
  EXPECT_EQ(clamped[0], 0);
  EXPECT_EQ(clamped[3], 10);
  // Each message names the file, the image and the value.
  bool found = false;
  for (const std::string& m : (*coco)->skip_messages()) {
    if (m.rfind("bad_rle: ", 0) == 0 && m.find("bad.json: image 1 (a.jpg)") != std::string::npos &&
        m.find("sum to 110") != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// Polygons the rasteriser cannot trace in bounded time and memory are bad parts: a
// coordinate of 1e300 (its int cast overflowed; the run hung) or 1e8 (a boundary of 10^9
// points), and an outline far longer than the image's; the annotation keeps its good parts.
TEST(CocoTest, PolygonsTooFarOrTooLongAreBadParts) {
  const char json[] = R"({
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
    "categories": [{"id": 1, "name": "x"}],
    "annotations": [
      {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": [[1e300, -1e300, 5, 5, 1e308, 1e308]]},
      {"id": 2, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": [[1, 1, 1e8, 1, 1, 3]]},
      {"id": 3, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": [[1, 1, 3, 1, 3, 3], [0, 0, 400, 0, 0, 1]]},
      {"id": 4, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "segmentation": [[-20, -20, 30, -20, 30, 30, -20, 30]]}
    ]})";
  auto coco = OpenText("far.json", json);
  ASSERT_TRUE(coco.ok()) << coco.status();
  const auto& skipped = (*coco)->skipped();
  EXPECT_EQ(skipped.at("bad_polygon"), 2);       // Annotations 1 and 2: no good part.
  EXPECT_EQ(skipped.at("bad_polygon_part"), 1);  // Annotation 3: its long part dropped.
  ASSERT_EQ((*coco)->images()[0].instances.size(), 2u);
  Targets t;
  (*coco)->MakeTargets(0, &t);
  ASSERT_EQ(t.size(), 2);
  // A polygon a little past the image (an outline around it) still covers it all.
  EXPECT_EQ(RleArea(RleFromMask(t.masks.data() + 100, 10, 10)), 100);
}

// A file without a size (a device, a pipe) is read to max_json_bytes at most: /dev/zero
// was read until memory ran out (pack --annotations=/dev/zero never returned).
TEST(CocoTest, AFileWithoutASizeIsReadToTheLimitOnly) {
  // A pipe (<(zcat instances.json.gz)) has no size: it is read to max_annotation_bytes and
  // no further, while its writer would go on for ever.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::signal(SIGPIPE, SIG_IGN);
  std::thread writer([fd = fds[1]] {
    const std::string zeros(1 << 16, '0');
    while (::write(fd, zeros.data(), zeros.size()) > 0) {
    }
    ::close(fd);
  });
  CocoOptions options;
  options.annotations = absl::StrCat("/proc/self/fd/", fds[0]);
  options.images = "images";
  options.max_json_bytes = int64_t{4} << 20;
  absl::StatusOr<std::unique_ptr<CocoDataset>> endless = CocoDataset::Open(options);
  ::close(fds[0]);  // The writer's next write fails: it ends.
  writer.join();
  ASSERT_FALSE(endless.ok());
  EXPECT_NE(endless.status().message().find("max_annotation_bytes 4194304"), std::string::npos)
      << endless.status();
  // A device is no COCO file: refused before a byte is read (/dev/zero was read to
  // max_annotation_bytes, 1 GiB: 2 GB of memory for 10 s).
  options.annotations = "/dev/zero";
  const absl::Status device = CocoDataset::Open(options).status();
  EXPECT_EQ(device.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device.message(), "annotations /dev/zero is a device, not a COCO instances file");
  options.annotations = std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR") : "/tmp";
  absl::StatusOr<std::unique_ptr<CocoDataset>> dir = CocoDataset::Open(options);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(),
            absl::StrCat("annotations ", options.annotations,
                         " is a directory, not a COCO instances file"));
}

TEST(CocoTest, ReadsKeypointsAndSkipsBadOnes) {
  // P = 2 set by the first annotation; one without keypoints gets zeros; a wrong count, a
  // NaN and a non-array are skipped as bad_keypoints, naming the value.
  const char json[] = R"({
    "images": [{"id": 1, "file_name": "a.jpg", "width": 10, "height": 10}],
    "categories": [{"id": 1, "name": "x", "keypoints": ["a", "b"]}],
    "annotations": [
      {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "keypoints": [1.5, 2, 2, 12, -1, 1]},
      {"id": 2, "image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 3]},
      {"id": 3, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "keypoints": [1, 2, 2]},
      {"id": 4, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2],
       "keypoints": [1, 2, 2, "NaN", 0, 0]},
      {"id": 5, "image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2], "keypoints": 7}
    ]})";
  auto coco = OpenText("keypoints.json", json);
  ASSERT_TRUE(coco.ok()) << coco.status();
  EXPECT_EQ((*coco)->NumKeypoints(), 2);
  EXPECT_EQ((*coco)->skipped().at("bad_keypoints"), 3);
  bool named = false;
  for (const std::string& m : (*coco)->skip_messages()) {
    named |= m.find("keypoints.json: image 1 (a.jpg): keypoints [1,2,2] are not 6") !=
             std::string::npos;
  }
  EXPECT_TRUE(named);
  Targets t;
  (*coco)->MakeTargets(0, &t);
  ASSERT_EQ(t.size(), 2);
  ASSERT_TRUE(t.has_keypoints);
  EXPECT_EQ(t.num_keypoints, 2);
  // Coordinates as written, outside the image too (v2 keeps them); visibility kept.
  EXPECT_EQ(t.keypoints, (std::vector<float>{1.5, 2, 2, 12, -1, 1, 0, 0, 0, 0, 0, 0}));
  // Sanitize's Keep drops an instance's keypoints with its box.
  t.Keep({false, true});
  EXPECT_EQ(t.keypoints, (std::vector<float>(6, 0.0f)));
  // An instance added without points (copy_paste) gets unlabelled ones, never a short
  // field.
  t.boxes.insert(t.boxes.end(), {1, 1, 2, 2});
  t.labels.push_back(1);
  t.Keep({true, true});
  EXPECT_EQ(t.keypoints.size(), 12u);
}

TEST(CocoTest, BoundsInstancesPerImage) {
  std::string json = R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 9, "height": 9}],
    "categories": [{"id": 1}], "annotations": [)";
  for (int i = 0; i < 50; ++i) {
    json += std::string(i ? "," : "") + R"({"image_id": 1, "category_id": 1, "bbox": [1, 1, 2, 2]})";
  }
  json += "]}";
  CocoOptions options;
  options.max_instances = 10;
  auto coco = OpenText("many.json", json, options);
  ASSERT_TRUE(coco.ok()) << coco.status();
  EXPECT_EQ((*coco)->images()[0].instances.size(), 10u);
  EXPECT_EQ((*coco)->skipped().at("too_many_instances"), 40);
}

TEST(CocoTest, RefusesWhatLeavesNothingToTrainOn) {
  auto dup = OpenText("dup.json", R"({"images": [
      {"id": 5, "file_name": "a.jpg", "width": 4, "height": 4},
      {"id": 5, "file_name": "b.jpg", "width": 4, "height": 4}]})");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("image id 5 appears twice (a.jpg and b.jpg)"),
            std::string::npos)
      << dup.status();
  auto not_json = OpenText("broken.json", R"({"images": [)");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.status().message().find("broken.json: not JSON"), std::string::npos)
      << not_json.status();
  // The JSON library's exception id is not for a user.
  EXPECT_EQ(not_json.status().message().find("json.exception"), std::string::npos)
      << not_json.status();
  auto no_size = OpenText("nosize.json", R"({"images": [{"id": 1, "file_name": "a.jpg"}]})");
  EXPECT_FALSE(no_size.ok());
  CocoOptions small;
  small.max_json_bytes = 10;
  auto big = OpenText("big.json", kGood, small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("max_annotation_bytes"), std::string::npos);
  CocoOptions missing;
  missing.annotations = "/nonexistent/instances.json";
  const absl::Status not_found = CocoDataset::Open(missing).status();
  EXPECT_EQ(not_found.code(), absl::StatusCode::kNotFound);
  // The message names the setting, not only a path.
  EXPECT_EQ(not_found.message(),
            "annotations /nonexistent/instances.json cannot be read: No such file or directory");
}

}  // namespace
}  // namespace flowloader::detection
