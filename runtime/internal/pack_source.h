// pack_source.h: what `flowloader pack` packs, sample by sample, and the members each
// sample gets beside its image:
//  * an ImageFolder or list file: KEY.cls (the label) and KEY.json ({"key", "label"});
//  * a COCO detection dataset (`annotations`: the instances file, `data` its images):
//    KEY.json, the image's COCO record and its annotations as the file has them,
//    {"image_id", "file_name", "width", "height", "annotations": [...]}, which a run
//    reads back with --annotations=.json (Dataset::OpenShardAnnotations);
//  * a segmentation dataset (`label_maps`: a directory paired with `data`, or a list
//    file): KEY.png, the label map's bytes (KEY.seg.png when some image is itself a
//    PNG), read back with --label_maps=.png (or .seg.png).
//
// Thread-safety: Sample may run on one thread at a time.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_PACK_SOURCE_H_
#define FLOWLOADER_RUNTIME_INTERNAL_PACK_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "stages/reader/dataset.h"

namespace flowloader::internal {

struct PackSourceOptions {
  std::string data;         // ImageFolder, list file, or the images of the two below.
  std::string annotations;  // A COCO instances file: detection.
  std::string label_maps;   // A label-map directory or list file: segmentation.
};

// PackSample is one sample to pack: its image file and the members after it.
struct PackSample {
  std::string key;    // The source key (messages, classification's .json).
  std::string path;   // The image file.
  std::vector<std::pair<std::string, std::string>> members;  // (extension, bytes).
};

class PackSource {
 public:
  // Open lists the samples; refuses a source that is already tar shards, a COCO file
  // that detection::CocoDataset refuses, and what Dataset::Open refuses.
  static absl::StatusOr<std::unique_ptr<PackSource>> Open(const PackSourceOptions& options);

  int64_t size() const { return size_; }
  // Sample fills *out with sample i (reading its label map); an error says why the
  // sample is left out (a missing label map, an unreadable one), naming it.
  absl::Status Sample(int64_t i, PackSample* out) const;
  // ImageFolder class names (classes.txt); empty otherwise.
  const std::vector<std::string>& class_names() const;
  // RunFlags is what `run` needs beside --data to read the targets back ("" for
  // classification, " --annotations=.json", " --label_maps=.png").
  const std::string& run_flags() const { return run_flags_; }
  // Detection: {"categories": the COCO file's list}, for OUT/categories.json; else "".
  const std::string& categories_json() const { return categories_json_; }

 private:
  PackSource() = default;
  std::unique_ptr<Dataset> dataset_;     // Classification and segmentation.
  std::string images_;                   // Detection: the images' directory.
  std::vector<PackSample> coco_samples_;  // Detection: image path and .json member.
  std::string map_extension_;            // Segmentation: "png" or "seg.png".
  std::string run_flags_;
  std::string categories_json_;          // Detection: see categories_json().
  int64_t size_ = 0;
};

}  // namespace flowloader::internal

#endif  // FLOWLOADER_RUNTIME_INTERNAL_PACK_SOURCE_H_
