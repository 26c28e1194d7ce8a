// shard_targets_test: detection and segmentation from tar shards. make-dataset's
// detection (COCO, with keypoints) and segmentation (PNG label maps) data are packed
// with `pack --annotations=` / `--label_maps=` (KEY.jpg + KEY.json, KEY.jpg + KEY.png),
// then read back from the shards on disk, through a real nginx and from a RADOS Gateway
// bucket (s3://): every batch (image bytes, boxes, labels, iscrowd, area, masks,
// keypoints, image ids, label maps) equals the one read from the folder layout, under
// random crops and flips. Shards written by
// hand with bad members (no .png, no .json, damaged or incomplete JSON, a repeated
// image_id) give their good samples and skip the others, counted by reason and named.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/detection_dataset.h"
#include "runtime/pack_command.h"
#include "runtime/pipeline.h"
#include "runtime/segmentation_dataset.h"
#include "stages/reader/env.h"
#include "stages/reader/tar_writer.h"
#include "tests/testing/pipeline_helpers.h"
#include "tests/testing/s3_server.h"
#include "tests/testing/shard_data.h"
#include "tests/testing/test_data.h"

namespace flowloader {
namespace {

using testing::Server;

std::string Tmp() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

// Seen is what a test keeps of one batch (not the batch: that would hold the pool).
struct Seen {
  std::vector<int64_t> indices;
  std::string pixels;
  BatchTargets targets;
};

struct Outcome {
  absl::Status status;
  std::vector<Seen> batches;
  std::vector<SkippedSample> skipped;
  std::vector<int64_t> category_ids;  // The label map's categories, by label.
};

Outcome RunPipeline(const PipelineOptions& o) {
  Outcome run;
  auto pipeline = Pipeline::Create(o);
  if (!pipeline.ok()) {
    run.status = pipeline.status();
    return run;
  }
  if (const detection::CocoDataset* coco = (*pipeline)->annotations(); coco != nullptr) {
    for (const detection::CocoCategory& c : coco->categories()) run.category_ids.push_back(c.id);
  }
  run.status = testing::EachBatch(**pipeline, [](int) {}, [&run](const Batch& batch) {
    Seen seen;
    seen.indices = batch.indices;
    seen.pixels.assign(static_cast<const char*>(batch.host_data()), batch.bytes());
    seen.targets = batch.targets;
    run.skipped.insert(run.skipped.end(), batch.skipped.begin(), batch.skipped.end());
    run.batches.push_back(std::move(seen));
  });
  return run;
}

// ExpectSameBatches checks every batch of `b` equals `a`'s: pixels and every target.
void ExpectSameBatches(const Outcome& a, const Outcome& b, int64_t* instances) {
  ASSERT_TRUE(a.status.ok()) << a.status;
  ASSERT_TRUE(b.status.ok()) << b.status;
  ASSERT_EQ(a.batches.size(), b.batches.size());
  for (size_t i = 0; i < a.batches.size(); ++i) {
    const Seen& x = a.batches[i];
    const Seen& y = b.batches[i];
    SCOPED_TRACE(absl::StrCat("batch ", i));
    EXPECT_EQ(x.indices, y.indices);
    EXPECT_TRUE(x.pixels == y.pixels);
    const BatchTargets& s = x.targets;
    const BatchTargets& t = y.targets;
    EXPECT_EQ(s.offsets, t.offsets);
    EXPECT_EQ(s.boxes, t.boxes);
    EXPECT_EQ(s.labels, t.labels);
    EXPECT_EQ(s.iscrowd, t.iscrowd);
    EXPECT_EQ(s.area, t.area);
    EXPECT_EQ(s.image_ids, t.image_ids);
    EXPECT_EQ(s.has_masks, t.has_masks);
    EXPECT_TRUE(s.masks == t.masks);
    EXPECT_EQ(s.has_keypoints, t.has_keypoints);
    EXPECT_EQ(s.keypoints, t.keypoints);
    EXPECT_EQ(s.has_semantic, t.has_semantic);
    EXPECT_TRUE(s.semantic == t.semantic);
    *instances += static_cast<int64_t>(s.labels.size());
  }
}

PackResult MustPack(PackOptions o) {
  o.shard_size_bytes = 60 << 10;  // Several shards.
  absl::StatusOr<PackResult> r = Pack(o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : PackResult();
}

// ShardRange is the pack's shards as a brace range of names ("train-{000000..000003}.tar").
std::string ShardRange(const PackResult& r) {
  return r.shards.size() == 1 ? "train-000000.tar"
                              : absl::StrFormat("train-{000000..%06d}.tar", r.shards.size() - 1);
}

// BracePattern is the pack's shards: its pattern, or as `server` serves their directory.
std::string BracePattern(const Server* server, const PackResult& r) {
  return server != nullptr ? server->Url("/" + ShardRange(r)) : r.pattern;
}

class ShardTargetsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    DetectionDatasetOptions d;
    d.root = Tmp() + "/det";
    d.images = 14;
    d.min_side = 64;
    d.max_side = 120;
    d.keypoints = true;
    ASSERT_TRUE(GenerateDetectionDataset(d).ok());
    SegmentationDatasetOptions s;
    s.root = Tmp() + "/seg";
    s.images = 10;
    s.min_side = 64;
    s.max_side = 120;
    ASSERT_TRUE(GenerateSegmentationDataset(s).ok());
    PackOptions p;
    p.data = d.root + "/images";
    p.annotations = d.root + "/annotations/instances.json";
    p.out = Tmp() + "/det_shards";
    det_ = new PackResult(MustPack(p));
    p = PackOptions();
    p.data = s.root + "/images";
    p.label_maps = s.root + "/label_maps";
    p.out = Tmp() + "/seg_shards";
    seg_ = new PackResult(MustPack(p));
  }

  static PipelineOptions Detection(const std::string& data, const std::string& annotations) {
    PipelineOptions o = testing::SmallCpuOptions(data, 4, nullptr);
    o.annotations = annotations;
    o.shuffle = false;
    o.epochs = 1;
    o.stages = {StageSpec{"read"}, StageSpec{"annotations"}, StageSpec{"decode"},
                StageSpec{"transforms", "",
                          {{"ops", "random_resized_crop(size=48, scale=[0.3, 1.0]); "
                                   "random_horizontal_flip()"}}},
                StageSpec{"sanitize_bounding_boxes"}};
    return o;
  }

  static PipelineOptions Segmentation(const std::string& data, const std::string& maps) {
    PipelineOptions o = testing::SmallCpuOptions(data, 4, nullptr);
    o.label_maps = maps;
    o.shuffle = false;
    o.epochs = 1;
    o.stages = {StageSpec{"read"}, StageSpec{"label_map"}, StageSpec{"decode"},
                StageSpec{"transforms", "",
                          {{"ops", "random_resized_crop(size=40, scale=[0.3, 1.0]); "
                                   "random_horizontal_flip()"}}}};
    return o;
  }

  static PackResult* det_;
  static PackResult* seg_;
};

PackResult* ShardTargetsTest::det_ = nullptr;
PackResult* ShardTargetsTest::seg_ = nullptr;

TEST_F(ShardTargetsTest, DetectionShardsGiveTheFoldersTargetsOnDiskAndOverHttp) {
  ASSERT_GT(det_->shards.size(), 1u);
  EXPECT_EQ(det_->run_flags, absl::StrCat(" --annotations=.json --categories='", Tmp(),
                                          "/det_shards/categories.json'"));
  const std::string root = Tmp() + "/det";
  const Outcome folder =
      RunPipeline(Detection(root + "/images", root + "/annotations/instances.json"));
  const Outcome disk = RunPipeline(Detection(BracePattern(nullptr, *det_), ".json"));
  int64_t instances = 0;
  ExpectSameBatches(folder, disk, &instances);
  EXPECT_GT(instances, 20);
  EXPECT_EQ(folder.category_ids, (std::vector<int64_t>{1, 3, 7, 12}));
  EXPECT_EQ(disk.category_ids, folder.category_ids);
  EXPECT_TRUE(folder.batches.front().targets.has_keypoints);

  Server nginx = Server::Nginx(Tmp() + "/det_shards", Tmp() + "/nginx_det");
  ASSERT_TRUE(nginx.running());
  const Outcome http = RunPipeline(Detection(BracePattern(&nginx, *det_), ".json"));
  instances = 0;
  ExpectSameBatches(folder, http, &instances);
}

TEST_F(ShardTargetsTest, SegmentationShardsGiveTheFoldersLabelMapsOnDiskAndOverHttp) {
  ASSERT_GT(seg_->shards.size(), 1u);
  EXPECT_EQ(seg_->run_flags, " --label_maps=.png");
  const std::string root = Tmp() + "/seg";
  const Outcome folder = RunPipeline(Segmentation(root + "/images", root + "/label_maps"));
  const Outcome disk = RunPipeline(Segmentation(BracePattern(nullptr, *seg_), ".png"));
  int64_t instances = 0;
  ExpectSameBatches(folder, disk, &instances);
  ASSERT_FALSE(folder.batches.empty());
  EXPECT_TRUE(folder.batches.front().targets.has_semantic);

  Server nginx = Server::Nginx(Tmp() + "/seg_shards", Tmp() + "/nginx_seg");
  ASSERT_TRUE(nginx.running());
  const Outcome http = RunPipeline(Segmentation(BracePattern(&nginx, *seg_), ".png"));
  ExpectSameBatches(folder, http, &instances);
}

// The same shards in a bucket of a real S3 server (the RADOS Gateway): detection shards
// with pack's categories.json read from the bucket too (`categories: s3://...`), and
// segmentation shards, give the folders' batches.
TEST_F(ShardTargetsTest, DetectionAndSegmentationShardsFromABucket) {
  std::unique_ptr<testing::RadosGateway> gateway =
      testing::RadosGateway::Start(testing::TempDir("rgw"));
  ASSERT_NE(gateway, nullptr) << "the RADOS Gateway did not start";
  ::setenv("HOME", testing::TempDir("home").c_str(), 1);  // No ~/.aws of the machine's.
  for (const char* name : {"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                           "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE",
                           "AWS_SHARED_CREDENTIALS_FILE"}) {
    ::unsetenv(name);
  }
  ::setenv("AWS_ACCESS_KEY_ID", gateway->access_key().c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", gateway->secret_key().c_str(), 1);
  ASSERT_TRUE(gateway->CreateBucket("targets"));
  // Each shard, its .tar.idx, and the detection set's categories.json.
  ASSERT_EQ(gateway->Upload(Tmp() + "/det_shards", "targets", "det/"),
            static_cast<int>(2 * det_->shards.size() + 1));
  ASSERT_EQ(gateway->Upload(Tmp() + "/seg_shards", "targets", "seg/"),
            static_cast<int>(2 * seg_->shards.size()));

  const std::string det = Tmp() + "/det";
  const Outcome det_folder =
      RunPipeline(Detection(det + "/images", det + "/annotations/instances.json"));
  PipelineOptions o = Detection("s3://targets/det/" + ShardRange(*det_), ".json");
  o.categories = "s3://targets/det/categories.json";
  o.s3.endpoint = gateway->endpoint();
  const Outcome det_s3 = RunPipeline(o);
  int64_t instances = 0;
  ExpectSameBatches(det_folder, det_s3, &instances);
  EXPECT_GT(instances, 20);
  EXPECT_EQ(det_s3.category_ids, det_folder.category_ids);
  EXPECT_TRUE(det_s3.skipped.empty());

  const std::string seg = Tmp() + "/seg";
  const Outcome seg_folder = RunPipeline(Segmentation(seg + "/images", seg + "/label_maps"));
  o = Segmentation("s3://targets/seg/" + ShardRange(*seg_), ".png");
  o.s3.endpoint = gateway->endpoint();
  const Outcome seg_s3 = RunPipeline(o);
  ExpectSameBatches(seg_folder, seg_s3, &instances);
  ASSERT_FALSE(seg_s3.batches.empty());
  EXPECT_TRUE(seg_s3.batches.front().targets.has_semantic);
}

// FirstImage is a JPEG of make-dataset's, for hand-made shards.
std::string FirstImage(const std::string& images_dir) {
  std::string bytes;
  EXPECT_TRUE(Env::Default()->ReadFile(images_dir + "/img_00001.jpg", 1 << 24, &bytes).ok());
  return bytes;
}

void WriteShard(const std::string& path,
                const std::vector<std::pair<std::string, std::string>>& members) {
  auto w = TarWriter::Create(Env::Default(), path);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const auto& [name, bytes] : members) ASSERT_TRUE((*w)->Add(name, bytes).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

int Count(const Outcome& run, const std::string& reason, const std::string& key) {
  int n = 0;
  for (const SkippedSample& s : run.skipped) {
    if (s.reason == reason && s.key.find(key) != std::string::npos) ++n;
  }
  return n;
}

TEST_F(ShardTargetsTest, BadMembersAreSkippedCountedAndNamed) {
  const std::string jpg = FirstImage(Tmp() + "/seg/images");
  std::string png;
  ASSERT_TRUE(
      Env::Default()->ReadFile(Tmp() + "/seg/label_maps/img_00001.png", 1 << 24, &png).ok());
  // Segmentation: one good sample, one without its map, one whose map comes first.
  const std::string seg = Tmp() + "/bad_seg.tar";
  WriteShard(seg, {{"good.jpg", jpg}, {"good.png", png}, {"nomap.jpg", jpg},
                   {"first.png", png}, {"first.jpg", jpg}});
  Outcome run = RunPipeline(Segmentation(seg, ".png"));
  ASSERT_TRUE(run.status.ok()) << run.status;
  int64_t rows = 0;
  for (const Seen& b : run.batches) rows += static_cast<int64_t>(b.indices.size());
  EXPECT_EQ(rows, 2);  // good, and first (its image is first.jpg, not the map).
  EXPECT_EQ(Count(run, "missing_label", "nomap.jpg"), 1);
  EXPECT_EQ(run.skipped.size(), 1u);

  // Detection: the image's record as pack writes it (img_00001 is 96 × 100), then
  // damaged forms.
  const std::string record = R"({"image_id": 5, "width": 96, "height": 100, "annotations": )"
                             R"([{"bbox": [10, 10, 30, 20], "category_id": 4}]})";
  const std::string det = Tmp() + "/bad_det.tar";
  std::string jpg_det;
  ASSERT_TRUE(Env::Default()->ReadFile(Tmp() + "/det/images/img_00001.jpg", 1 << 24, &jpg_det).ok());
  WriteShard(det, {{"good.jpg", jpg_det}, {"good.json", record},
                   {"nojson.jpg", jpg_det},
                   {"broken.jpg", jpg_det}, {"broken.json", "{\"width\": 100, "},
                   {"nosize.jpg", jpg_det}, {"nosize.json", R"({"annotations": []})"},
                   {"again.jpg", jpg_det}, {"again.json", record}});
  PipelineOptions o = Detection(det, ".json");
  o.stages[3].args = {{"ops", "resize(size=[32, 32])"}};
  run = RunPipeline(o);
  ASSERT_TRUE(run.status.ok()) << run.status;
  rows = 0;
  for (const Seen& b : run.batches) rows += static_cast<int64_t>(b.indices.size());
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(Count(run, "missing_label", "nojson.jpg"), 1);
  EXPECT_EQ(Count(run, "corrupt", "broken.jpg"), 1);
  EXPECT_EQ(Count(run, "corrupt", "nosize.jpg"), 1);
  EXPECT_EQ(Count(run, "corrupt", "again.jpg"), 1);
  EXPECT_EQ(run.skipped.size(), 4u);
  EXPECT_EQ(run.category_ids, (std::vector<int64_t>{4}));
  for (const SkippedSample& s : run.skipped) EXPECT_NE(s.message.find("bad_det.tar"), std::string::npos) << s.message;

  // Annotations or label maps as a member of data that is no shard: one line.
  auto refused = Pipeline::Create(Segmentation(Tmp() + "/seg/images", ".png"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("did not open as tar shards"), std::string::npos)
      << refused.status();
}

// A shard whose members name only some of the file's categories keeps the file's labels
// with `categories` (pack's categories.json, or the COCO file itself); without it the
// labels are the ids seen, in order. `categories` anywhere else is refused in one line.
TEST_F(ShardTargetsTest, CategoriesFileKeepsLabelsOfCategoriesMissingFromTheShards) {
  const std::string root = Tmp() + "/det";
  std::string coco_text;
  ASSERT_TRUE(
      Env::Default()->ReadFile(root + "/annotations/instances.json", 1 << 26, &coco_text).ok());
  const nlohmann::json coco = nlohmann::json::parse(coco_text);
  const nlohmann::json& image = coco["images"][0];
  nlohmann::json record = {{"image_id", image["id"]}, {"width", image["width"]},
                           {"height", image["height"]}, {"annotations", nlohmann::json::array()}};
  for (int64_t category : {12, 1}) {  // Categories 3 and 7 appear in no member.
    record["annotations"].push_back(
        {{"bbox", {2, 3, 20, 10}}, {"category_id", category}, {"iscrowd", 0}, {"area", 200}});
  }
  std::string jpg;
  ASSERT_TRUE(Env::Default()
                  ->ReadFile(root + "/images/" + image["file_name"].get<std::string>(), 1 << 24,
                             &jpg)
                  .ok());
  const std::string shard = Tmp() + "/two_categories.tar";
  WriteShard(shard, {{"a.jpg", jpg}, {"a.json", record.dump()}});

  auto labels_with = [&](const std::string& categories) {
    PipelineOptions o = Detection(shard, ".json");
    o.stages[3].args = {{"ops", "resize(size=[32, 32])"}};
    o.categories = categories;
    const Outcome run = RunPipeline(o);
    EXPECT_TRUE(run.status.ok()) << run.status;
    std::vector<int64_t> labels;
    for (const Seen& b : run.batches) {
      labels.insert(labels.end(), b.targets.labels.begin(), b.targets.labels.end());
    }
    return labels;
  };
  EXPECT_EQ(labels_with(""), (std::vector<int64_t>{2, 1}));  // Ids seen: 1, 12.
  EXPECT_EQ(labels_with(Tmp() + "/det_shards/categories.json"), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(labels_with(root + "/annotations/instances.json"), (std::vector<int64_t>{4, 1}));

  PipelineOptions folder = Detection(root + "/images", root + "/annotations/instances.json");
  folder.categories = Tmp() + "/det_shards/categories.json";
  EXPECT_NE(RunPipeline(folder).status.message().find("has its own categories"),
            std::string::npos);
  PipelineOptions not_json = Detection(shard, ".json");
  not_json.categories = shard;
  const absl::Status refused = RunPipeline(not_json).status;
  EXPECT_NE(refused.message().find("non-empty \"categories\" list"), std::string::npos)
      << refused;
}

}  // namespace
}  // namespace flowloader
