// detection_dataset.cc: synthetic COCO detection data (see detection_dataset.h).
#include "runtime/detection_dataset.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "runtime/sample_dataset.h"
#include "stages/core/rng.h"
#include "stages/decode/encoder.h"
#include "stages/detection/rle.h"

namespace flowloader {
namespace {

using Json = nlohmann::json;

struct Shape {
  int id;
  const char* name;
  int sides;
};
constexpr Shape kShapes[] = {{1, "triangle", 3}, {3, "quadrilateral", 4}, {7, "pentagon", 5},
                             {12, "hexagon", 6}};

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("mkdir ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string Stamp(const DetectionDatasetOptions& o) {
  return absl::StrCat("flowloader-detection-dataset v1 images=", o.images, " side=", o.min_side,
                      "-", o.max_side, " instances=", o.max_instances, " quality=", o.quality,
                      " noise=", o.noise, " seed=", o.seed,
                      o.keypoints ? " keypoints=3" : "", "\n");
}

// Polygon draws a convex-ish polygon of `sides` vertices inside the cell (x0, y0, cw, ch),
// coordinates rounded to 0.01 px as COCO files write them.
std::vector<double> Polygon(SampleRng& rng, int sides, double x0, double y0, double cw,
                            double ch) {
  const double cx = x0 + cw / 2, cy = y0 + ch / 2;
  const double rx = rng.Uniform(0.25, 0.48) * cw, ry = rng.Uniform(0.25, 0.48) * ch;
  const double turn = rng.Uniform(0, 6.283185307);
  std::vector<double> xy;
  for (int i = 0; i < sides; ++i) {
    const double a = turn + 6.283185307 * (i + rng.Uniform(-0.2, 0.2)) / sides;
    xy.push_back(std::round((cx + rx * std::cos(a)) * 100) / 100);
    xy.push_back(std::round((cy + ry * std::sin(a)) * 100) / 100);
  }
  return xy;
}

}  // namespace

absl::Status GenerateDetectionDataset(const DetectionDatasetOptions& o) {
  if (o.root.empty()) return absl::InvalidArgumentError("detection dataset root is empty");
  if (o.images < 1) return absl::InvalidArgumentError("images must be >= 1");
  if (o.min_side < 64 || o.max_side < o.min_side) {
    return absl::InvalidArgumentError("need 64 <= min_side <= max_side");
  }
  if (o.max_instances < 1 || o.max_instances > 9) {
    return absl::InvalidArgumentError("max_instances must be in [1, 9]");
  }
  const std::string stamp_path = o.root + "/.flowloader-detection";
  const std::string stamp = Stamp(o);
  if (HasStamp(stamp_path, stamp)) return absl::OkStatus();
  if (!o.overwrite) {
    if (absl::Status s = CheckEmptyOrMissing(o.root); !s.ok()) return s;
  }
  for (const std::string& dir : {o.root, o.root + "/images", o.root + "/annotations"}) {
    if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  }
  decode::JpegEncodeOptions jpeg;
  jpeg.quality = o.quality;
  Json images = Json::array(), annotations = Json::array(), categories = Json::array();
  for (const Shape& shape : kShapes) {
    Json category = {{"id", shape.id}, {"name", shape.name}};
    if (o.keypoints) category["keypoints"] = {"vertex", "centre", "unlabelled"};
    categories.push_back(std::move(category));
  }
  int64_t annotation_id = 1;
  for (int i = 0; i < o.images; ++i) {
    SampleRng rng(o.seed, 0, static_cast<uint64_t>(i), 79);
    const int w = static_cast<int>(rng.UniformInt(o.min_side, o.max_side + 1));
    const int h = static_cast<int>(rng.UniformInt(o.min_side, o.max_side + 1));
    Image img = SynthesizeImage(w, h, i % 10, o.noise, o.seed, static_cast<uint64_t>(i));
    const std::string file_name = absl::StrFormat("img_%05d.jpg", i);
    const int64_t image_id = 1000 + i;  // Not the file's index: ids are the file's own.
    images.push_back({{"id", image_id}, {"file_name", file_name}, {"width", w}, {"height", h}});
    const int count = i % 10 == 9 ? 0 : static_cast<int>(rng.UniformInt(1, o.max_instances + 1));
    // Distinct grid cells, in a random order (a partial Fisher-Yates shuffle).
    int cells[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    for (int k = 0; k < count; ++k) std::swap(cells[k], cells[k + rng.UniformInt(0, 9 - k)]);
    std::vector<uint8_t> mask(static_cast<size_t>(w) * h);
    for (int k = 0; k < count; ++k) {
      const Shape& shape = kShapes[rng.UniformInt(0, 4)];
      const double cw = w / 3.0, ch = h / 3.0;
      const std::vector<double> xy =
          Polygon(rng, shape.sides, (cells[k] % 3) * cw, (cells[k] / 3) * ch, cw, ch);
      const detection::Rle rle = detection::RleFromPolygon(xy, h, w);
      std::fill(mask.begin(), mask.end(), 0);
      detection::DecodeRleInto(rle, mask.data());
      uint8_t colour[3];
      for (uint8_t& c : colour) c = static_cast<uint8_t>(rng.UniformInt(0, 256));
      for (size_t p = 0; p < mask.size(); ++p) {
        if (mask[p] != 0) std::memcpy(&img.pixels[3 * p], colour, 3);
      }
      double box[4];
      detection::RleBox(rle, box);
      Json annotation = {{"id", annotation_id++},
                         {"image_id", image_id},
                         {"category_id", shape.id},
                         {"bbox", {box[0], box[1], box[2], box[3]}},
                         {"area", detection::RleArea(rle)},
                         {"iscrowd", 0}};
      if (o.keypoints) {
        annotation["keypoints"] = {xy[0], xy[1], 2, box[0] + box[2] / 2, box[1] + box[3] / 2, 1,
                                   0, 0, 0};
        annotation["num_keypoints"] = 2;
      }
      if (k % 5 == 4) {  // Uncompressed RLE, as COCO writes its crowd regions.
        annotation["iscrowd"] = 1;
        annotation["segmentation"] = {{"counts", rle.counts}, {"size", {h, w}}};
      } else if (k % 3 == 2) {
        annotation["segmentation"] = {{"counts", detection::RleToString(rle)}, {"size", {h, w}}};
      } else {
        annotation["segmentation"] = Json::array({xy});
      }
      annotations.push_back(std::move(annotation));
    }
    absl::StatusOr<std::string> bytes = decode::EncodeJpeg(img.view(), jpeg);
    if (!bytes.ok()) return bytes.status();
    const std::string path = absl::StrCat(o.root, "/images/", file_name);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  const Json root = {{"info", {{"description", "flowloader make-dataset --task=detection"}}},
                     {"images", images},
                     {"annotations", annotations},
                     {"categories", categories}};
  const std::string json_path = o.root + "/annotations/instances.json";
  std::ofstream(json_path) << root.dump();
  std::ofstream(stamp_path) << stamp;
  return absl::OkStatus();
}

}  // namespace flowloader
