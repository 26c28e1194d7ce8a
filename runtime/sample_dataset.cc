#include "runtime/sample_dataset.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/rng.h"
#include "stages/decode/encoder.h"

namespace flowloader {
namespace {

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("mkdir ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string Stamp(const SampleDatasetOptions& o) {
  return absl::StrCat("flowloader-sample-dataset v1 classes=", o.classes,
                      " per_class=", o.images_per_class, " short=", o.min_short_side, "-",
                      o.max_short_side, " quality=", o.quality, " noise=", o.noise,
                      " seed=", o.seed, "\n");
}

uint8_t Clamp8(double v) {
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : std::lround(v)));
}

}  // namespace

Image SynthesizeImage(int width, int height, int class_index, double noise, uint64_t seed,
                      uint64_t index) {
  SampleRng rng(seed, static_cast<uint64_t>(class_index), index, /*stream=*/77);
  Image img;
  img.Resize(width, height, 3);
  // Class tint: each class has its own hue so classes are tellable apart.
  const double hue = class_index * 2.399963;  // Golden angle: well-spread hues.
  const double tint[3] = {0.5 + 0.35 * std::cos(hue), 0.5 + 0.35 * std::cos(hue + 2.094),
                          0.5 + 0.35 * std::cos(hue + 4.189)};
  // Low-frequency background: a few random plane waves per channel.
  struct Wave {
    double fx, fy, phase, amp;
  };
  Wave waves[3][3];
  for (auto& channel : waves) {
    for (Wave& w : channel) {
      w = Wave{rng.Uniform(-6, 6) / width, rng.Uniform(-6, 6) / height,
               rng.Uniform(0, 6.283), rng.Uniform(20, 50)};
    }
  }
  // Blobs: soft-edged ellipses, like objects.
  struct Blob {
    double cx, cy, rx, ry, color[3], edge;
  };
  const int blob_count = static_cast<int>(rng.UniformInt(3, 9));
  std::vector<Blob> blobs(static_cast<size_t>(blob_count));
  for (Blob& b : blobs) {
    b.cx = rng.Uniform(0, width);
    b.cy = rng.Uniform(0, height);
    b.rx = rng.Uniform(0.05, 0.35) * width;
    b.ry = rng.Uniform(0.05, 0.35) * height;
    for (double& c : b.color) c = rng.Uniform(20, 235);
    b.edge = rng.Uniform(0.02, 0.3);
  }
  // Texture: a fine high-frequency pattern inside some blobs (fabric, fur, leaves).
  const double texture_freq = rng.Uniform(0.3, 1.2);
  for (int y = 0; y < height; ++y) {
    uint8_t* row = img.Row(y);
    for (int x = 0; x < width; ++x) {
      double px[3];
      for (int c = 0; c < 3; ++c) {
        double v = 255.0 * tint[c];
        for (const Wave& w : waves[c]) v += w.amp * std::sin(6.283 * (w.fx * x + w.fy * y) + w.phase);
        px[c] = v;
      }
      for (const Blob& b : blobs) {
        const double dx = (x - b.cx) / b.rx, dy = (y - b.cy) / b.ry;
        const double d = std::sqrt(dx * dx + dy * dy);
        double alpha = (1.0 - d) / b.edge;  // Soft edge of relative width b.edge.
        if (alpha <= 0) continue;
        if (alpha > 1) alpha = 1;
        const double tex = 18.0 * std::sin(texture_freq * (x + 0.7 * y)) * (b.edge < 0.1);
        for (int c = 0; c < 3; ++c) px[c] = px[c] * (1 - alpha) + (b.color[c] + tex) * alpha;
      }
      for (int c = 0; c < 3; ++c) {
        // Sensor-like noise: sum of two uniforms ~ triangular, std ≈ noise.
        const double n = (rng.Uniform(-1, 1) + rng.Uniform(-1, 1)) * noise * 1.2247;
        row[3 * x + c] = Clamp8(px[c] + n);
      }
    }
  }
  return img;
}

absl::Status CheckEmptyOrMissing(const std::string& root) {
  DIR* dir = ::opendir(root.c_str());
  if (dir == nullptr) return absl::OkStatus();  // Missing (MakeDir reports other trouble).
  std::string first;
  int entries = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (entries++ == 0) first = name;
  }
  ::closedir(dir);
  if (entries == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      root, " is not empty (", entries, " entries, e.g. '", first,
      "') and holds no sample dataset made with these options: choose a new --out, or pass "
      "--overwrite to write into it"));
}

bool HasStamp(const std::string& stamp_path, const std::string& stamp) {
  std::ifstream in(stamp_path);
  std::stringstream existing;
  existing << in.rdbuf();
  return in && existing.str() == stamp;
}

absl::Status GenerateSampleDataset(const SampleDatasetOptions& o) {
  if (o.root.empty()) return absl::InvalidArgumentError("sample dataset root is empty");
  if (o.classes < 1 || o.images_per_class < 1) {
    return absl::InvalidArgumentError("classes and images_per_class must be >= 1");
  }
  if (o.min_short_side < 8 || o.max_short_side < o.min_short_side) {
    return absl::InvalidArgumentError("need 8 <= min_short_side <= max_short_side");
  }
  const std::string stamp_path = o.root + "/.flowloader-sample";
  const std::string stamp = Stamp(o);
  if (HasStamp(stamp_path, stamp)) return absl::OkStatus();
  if (!o.overwrite) {
    if (absl::Status s = CheckEmptyOrMissing(o.root); !s.ok()) return s;
  }
  if (absl::Status s = MakeDir(o.root); !s.ok()) return s;
  decode::JpegEncodeOptions jpeg;
  jpeg.quality = o.quality;
  for (int c = 0; c < o.classes; ++c) {
    const std::string dir = absl::StrFormat("%s/class_%03d", o.root, c);
    if (absl::Status s = MakeDir(dir); !s.ok()) return s;
    for (int i = 0; i < o.images_per_class; ++i) {
      SampleRng rng(o.seed, static_cast<uint64_t>(c), static_cast<uint64_t>(i), 78);
      const int short_side = static_cast<int>(rng.UniformInt(o.min_short_side, o.max_short_side + 1));
      const double aspect = rng.Uniform(1.0, 1.5);
      const int long_side = static_cast<int>(short_side * aspect);
      const bool landscape = rng.Bernoulli(0.7);
      const int w = landscape ? long_side : short_side;
      const int h = landscape ? short_side : long_side;
      const Image img = SynthesizeImage(w, h, c, o.noise, o.seed, static_cast<uint64_t>(i));
      absl::StatusOr<std::string> bytes = decode::EncodeJpeg(img.view(), jpeg);
      if (!bytes.ok()) return bytes.status();
      const std::string path = absl::StrFormat("%s/img_%05d.jpg", dir, i);
      std::ofstream out(path, std::ios::binary);
      out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
      if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    }
  }
  std::ofstream(stamp_path) << stamp;
  return absl::OkStatus();
}

}  // namespace flowloader
