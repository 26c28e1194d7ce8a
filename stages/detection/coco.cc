// coco.cc: reads a COCO instances file (nlohmann/json) into per-image instances, checking
// every value once at Open so that MakeTargets, per sample, only copies and rasterises.
#include "stages/detection/coco.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "stages/core/bounded_read.h"
#include "stages/detection/json_int.h"

namespace flowloader::detection {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxSkipMessages = 20;

// Int reads an integer field (json_int.h).
bool Int(const Json& object, const char* key, int64_t* out) {
  return detection::JsonInt(object, key, out);
}

// ValueText writes a JSON value for a message, cut at 80 characters.
std::string ValueText(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

}  // namespace

void CocoDataset::Skip(const std::string& reason, const std::string& message) {
  ++skipped_[reason];
  if (skip_messages_.size() < kMaxSkipMessages) {
    skip_messages_.push_back(absl::StrCat(reason, ": ", message));
  }
}

std::string CocoDataset::FullPath(const CocoImage& image) const {
  if (!image.file_name.empty() && image.file_name[0] == '/') return image.file_name;
  if (options_.images.empty() || options_.images.back() == '/') {
    return options_.images + image.file_name;
  }
  return absl::StrCat(options_.images, "/", image.file_name);
}

namespace {

absl::Status TooLargeJson(const CocoOptions& options, const std::string& size) {
  return absl::ResourceExhaustedError(absl::StrCat(
      options.annotations, ": ", size, " is more than max_annotation_bytes ",
      options.max_json_bytes, " (parsing holds about 10× the file in memory; raise "
      "max_annotation_bytes if the machine has the memory)"));
}

// ReadAnnotations reads the JSON through options.read_file (remote paths), else from the
// local file system.
absl::Status ReadAnnotations(const CocoOptions& options, std::string* text) {
  if (options.read_file) {
    absl::Status s = options.read_file(options.annotations, options.max_json_bytes, text);
    if (s.code() == absl::StatusCode::kResourceExhausted) return TooLargeJson(options, "the file");
    // The store's message names the URL; say which setting it is.
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("annotations: ", s.message()));
    return s;
  }
  // A device is no COCO file, and reading one to max_json_bytes (/dev/zero: 1 GiB, 2 GB of
  // memory for 10 s) only to refuse it helps no one; a pipe (<(zcat ...)) is read.
  struct stat st;
  if (::stat(options.annotations.c_str(), &st) == 0 &&
      (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "annotations ", options.annotations, " is a device, not a COCO instances file"));
  }
  // A local file, read to at most max_json_bytes whatever its size: a device or a pipe
  // has no size (/dev/zero was read until memory ran out).
  const BoundedRead read = ReadBounded(options.annotations, options.max_json_bytes, text);
  switch (read.outcome) {
    case BoundedRead::Outcome::kRead:
      return absl::OkStatus();
    case BoundedRead::Outcome::kCannotOpen:
      return absl::ErrnoToStatus(
          read.error, absl::StrCat("annotations ", options.annotations, " cannot be read"));
    case BoundedRead::Outcome::kDirectory:
      return absl::InvalidArgumentError(
          absl::StrCat("annotations ", options.annotations,
                       " is a directory, not a COCO instances file"));
    case BoundedRead::Outcome::kTooLarge:
      return TooLargeJson(options, read.size >= 0
                                       ? absl::StrCat(read.size, " bytes")
                                       : "the file (not a regular file: it has no size)");
    case BoundedRead::Outcome::kCannotRead:
      break;
  }
  return absl::DataLossError(absl::StrCat(options.annotations, ": cannot be read"));
}

// PolygonIsRasterisable: RleFromPolygon (cocoapi's rleFrPoly) traces the boundary at 5×
// scale in int, a point per step: a coordinate beyond int / 5 overflowed it (1e300 hung a
// worker) and a boundary a million pixels long holds millions of points. A part is used
// when its coordinates are within 4 × 65536 of the origin and its boundary (the longer
// axis of each edge) is at most 16 × (width + height) of a width × height image: an outline
// that long is not one of an object in the image. Such parts are bad_polygon parts.
bool PolygonIsRasterisable(const std::vector<double>& xy, int width, int height) {
  constexpr double kFar = 4.0 * 65536;
  const double max_length = 16.0 * (static_cast<double>(width) + height);
  double length = 0;
  const size_t points = xy.size() / 2;
  for (size_t j = 0; j < points; ++j) {
    const double x = xy[2 * j], y = xy[2 * j + 1];
    if (!(std::fabs(x) <= kFar && std::fabs(y) <= kFar)) return false;
    const size_t k = (j + 1) % points;
    length += std::max(std::fabs(xy[2 * k] - x), std::fabs(xy[2 * k + 1] - y));
  }
  return length <= max_length;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CocoDataset>> CocoDataset::Open(const CocoOptions& options) {
  if (options.annotations.empty()) {
    return absl::InvalidArgumentError("annotations: the COCO instances JSON is required");
  }
  if (options.first_label < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("first_label must be >= 0, got ", options.first_label));
  }
  if (options.max_instances < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_instances must be >= 1, got ", options.max_instances));
  }
  std::string text;
  if (absl::Status s = ReadAnnotations(options, &text); !s.ok()) return s;
  std::unique_ptr<CocoDataset> dataset(new CocoDataset(options));
  absl::Status status = dataset->Parse(text);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat(options.annotations, ": ", status.message()));
  }
  return dataset;
}

absl::Status CocoDataset::Parse(const std::string& text) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // what() starts with the library's id ("[json.exception.parse_error.101] "): not for a
    // user, who reads the rest ("parse error at line 1, column 1: syntax error ...").
    absl::string_view what = e.what();
    if (const size_t id_end = what.find("] "); what.front() == '[' && id_end != what.npos) {
      what.remove_prefix(id_end + 2);
    }
    return absl::InvalidArgumentError(absl::StrCat("not JSON (byte ", e.byte, "): ", what));
  }
  if (!root.is_object() || !root.contains("images") || !root["images"].is_array()) {
    return absl::InvalidArgumentError("not a COCO instances file: no \"images\" list");
  }
  const std::string& file = options_.annotations;

  // Categories, sorted by id: label = first_label + rank.
  if (root.contains("categories") && root["categories"].is_array()) {
    for (const Json& c : root["categories"]) {
      CocoCategory category;
      if (!c.is_object() || !Int(c, "id", &category.id)) {
        return absl::InvalidArgumentError(
            absl::StrCat("a category without an integer id: ", ValueText(c)));
      }
      if (c.contains("name") && c["name"].is_string()) category.name = c["name"].get<std::string>();
      categories_.push_back(std::move(category));
    }
  }
  std::sort(categories_.begin(), categories_.end(),
            [](const CocoCategory& a, const CocoCategory& b) { return a.id < b.id; });
  std::unordered_map<int64_t, int64_t> label_of;
  for (size_t i = 0; i < categories_.size(); ++i) {
    categories_[i].label = options_.first_label + static_cast<int64_t>(i);
    if (!label_of.emplace(categories_[i].id, categories_[i].label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("category id ", categories_[i].id, " appears twice"));
    }
  }

  // Images.
  std::unordered_map<int64_t, size_t> image_of;
  for (const Json& j : root["images"]) {
    CocoImage image;
    int64_t width = 0, height = 0;
    if (!j.is_object() || !Int(j, "id", &image.id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("an image without an integer id: ", ValueText(j)));
    }
    if (!j.contains("file_name") || !j["file_name"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("image ", image.id, " has no file_name"));
    }
    image.file_name = j["file_name"].get<std::string>();
    if (!Int(j, "width", &width) || !Int(j, "height", &height) || width <= 0 || height <= 0 ||
        width > 65535 || height > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "image ", image.id, " (", image.file_name, ") needs a width and height in [1, 65535], got ",
          ValueText(j.value("width", Json())), " × ", ValueText(j.value("height", Json()))));
    }
    image.width = static_cast<int>(width);
    image.height = static_cast<int>(height);
    auto [it, inserted] = image_of.emplace(image.id, images_.size());
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("image id ", image.id, " appears twice (",
                                                     images_[it->second].file_name, " and ",
                                                     image.file_name, ")"));
    }
    images_.push_back(std::move(image));
  }

  // Annotations.
  const Json empty = Json::array();
  const Json& annotations =
      root.contains("annotations") && root["annotations"].is_array() ? root["annotations"] : empty;
  for (const Json& a : annotations) {
    int64_t image_id = 0, category_id = 0;
    if (!a.is_object() || !Int(a, "image_id", &image_id)) {
      Skip("unknown_image", absl::StrCat(file, ": annotation without an image_id: ", ValueText(a)));
      continue;
    }
    auto image_it = image_of.find(image_id);
    if (image_it == image_of.end()) {
      Skip("unknown_image", absl::StrCat(file, ": annotation ", ValueText(a.value("id", Json())),
                                         " names image id ", image_id, ", not in \"images\""));
      continue;
    }
    CocoImage& image = images_[image_it->second];
    const std::string where = absl::StrCat(file, ": image ", image.id, " (", image.file_name, ")");
    if (!Int(a, "category_id", &category_id) || label_of.count(category_id) == 0) {
      Skip("unknown_category", absl::StrCat(where, ": category_id ",
                                            ValueText(a.value("category_id", Json())),
                                            " is not in \"categories\""));
      continue;
    }
    // bbox: four finite numbers, xywh, clamped to the image (torchvision's reference
    // ConvertCocoPolysToMask clamps the same way).
    const Json bbox = a.value("bbox", Json());
    double xywh[4];
    bool box_ok = bbox.is_array() && bbox.size() == 4;
    for (int i = 0; box_ok && i < 4; ++i) {
      box_ok = bbox[i].is_number() && std::isfinite(bbox[i].get<double>());
      if (box_ok) xywh[i] = bbox[i].get<double>();
    }
    if (!box_ok) {
      Skip("bad_box", absl::StrCat(where, ": bbox ", ValueText(bbox)));
      continue;
    }
    if (xywh[2] <= 0 || xywh[3] <= 0) {
      Skip("degenerate_box", absl::StrCat(where, ": bbox ", ValueText(bbox), " has no area"));
      continue;
    }
    double x1 = xywh[0], y1 = xywh[1], x2 = xywh[0] + xywh[2], y2 = xywh[1] + xywh[3];
    if (x1 < 0 || y1 < 0 || x2 > image.width || y2 > image.height) {
      ++skipped_["box_clamped"];
      x1 = std::clamp(x1, 0.0, static_cast<double>(image.width));
      x2 = std::clamp(x2, 0.0, static_cast<double>(image.width));
      y1 = std::clamp(y1, 0.0, static_cast<double>(image.height));
      y2 = std::clamp(y2, 0.0, static_cast<double>(image.height));
      if (x2 <= x1 || y2 <= y1) {
        Skip("degenerate_box", absl::StrCat(where, ": bbox ", ValueText(bbox),
                                            " lies outside the ", image.width, "×",
                                            image.height, " image"));
        continue;
      }
    }
    CocoInstance instance;
    instance.box[0] = static_cast<float>(x1);
    instance.box[1] = static_cast<float>(y1);
    instance.box[2] = static_cast<float>(x2);
    instance.box[3] = static_cast<float>(y2);
    instance.category_id = category_id;
    instance.label = label_of[category_id];
    int64_t iscrowd = 0;
    if (Int(a, "iscrowd", &iscrowd)) instance.iscrowd = iscrowd != 0;
    if (a.contains("area") && a["area"].is_number()) {
      instance.area = a["area"].get<float>();
    } else {
      instance.area = static_cast<float>((x2 - x1) * (y2 - y1));
    }

    // Segmentation.
    const Json segmentation = a.value("segmentation", Json());
    if (segmentation.is_array() && !segmentation.empty()) {
      int bad_parts = 0;
      for (const Json& part : segmentation) {
        bool ok = part.is_array() && part.size() >= 6 && part.size() % 2 == 0;
        std::vector<double> xy;
        for (size_t i = 0; ok && i < part.size(); ++i) {
          ok = part[i].is_number() && std::isfinite(part[i].get<double>());
          if (ok) xy.push_back(part[i].get<double>());
        }
        ok = ok && PolygonIsRasterisable(xy, image.width, image.height);
        if (ok) {
          instance.polygons.push_back(std::move(xy));
        } else {
          ++bad_parts;
        }
      }
      if (instance.polygons.empty()) {
        Skip("bad_polygon", absl::StrCat(where, ": segmentation ", ValueText(segmentation),
                                         " has no polygon of >= 3 points within 4 × 65536 "
                                         "and an outline at most 16 × (width + height)"));
        continue;
      }
      if (bad_parts > 0) ++skipped_["bad_polygon_part"];
    } else if (segmentation.is_object()) {
      const Json size = segmentation.value("size", Json());
      const Json counts = segmentation.value("counts", Json());
      absl::Status rle_status;
      if (!size.is_array() || size.size() != 2 || !size[0].is_number_integer() ||
          !size[1].is_number_integer() || size[0].get<int64_t>() != image.height ||
          size[1].get<int64_t>() != image.width) {
        rle_status = absl::InvalidArgumentError(absl::StrCat(
            "RLE size ", ValueText(size), " is not the image's [", image.height, ", ",
            image.width, "]"));
      } else if (counts.is_string()) {
        absl::StatusOr<Rle> rle =
            RleFromString(counts.get<std::string>(), image.height, image.width);
        if (rle.ok()) {
          instance.rle = std::move(*rle);
        } else {
          rle_status = rle.status();
        }
      } else if (counts.is_array()) {
        instance.rle = Rle{image.height, image.width, {}};
        for (const Json& c : counts) {
          if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > UINT32_MAX) {
            rle_status = absl::InvalidArgumentError(absl::StrCat("RLE count ", ValueText(c)));
            break;
          }
          instance.rle.counts.push_back(static_cast<uint32_t>(c.get<int64_t>()));
        }
      } else {
        rle_status = absl::InvalidArgumentError("RLE without counts");
      }
      if (rle_status.ok()) rle_status = CheckRle(instance.rle);
      if (!rle_status.ok()) {
        Skip("bad_rle", absl::StrCat(where, ": ", rle_status.message()));
        continue;
      }
      instance.has_rle = true;
    }
    // Keypoints: 3 × P finite numbers, P the file's.
    const Json keypoints = a.value("keypoints", Json());
    if (!keypoints.is_null()) {
      const size_t n = keypoints.is_array() ? keypoints.size() : 0;
      bool ok = n > 0 && n % 3 == 0 &&
                (num_keypoints_ == 0 || n == 3 * static_cast<size_t>(num_keypoints_));
      for (size_t i = 0; ok && i < n; ++i) {
        ok = keypoints[i].is_number() && std::isfinite(keypoints[i].get<double>());
        if (ok) instance.keypoints.push_back(keypoints[i].get<float>());
      }
      if (!ok) {
        Skip("bad_keypoints",
             absl::StrCat(where, ": keypoints ", ValueText(keypoints), " are not ",
                          num_keypoints_ > 0 ? absl::StrCat(3 * num_keypoints_) : "3 × P",
                          " finite numbers"));
        continue;
      }
      if (num_keypoints_ == 0) num_keypoints_ = static_cast<int>(n / 3);
    }
    if (static_cast<int64_t>(image.instances.size()) >= options_.max_instances) {
      Skip("too_many_instances",
           absl::StrCat(where, ": more than max_instances ", options_.max_instances,
                        " annotations; the rest are dropped"));
      continue;
    }
    image.instances.push_back(std::move(instance));
  }

  if (options_.skip_empty) {
    std::vector<CocoImage> kept;
    for (CocoImage& image : images_) {
      if (image.instances.empty()) {
        Skip("empty_image", absl::StrCat(file, ": image ", image.id, " (", image.file_name,
                                          ") has no annotation (skip_empty)"));
      } else {
        kept.push_back(std::move(image));
      }
    }
    images_.swap(kept);
  }
  if (images_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no image left to read", options_.skip_empty ? " (every one is empty; skip_empty)" : ""));
  }
  for (const CocoImage& image : images_) {
    max_instances_ = std::max<int64_t>(max_instances_, image.instances.size());
    max_plane_bytes_ = std::max<int64_t>(max_plane_bytes_, int64_t{image.width} * image.height);
  }
  return absl::OkStatus();
}

// AppendMaskWindow rasterises one instance's segmentation (its RLE and polygons, merged)
// into the smallest window holding it (its tight box; 0 × 0 when empty) at the end of
// out->masks, and appends the window to out->mask_windows.
static void AppendMaskWindow(const CocoInstance& instance, int height, int width,
                             Targets* out) {
  thread_local std::vector<Rle> polygons;
  polygons.clear();
  for (const std::vector<double>& polygon : instance.polygons) {
    polygons.push_back(RleFromPolygon(polygon, height, width));
  }
  std::vector<const Rle*> parts;
  if (instance.has_rle) parts.push_back(&instance.rle);
  for (const Rle& rle : polygons) parts.push_back(&rle);
  int x0 = width, y0 = height, x1 = 0, y1 = 0;  // The union of the parts' boxes, [x0, x1).
  for (const Rle* part : parts) {
    double box[4];
    RleBox(*part, box);
    if (box[2] <= 0 || box[3] <= 0) continue;
    x0 = std::min(x0, static_cast<int>(box[0]));
    y0 = std::min(y0, static_cast<int>(box[1]));
    x1 = std::max(x1, static_cast<int>(box[0] + box[2]));
    y1 = std::max(y1, static_cast<int>(box[1] + box[3]));
  }
  if (x1 <= x0 || y1 <= y0) x0 = y0 = x1 = y1 = 0;
  const size_t at = out->masks.size();
  out->masks.resize(at + static_cast<size_t>(x1 - x0) * static_cast<size_t>(y1 - y0), 0);
  for (const Rle* part : parts) {
    DecodeRleIntoWindow(*part, x0, y0, x1 - x0, y1 - y0, out->masks.data() + at);
  }
  out->mask_windows.insert(out->mask_windows.end(), {x0, y0, x1 - x0, y1 - y0});
}

void CocoDataset::MakeTargets(size_t i, bool masks, Targets* out, bool windowed) const {
  const CocoImage& image = images_[i];
  out->Clear();
  out->image_id = image.id;
  out->canvas_width = image.width;
  out->canvas_height = image.height;
  out->format = BoxFormat::kXYXY;
  const size_t k = image.instances.size();
  out->boxes.resize(4 * k);
  out->labels.resize(k);
  out->iscrowd.resize(k);
  out->area.resize(k);
  out->has_masks = masks;
  out->masks_windowed = masks && windowed;
  if (masks && !windowed) out->masks.assign(k * out->mask_plane(), 0);
  out->has_keypoints = num_keypoints_ > 0;
  out->num_keypoints = num_keypoints_;
  if (out->has_keypoints) out->keypoints.assign(k * out->keypoint_stride(), 0.0f);
  for (size_t j = 0; j < k; ++j) {
    const CocoInstance& instance = image.instances[j];
    std::copy(instance.box, instance.box + 4, &out->boxes[4 * j]);
    out->labels[j] = instance.label;
    out->iscrowd[j] = instance.iscrowd;
    out->area[j] = instance.area;
    if (!instance.keypoints.empty()) {
      std::copy(instance.keypoints.begin(), instance.keypoints.end(),
                out->keypoints.begin() + static_cast<int64_t>(j * out->keypoint_stride()));
    }
    if (!masks) continue;
    if (windowed) {
      AppendMaskWindow(instance, image.height, image.width, out);
      continue;
    }
    uint8_t* plane = out->masks.data() + j * out->mask_plane();
    if (instance.has_rle) DecodeRleInto(instance.rle, plane);
    for (const std::vector<double>& polygon : instance.polygons) {
      DecodeRleInto(RleFromPolygon(polygon, image.height, image.width), plane);
    }
  }
}

}  // namespace flowloader::detection
