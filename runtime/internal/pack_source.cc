// pack_source.cc: PackSource (see pack_source.h).
#include "runtime/internal/pack_source.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "exporters/internal/json.h"
#include "nlohmann/json.hpp"
#include "stages/core/log.h"
#include "stages/detection/coco.h"
#include "stages/reader/env.h"
#include "stages/reader/env_util.h"

namespace flowloader::internal {
namespace {

using Json = nlohmann::json;

// CocoSamples is each image of the COCO file `text` (already checked by
// detection::CocoDataset) with its .json member: the image's record and its annotations
// as the file has them, in the file's order; *categories is {"categories": its list}.
absl::StatusOr<std::vector<PackSample>> CocoSamples(const std::string& text,
                                                    const std::string& file,
                                                    const std::string& images,
                                                    std::string* categories) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("images")) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": not a COCO instances file"));
  }
  if (root.contains("categories") && root["categories"].is_array() &&
      !root["categories"].empty()) {
    *categories = Json{{"categories", root["categories"]}}.dump();
  }
  std::map<int64_t, Json> annotations_of;  // By image id.
  int64_t orphans = 0;
  for (const Json& image : root["images"]) annotations_of[image["id"].get<int64_t>()];
  if (root.contains("annotations") && root["annotations"].is_array()) {
    for (Json& a : root["annotations"]) {
      auto it = a.is_object() && a.contains("image_id") && a["image_id"].is_number_integer()
                    ? annotations_of.find(a["image_id"].get<int64_t>())
                    : annotations_of.end();
      if (it == annotations_of.end()) {
        ++orphans;
        continue;
      }
      if (it->second.is_null()) it->second = Json::array();
      it->second.push_back(std::move(a));
    }
  }
  if (orphans > 0) {
    LogWarning(absl::StrCat("pack: ", file, ": ", orphans,
                            " annotation(s) name no image of the file: left out"));
  }
  std::vector<PackSample> samples;
  for (const Json& image : root["images"]) {
    const int64_t id = image["id"].get<int64_t>();
    Json& list = annotations_of[id];
    Json member = {{"image_id", id},
                   {"file_name", image["file_name"]},
                   {"width", image["width"]},
                   {"height", image["height"]},
                   {"annotations", list.is_null() ? Json::array() : std::move(list)}};
    PackSample s;
    s.key = image["file_name"].get<std::string>();
    s.path = absl::StrCat(images, "/", s.key);
    s.members.emplace_back("json", member.dump());
    samples.push_back(std::move(s));
  }
  return samples;
}

// Extension is a key's extension, lower case ("img" without one).
std::string Extension(const std::string& key) {
  const size_t slash = key.rfind('/');
  const size_t dot = key.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "img";
  return absl::AsciiStrToLower(key.substr(dot + 1));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PackSource>> PackSource::Open(const PackSourceOptions& o) {
  std::unique_ptr<PackSource> source(new PackSource());
  if (!o.annotations.empty() && !o.label_maps.empty()) {
    return absl::InvalidArgumentError("pack takes --annotations or --label_maps, not both");
  }
  if (!o.annotations.empty()) {
    detection::CocoOptions coco;
    coco.annotations = o.annotations;
    coco.images = o.data;
    absl::StatusOr<std::unique_ptr<detection::CocoDataset>> checked =
        detection::CocoDataset::Open(coco);
    if (!checked.ok()) return checked.status();
    std::string text;
    if (absl::Status s = Env::Default()->ReadFile(o.annotations, coco.max_json_bytes, &text);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::vector<PackSample>> samples =
        CocoSamples(text, o.annotations, StripTrailingSlashes(o.data), &source->categories_json_);
    if (!samples.ok()) return samples.status();
    source->coco_samples_ = std::move(*samples);
    source->size_ = static_cast<int64_t>(source->coco_samples_.size());
    source->run_flags_ = " --annotations=.json";
    return source;
  }
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      o.label_maps.empty() ? Dataset::Open({o.data}) : Dataset::OpenLabelMaps({o.data}, o.label_maps);
  if (!ds.ok()) return ds.status();
  if (!(*ds)->shards().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        o.data, " is already tar shards: pack reads an ImageFolder, a list file or images "
        "with --annotations or --label_maps"));
  }
  if ((*ds)->has_label_maps()) {
    source->map_extension_ = "png";
    for (int64_t i = 0; i < (*ds)->size(); ++i) {
      if (Extension((*ds)->sample(i).key) == "png") source->map_extension_ = "seg.png";
    }
    source->run_flags_ = absl::StrCat(" --label_maps=.", source->map_extension_);
  }
  source->size_ = (*ds)->size();
  source->dataset_ = std::move(*ds);
  return source;
}

const std::vector<std::string>& PackSource::class_names() const {
  static const std::vector<std::string>* const kNone = new std::vector<std::string>;
  return dataset_ != nullptr ? dataset_->class_names() : *kNone;
}

absl::Status PackSource::Sample(int64_t i, PackSample* out) const {
  if (dataset_ == nullptr) {
    *out = coco_samples_[static_cast<size_t>(i)];
    return absl::OkStatus();
  }
  const SampleSource& source = dataset_->sample(i);
  out->key = source.key;
  out->path = dataset_->FullPath(i);
  out->members.clear();
  if (!source.error.ok()) return source.error;
  if (map_extension_.empty()) {
    out->members.emplace_back("cls", absl::StrCat(source.label));
    out->members.emplace_back(
        "json", absl::StrCat("{\"key\": ", exporters_internal::JsonString(source.key),
                             ", \"label\": ", source.label, "}"));
    return absl::OkStatus();
  }
  std::string map;
  const std::string& path = dataset_->label_map(i);
  if (absl::Status s = Env::Default()->ReadFile(path, int64_t{1} << 30, &map); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("label map ", path, ": ", s.message()));
  }
  out->members.emplace_back(map_extension_, std::move(map));
  return absl::OkStatus();
}

}  // namespace flowloader::internal
