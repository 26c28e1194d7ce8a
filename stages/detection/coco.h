// coco.h: a COCO instances annotation file (`instances_train2017.json`) read into the
// per-image targets torchvision's detection models train on.
//
// What is read, per the COCO format (cocodataset.org/#format-data):
//  * `images`: id, file_name (relative to the images directory), width, height;
//  * `categories`: id, name; ids are mapped to contiguous labels in increasing id order,
//    starting at `first_label` (1 by default: torchvision's detection models keep 0 for
//    the background), the map is categories();
//  * `annotations`: image_id, category_id, bbox [x, y, w, h] (→ xyxy boxes), iscrowd,
//    area, and segmentation as polygons ([[x1, y1, x2, y2, ...], ...], parts merged) or
//    RLE ({"counts": [..] or "...", "size": [h, w]}), rasterised to a mask by MakeTargets
//    exactly as the COCO API does (stages/detection/rle.h), and keypoints
//    ([x1, y1, v1, ..., xP, yP, vP], person keypoints) as float32 [P, 3].
// Bad input never stops the file unless it leaves nothing to train on; what is dropped is
// counted by reason in skipped() with its first lines (file, image id and value) in
// skip_messages():
//   bad_box          a bbox that is not 4 finite numbers
//   degenerate_box   width or height <= 0 (after clamping to the image)
//   box_clamped      a box reaching outside its image (kept, clamped: not a skip)
//   bad_polygon      no polygon part with >= 3 points and an even number of coordinates
//                    that can be rasterised (coordinates within 4 × 65536, a boundary at
//                    most 16 × (width + height) long)
//                    (parts that are bad are dropped; the annotation goes when none is left)
//   bad_keypoints    keypoints that are not 3 × P finite numbers, P the same for every
//                    annotation of the file (the first one with keypoints sets it)
//   bad_rle          RLE counts that do not sum to the image's pixels, a size that is not
//                    the image's, or a malformed string
//   unknown_category a category_id absent from `categories`
//   unknown_image    an image_id absent from `images`
//   too_many_instances  instances past max_instances of one image (bounded memory)
//   empty_image      with skip_empty, an image left without an instance
// Refused (Open fails in one line): a file larger than max_json_bytes (the knob named), a
// file that is not JSON or lacks `images`, an image id that appears twice, an image
// without a positive width and height.
//
// Thread-safety: immutable after Open; MakeTargets may run on any number of threads.
#ifndef FLOWLOADER_STAGES_DETECTION_COCO_H_
#define FLOWLOADER_STAGES_DETECTION_COCO_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/detection/rle.h"
#include "stages/detection/targets.h"

namespace flowloader::detection {

struct CocoOptions {
  // The instances JSON. Required.
  std::string annotations;
  // The directory file_name is relative to (FullPath). Required.
  std::string images;
  // Drop images without an instance (counted as empty_image); default keep them, with
  // empty targets (torchvision's detection models accept K = 0).
  bool skip_empty = false;
  // The label of the category with the smallest id; >= 0. Default 1 (0 = background).
  int first_label = 1;
  // Rasterise segmentations to masks in MakeTargets; false: boxes only (no mask cost).
  bool masks = true;
  // Refuse a larger annotation file (parsing holds it in memory, about 10× its size).
  // Default 1 GiB.
  int64_t max_json_bytes = int64_t{1} << 30;
  // Instances kept per image (the rest counted as too_many_instances); >= 1.
  int max_instances = 1000;
  // Reads `annotations` (replacing *text; a file over max_bytes refused with
  // kResourceExhausted) when set: the pipeline passes its StorageEnv's ReadFile, so the
  // JSON may be s3://BUCKET/KEY or an http(s) URL. Unset: a local file.
  std::function<absl::Status(const std::string& path, int64_t max_bytes, std::string* text)>
      read_file;
};

struct CocoCategory {
  int64_t id = 0;
  std::string name;
  int64_t label = 0;
};

// CocoInstance is one kept annotation.
struct CocoInstance {
  float box[4] = {};  // xyxy, clamped to the image.
  int64_t category_id = 0;
  int64_t label = 0;
  int64_t iscrowd = 0;
  float area = 0;
  // Segmentation: polygon parts, or one RLE (a string is decoded at Open, so bad ones
  // are found then); neither when the annotation has none (its mask is then empty).
  std::vector<std::vector<double>> polygons;
  bool has_rle = false;
  Rle rle;
  // Keypoints: P × (x, y, visibility), or empty when the annotation has none.
  std::vector<float> keypoints;
};

struct CocoImage {
  int64_t id = 0;
  std::string file_name;
  int width = 0;
  int height = 0;
  std::vector<CocoInstance> instances;
};

class CocoDataset {
 public:
  static absl::StatusOr<std::unique_ptr<CocoDataset>> Open(const CocoOptions& options);

  const CocoOptions& options() const { return options_; }
  // The images kept, in the file's order.
  const std::vector<CocoImage>& images() const { return images_; }
  const std::vector<CocoCategory>& categories() const { return categories_; }
  // Counts by reason (see the banner); skip_messages() holds the first lines.
  const std::map<std::string, int64_t>& skipped() const { return skipped_; }
  const std::vector<std::string>& skip_messages() const { return skip_messages_; }
  // FullPath is options().images / file_name.
  std::string FullPath(const CocoImage& image) const;
  // NumKeypoints is P, the keypoints per instance (0: the file has none).
  int NumKeypoints() const { return num_keypoints_; }
  // MaxInstances is the most instances one kept image has (the memory plan's bound).
  int64_t MaxInstances() const { return max_instances_; }

  // MakeTargets fills `out` with image `i`'s targets: xyxy boxes on its canvas, labels,
  // iscrowd, area, image_id, keypoints when the file has them (zeros, visibility 0, for
  // an instance without), and (with options().masks) one mask plane per instance.
  void MakeTargets(size_t i, Targets* out) const { MakeTargets(i, options_.masks, out); }
  // MakeTargets with `masks` false leaves the masks out (boxes only); with `windowed`,
  // the masks are windowed (Targets::masks_windowed): each instance's window is the
  // tight box of its segmentation, the same planes once expanded.
  void MakeTargets(size_t i, bool masks, Targets* out, bool windowed = false) const;
  // MaxPlaneBytes is the largest image's width × height (one mask plane).
  int64_t MaxPlaneBytes() const { return max_plane_bytes_; }

 private:
  explicit CocoDataset(CocoOptions options) : options_(std::move(options)) {}
  absl::Status Parse(const std::string& text);
  void Skip(const std::string& reason, const std::string& message);

  CocoOptions options_;
  std::vector<CocoImage> images_;
  std::vector<CocoCategory> categories_;
  std::map<std::string, int64_t> skipped_;
  std::vector<std::string> skip_messages_;
  int64_t max_instances_ = 0;
  int num_keypoints_ = 0;
  int64_t max_plane_bytes_ = 0;
};

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_COCO_H_
