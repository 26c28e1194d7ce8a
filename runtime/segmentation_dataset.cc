// segmentation_dataset.cc: synthetic semantic segmentation data (segmentation_dataset.h).
#include "runtime/segmentation_dataset.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/sample_dataset.h"
#include "stages/core/rng.h"
#include "stages/decode/encoder.h"
#include "stages/detection/rle.h"

namespace flowloader {
namespace {

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("mkdir ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string Stamp(const SegmentationDatasetOptions& o) {
  return absl::StrCat("flowloader-segmentation-dataset v1 images=", o.images,
                      " side=", o.min_side, "-", o.max_side, " shapes=", o.max_shapes,
                      " quality=", o.quality, " noise=", o.noise, " seed=", o.seed, "\n");
}

// Polygon is `sides` vertices around the centre of cell (x0, y0, cw, ch).
std::vector<double> Polygon(SampleRng& rng, int sides, double x0, double y0, double cw,
                            double ch) {
  const double cx = x0 + cw / 2, cy = y0 + ch / 2;
  const double rx = rng.Uniform(0.25, 0.45) * cw, ry = rng.Uniform(0.25, 0.45) * ch;
  const double turn = rng.Uniform(0, 6.283185307);
  std::vector<double> xy;
  for (int i = 0; i < sides; ++i) {
    const double a = turn + 6.283185307 * (i + rng.Uniform(-0.2, 0.2)) / sides;
    xy.push_back(cx + rx * std::cos(a));
    xy.push_back(cy + ry * std::sin(a));
  }
  return xy;
}

// EncodeLabelPng writes `labels` as an 8-bit grayscale PNG (ADE20K's form: each
// pixel's value is its class).
absl::StatusOr<std::string> EncodeLabelPng(const std::vector<uint8_t>& labels, int w, int h) {
  Image gray;
  gray.Resize(w, h, 1);
  std::memcpy(gray.pixels.data(), labels.data(), labels.size());
  decode::PngEncodeOptions png;
  png.compression_level = 1;
  return decode::EncodePng(gray.view(), png);
}

}  // namespace

absl::Status GenerateSegmentationDataset(const SegmentationDatasetOptions& o) {
  if (o.root.empty()) return absl::InvalidArgumentError("segmentation dataset root is empty");
  if (o.images < 1) return absl::InvalidArgumentError("images must be >= 1");
  if (o.min_side < 64 || o.max_side < o.min_side) {
    return absl::InvalidArgumentError("need 64 <= min_side <= max_side");
  }
  if (o.max_shapes < 1 || o.max_shapes > 9) {
    return absl::InvalidArgumentError("max_shapes must be in [1, 9]");
  }
  const std::string stamp_path = o.root + "/.flowloader-segmentation";
  const std::string stamp = Stamp(o);
  if (HasStamp(stamp_path, stamp)) return absl::OkStatus();
  if (!o.overwrite) {
    if (absl::Status s = CheckEmptyOrMissing(o.root); !s.ok()) return s;
  }
  for (const std::string& dir : {o.root, o.root + "/images", o.root + "/label_maps"}) {
    if (absl::Status s = MakeDir(dir); !s.ok()) return s;
  }
  decode::JpegEncodeOptions jpeg;
  jpeg.quality = o.quality;
  std::string list;
  for (int i = 0; i < o.images; ++i) {
    SampleRng rng(o.seed, 0, static_cast<uint64_t>(i), 83);
    const int w = static_cast<int>(rng.UniformInt(o.min_side, o.max_side + 1));
    const int h = static_cast<int>(rng.UniformInt(o.min_side, o.max_side + 1));
    Image img = SynthesizeImage(w, h, i % 10, o.noise, o.seed, static_cast<uint64_t>(i));
    std::vector<uint8_t> labels(static_cast<size_t>(w) * h, 0), mask(labels.size());
    const int count = static_cast<int>(rng.UniformInt(1, o.max_shapes + 1));
    int cells[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    for (int k = 0; k < count; ++k) std::swap(cells[k], cells[k + rng.UniformInt(0, 9 - k)]);
    for (int k = 0; k < count; ++k) {
      const int kind = static_cast<int>(rng.UniformInt(0, kSegmentationClasses - 1));
      const double cw = w / 3.0, ch = h / 3.0;
      const std::vector<double> xy =
          Polygon(rng, 3 + kind, (cells[k] % 3) * cw, (cells[k] / 3) * ch, cw, ch);
      std::fill(mask.begin(), mask.end(), 0);
      // The polygon's pixels by COCO's rasterisation, row-major.
      detection::DecodeRleInto(detection::RleFromPolygon(xy, h, w), mask.data());
      uint8_t colour[3];
      for (uint8_t& c : colour) c = static_cast<uint8_t>(rng.UniformInt(0, 256));
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
          const size_t p = static_cast<size_t>(y) * w + x;
          if (mask[p] == 0) continue;
          std::memcpy(&img.pixels[3 * p], colour, 3);
          labels[p] = static_cast<uint8_t>(1 + kind);
        }
      }
    }
    // The void ring: background pixels 4-adjacent to a shape become 255.
    std::vector<uint8_t> ring = labels;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const size_t p = static_cast<size_t>(y) * w + x;
        if (labels[p] != 0) continue;
        const bool near = (x > 0 && labels[p - 1] != 0) || (x + 1 < w && labels[p + 1] != 0) ||
                          (y > 0 && labels[p - w] != 0) || (y + 1 < h && labels[p + w] != 0);
        if (near) ring[p] = 255;
      }
    }
    const std::string name = absl::StrFormat("img_%05d", i);
    absl::StatusOr<std::string> jpg = decode::EncodeJpeg(img.view(), jpeg);
    if (!jpg.ok()) return jpg.status();
    if (absl::Status s = WriteBytes(absl::StrCat(o.root, "/images/", name, ".jpg"), *jpg);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::string> png = EncodeLabelPng(ring, w, h);
    if (!png.ok()) return png.status();
    if (absl::Status s = WriteBytes(absl::StrCat(o.root, "/label_maps/", name, ".png"), *png);
        !s.ok()) {
      return s;
    }
    absl::StrAppend(&list, "images/", name, ".jpg label_maps/", name, ".png\n");
  }
  if (absl::Status s = WriteBytes(o.root + "/train.txt", list); !s.ok()) return s;
  std::ofstream(stamp_path) << stamp;
  return absl::OkStatus();
}

}  // namespace flowloader
