// shard_targets.cc: detection and segmentation targets from tar shards (dataset.h):
// Dataset::OpenShardAnnotations (each sample's `.json` member holds its image's COCO
// annotations, read while indexing as a column and checked by detection::CocoDataset)
// and Dataset::OpenShardLabelMaps (each sample's `.png` member is its label map, read
// per sample by the label_map stage with one ranged read).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "stages/detection/json_int.h"
#include "stages/core/log.h"
#include "stages/core/sample_error.h"
#include "stages/reader/dataset.h"

namespace flowloader {
namespace {

using Json = nlohmann::json;

// The largest annotations member read (polygons of many instances), bytes.
constexpr int64_t kMaxAnnotationMemberBytes = int64_t{16} << 20;

// CategoriesList is the top-level "categories" list of the JSON document `text` (a COCO
// instances file, or pack's categories.json), read from `file`.
absl::StatusOr<Json> CategoriesList(const std::string& text, const std::string& file) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("categories") ||
      !root["categories"].is_array() || root["categories"].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "categories ", file, ": not a JSON object with a non-empty \"categories\" list "
        "(a COCO instances file, or the categories.json pack writes)"));
  }
  return std::move(root["categories"]);
}

// MemberExtension is an option's member extension without its dot, lower case.
std::string MemberExtension(const std::string& value) {
  return absl::AsciiStrToLower(value.substr(1));
}

// Int reads an integer field (json_int.h).
bool Int(const Json& object, const char* key, int64_t* out) {
  return detection::JsonInt(object, key, out);
}

// ParsedImage is one sample's annotations member, checked.
struct ParsedImage {
  int64_t id = 0;
  Json image;        // The COCO `images` entry.
  Json annotations;  // Its annotations, each given the image's id.
};

// ParseImage reads sample `key`'s annotations member `text` (image id: its position by
// default), or says why it cannot be used.
absl::StatusOr<ParsedImage> ParseImage(absl::string_view text, const std::string& key,
                                       int64_t position) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("is not a JSON object");
  ParsedImage out;
  out.id = position;
  if (j.contains("image_id") && !Int(j, "image_id", &out.id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("has a non-integer image_id ", j["image_id"].dump()));
  }
  int64_t width = 0, height = 0;
  if (!Int(j, "width", &width) || !Int(j, "height", &height) || width <= 0 || height <= 0 ||
      width > 65535 || height > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "needs an integer width and height in [1, 65535], got ",
        j.value("width", Json()).dump(), " × ", j.value("height", Json()).dump()));
  }
  out.annotations = j.value("annotations", Json::array());
  if (!out.annotations.is_array()) {
    return absl::InvalidArgumentError("has \"annotations\" that is not a list");
  }
  std::string file_name = key;
  if (j.contains("file_name") && j["file_name"].is_string()) {
    file_name = j["file_name"].get<std::string>();
  }
  out.image = {{"id", out.id}, {"file_name", file_name}, {"width", width}, {"height", height}};
  for (Json& a : out.annotations) {
    if (a.is_object()) a["image_id"] = out.id;
  }
  return out;
}

// NotShards is Open's failure for `option` (a member extension): the data must be shards.
absl::Status NotShards(const absl::Status& s, const std::string& option,
                       const std::string& value, const std::string& data) {
  return absl::Status(s.code(), absl::StrCat(option, " ", value,
                                             " is a member of tar shards, but data ", data,
                                             " did not open as tar shards: ", s.message()));
}

}  // namespace

bool Dataset::IsMemberExtension(const std::string& value) {
  return value.size() >= 2 && value[0] == '.' && value[1] != '.' &&
         value.find('/') == std::string::npos;
}

const SampleMember* Dataset::label_map_member(int64_t i) const {
  if (label_map_members_.empty()) return nullptr;
  const int64_t m = label_map_members_[static_cast<size_t>(i)];
  return m < 0 ? nullptr : &members_[static_cast<size_t>(m)];
}

void Dataset::KeepSamples(const std::vector<int64_t>& keep, const std::vector<size_t>& columns) {
  std::vector<SampleSource> samples;
  std::string text;
  std::vector<uint64_t> ends;
  std::vector<int64_t> map_members;
  std::vector<size_t> images;
  for (int64_t i : keep) {
    const size_t k = static_cast<size_t>(i);
    samples.push_back(std::move(samples_[k]));
    for (size_t c : columns) {
      const absl::string_view value = column(i, c);
      text.append(value.data(), value.size());
      ends.push_back(text.size());
    }
    if (!label_map_members_.empty()) map_members.push_back(label_map_members_[k]);
    if (!annotation_images_.empty()) images.push_back(annotation_images_[k]);
  }
  std::vector<std::string> names;
  for (size_t c : columns) names.push_back(column_names_[c]);
  samples_ = std::move(samples);
  column_names_ = std::move(names);
  column_text_ = std::move(text);
  column_ends_ = std::move(ends);
  label_map_members_ = std::move(map_members);
  annotation_images_ = std::move(images);
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenShardLabelMaps(
    const DatasetOptions& options, const std::string& extension) {
  DatasetOptions o = options;
  o.labels = false;
  absl::StatusOr<std::unique_ptr<Dataset>> opened = Open(o);
  if (!opened.ok()) return NotShards(opened.status(), "label_maps", extension, options.path);
  Dataset& d = **opened;
  const std::string wanted = MemberExtension(extension);
  if (d.shards().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "label_maps ", extension, " names a tar-shard member, but data ", options.path,
        " is not tar shards: give label_maps a directory or a list file"));
  }
  int64_t good = 0;
  d.label_map_members_.assign(d.samples_.size(), -1);
  for (size_t i = 0; i < d.samples_.size(); ++i) {
    SampleSource& s = d.samples_[i];
    if (!s.error.ok() || s.member_count == 0) continue;
    int64_t map = -1, image = -1;
    for (int64_t k = s.first_member; k < s.first_member + s.member_count; ++k) {
      const std::string& ext = d.extensions_[d.members_[static_cast<size_t>(k)].extension];
      if (ext == wanted) {
        if (map < 0) map = k;
      } else if (image < 0 && ext.find('.') == std::string::npos &&
                 HasImageExtension("." + ext)) {
        image = k;
      }
    }
    const std::string& shard = d.shards_[static_cast<size_t>(s.shard)];
    if (map < 0) {
      s.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingLabel,
                            absl::StrCat(shard, ": sample ", s.key, " has no .", wanted,
                                         " member (its label map)"));
      continue;
    }
    if (image < 0) {
      s.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingImage,
                            absl::StrCat(shard, ": sample ", s.key,
                                         " has no image member besides its label map"));
      continue;
    }
    const SampleMember& m = d.members_[static_cast<size_t>(image)];
    if (m.offset != s.offset) {  // The map came first and was taken for the image.
      const std::string& ext = d.extensions_[m.extension];
      s.key = absl::StrCat(s.key.substr(0, s.key.size() - wanted.size()), ext);
      s.offset = m.offset;
      s.size = m.size;
    }
    d.label_map_members_[i] = map;
    ++good;
  }
  if (good == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.path, ": no sample with an image and a .", wanted, " label map member"));
  }
  return opened;
}

absl::StatusOr<std::unique_ptr<Dataset>> Dataset::OpenShardAnnotations(
    const DatasetOptions& options, detection::CocoOptions coco, const std::string& extension,
    const std::string& categories_json, const std::string& categories_file) {
  Json categories;
  if (!categories_file.empty()) {
    absl::StatusOr<Json> read = CategoriesList(categories_json, categories_file);
    if (!read.ok()) return read.status();
    categories = *std::move(read);
  }
  const std::string wanted = MemberExtension(extension);
  DatasetOptions o = options;
  o.labels = false;
  const bool user_column =
      std::find(o.columns.begin(), o.columns.end(), wanted) != o.columns.end();
  if (!user_column) o.columns.push_back(wanted);
  o.column_max_bytes = std::max(o.column_max_bytes, kMaxAnnotationMemberBytes);
  absl::StatusOr<std::unique_ptr<Dataset>> opened = Open(o);
  if (!opened.ok()) return NotShards(opened.status(), "annotations", extension, options.path);
  Dataset& d = **opened;
  if (d.shards().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "annotations ", extension, " names a tar-shard member, but data ", options.path,
        " is not tar shards: give annotations a COCO instances file"));
  }
  const size_t column = static_cast<size_t>(
      std::find(d.column_names_.begin(), d.column_names_.end(), wanted) -
      d.column_names_.begin());

  // One COCO document of every readable member, in sample order.
  Json document = {{"images", Json::array()}, {"annotations", Json::array()},
                   {"categories", Json::array()}};
  std::set<int64_t> category_ids;
  std::map<int64_t, int64_t> sample_of_id;
  for (size_t i = 0; i < d.samples_.size(); ++i) {
    SampleSource& s = d.samples_[i];
    const std::string& shard = d.shards_[static_cast<size_t>(std::max(s.shard, 0))];
    if (!s.error.ok()) {
      if (ErrorReason(s.error) == reason::kMissingColumn &&
          absl::StrContains(s.error.message(), absl::StrCat(" has no .", wanted, " member"))) {
        s.error = SampleError(absl::StatusCode::kNotFound, reason::kMissingLabel,
                              absl::StrCat(shard, ": sample ", s.key, " has no .", wanted,
                                           " member (its annotations)"));
      }
      continue;
    }
    absl::StatusOr<ParsedImage> parsed =
        ParseImage(d.column(static_cast<int64_t>(i), column), s.key, static_cast<int64_t>(i));
    if (parsed.ok() && sample_of_id.count(parsed->id) > 0) {
      parsed = absl::InvalidArgumentError(absl::StrCat(
          "repeats image_id ", parsed->id, " of ",
          d.samples_[static_cast<size_t>(sample_of_id[parsed->id])].key));
    }
    if (!parsed.ok()) {
      s.error = SampleError(absl::StatusCode::kInvalidArgument, reason::kCorrupt,
                            absl::StrCat(shard, ": ", s.key, "'s .", wanted, " member ",
                                         parsed.status().message()));
      continue;
    }
    sample_of_id[parsed->id] = static_cast<int64_t>(i);
    document["images"].push_back(std::move(parsed->image));
    for (Json& a : parsed->annotations) {
      int64_t category = 0;
      if (a.is_object() && Int(a, "category_id", &category)) category_ids.insert(category);
      document["annotations"].push_back(std::move(a));
    }
  }
  if (document["images"].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.path, ": no sample with an image and a readable .", wanted,
        " annotations member"));
  }
  // Categories: the given list (CocoDataset checks it), else the sorted ids seen (labels
  // 1..C in that order), named by their id.
  if (!categories.is_null()) {
    document["categories"] = std::move(categories);
  } else {
    for (int64_t c : category_ids) {
      document["categories"].push_back({{"id", c}, {"name", absl::StrCat(c)}});
    }
  }

  // detection::CocoDataset checks and maps it as it does a file.
  // Shared with the reader function, which CocoDataset keeps: emptied once parsed.
  auto text = std::make_shared<std::string>(document.dump());
  document = Json();
  coco.annotations = absl::StrCat(options.path, " (", extension, " members)");
  coco.images = d.root();
  coco.read_file = [text](const std::string&, int64_t max_bytes, std::string* out) {
    if (static_cast<int64_t>(text->size()) > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the annotations members add up to ", text->size(), " bytes of JSON, over ",
          max_bytes));
    }
    *out = *text;
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<detection::CocoDataset>> parsed =
      detection::CocoDataset::Open(coco);
  *text = std::string();
  if (!parsed.ok()) return parsed.status();
  for (const std::string& line : (*parsed)->skip_messages()) LogInfo(line);

  // Keep the failed samples (skipped every epoch) and those whose image the COCO reader
  // kept (skip_empty drops the empty ones, counted by it as empty_image).
  std::vector<int64_t> image_of_sample(d.samples_.size(), -1);
  for (size_t k = 0; k < (*parsed)->images().size(); ++k) {
    image_of_sample[static_cast<size_t>(sample_of_id.at((*parsed)->images()[k].id))] =
        static_cast<int64_t>(k);
  }
  std::vector<int64_t> keep;
  d.annotation_images_.assign(d.samples_.size(), 0);
  for (size_t i = 0; i < d.samples_.size(); ++i) {
    if (image_of_sample[i] >= 0) d.annotation_images_[i] = static_cast<size_t>(image_of_sample[i]);
    if (!d.samples_[i].error.ok() || image_of_sample[i] >= 0) keep.push_back(static_cast<int64_t>(i));
  }
  // The annotations column stays only when the columns option asked for it.
  std::vector<size_t> columns;
  for (size_t c = 0; c < d.column_names_.size(); ++c) {
    if (c != column || user_column) columns.push_back(c);
  }
  d.KeepSamples(keep, columns);
  d.annotations_ = std::move(*parsed);
  return opened;
}

}  // namespace flowloader
