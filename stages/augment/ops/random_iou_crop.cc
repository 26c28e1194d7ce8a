// random_iou_crop.cc: torchvision's detection reference RandomIoUCrop(min_scale=0.3,
// max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0, sampler_options=[0.0, 0.1,
// 0.3, 0.5, 0.7, 0.9, 1.0], trials=40) (references/detection/transforms.py at v0.14.0;
// v2's RandomIoUCrop), SSD's crop. forward() loops: draw an option (a minimum IoU; >= 1
// leaves the image as it is); then up to `trials` times draw a crop (each side a fraction
// of the image in [min_scale, max_scale], the aspect ratio within bounds, a random
// position), keep it when some box's centre lies strictly inside it and one of those
// boxes overlaps it with IoU >= the option. The crop keeps only the boxes whose centre
// is inside (with their labels, masks, iscrowd and area), shifted and clamped to it.
//
// Params (DrawWithTargets): top, left, height, width of the crop, or none (left as is).
// The draw looks at the boxes; without boxes no crop qualifies, so the loop ends at the
// leave-as-is option, as torchvision's would. The loop is capped at kMaxRounds options
// (then the image is left as is), so no input can make it spin.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

constexpr int kMaxRounds = 1000;

struct Options {
  double min_scale = 0, max_scale = 0, min_aspect = 0, max_aspect = 0;
  std::vector<double> sampler;  // Minimum IoUs; >= 1 leaves the image as it is.
  int trials = 0;
};

// Corners copies the boxes as xyxy.
std::vector<float> Corners(const detection::Targets& t) {
  std::vector<float> b = t.boxes;
  if (t.format != detection::BoxFormat::kXYXY) {
    detection::ConvertBoxes(t.format, detection::BoxFormat::kXYXY, &b);
  }
  return b;
}

// InsideCrop marks the boxes whose centre lies strictly inside (left, top, right, bottom).
std::vector<bool> InsideCrop(const std::vector<float>& b, double left, double top, double right,
                             double bottom) {
  std::vector<bool> inside(b.size() / 4);
  for (size_t k = 0; k < inside.size(); ++k) {
    const double cx = 0.5 * (b[4 * k] + b[4 * k + 2]), cy = 0.5 * (b[4 * k + 1] + b[4 * k + 3]);
    inside[k] = left < cx && cx < right && top < cy && cy < bottom;
  }
  return inside;
}

// Iou is torchvision.ops.box_iou of one box with the crop.
double Iou(const float* b, double left, double top, double right, double bottom) {
  const double area_b = (static_cast<double>(b[2]) - b[0]) * (static_cast<double>(b[3]) - b[1]);
  const double area_c = (right - left) * (bottom - top);
  const double w = std::max(0.0, std::min<double>(b[2], right) - std::max<double>(b[0], left));
  const double h = std::max(0.0, std::min<double>(b[3], bottom) - std::max<double>(b[1], top));
  const double inter = w * h;
  return inter / (area_b + area_c - inter);
}

class RandomIoUCrop : public Op {
 public:
  explicit RandomIoUCrop(Options o) : o_(std::move(o)) {}

  OpSize OutputSize(OpSize) const override { return {}; }  // Depends on the draw.
  OpSize OutputBound(OpSize in) const override { return in; }  // A crop, or the image.
  TargetEffect Targets() const override { return TargetEffect::kMoves; }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    DrawWithTargets(width, height, detection::Targets(), rng, params);
  }

  void DrawWithTargets(int width, int height, const detection::Targets& targets,
                       SampleRng& rng, OpParams* params) const override {
    const std::vector<float> boxes = Corners(targets);
    for (int round = 0; round < kMaxRounds; ++round) {
      const double min_iou =
          o_.sampler[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(o_.sampler.size())))];
      if (min_iou >= 1.0) return;  // Leave as is.
      for (int trial = 0; trial < o_.trials; ++trial) {
        const double r0 = o_.min_scale + (o_.max_scale - o_.min_scale) * rng.Uniform(0, 1);
        const double r1 = o_.min_scale + (o_.max_scale - o_.min_scale) * rng.Uniform(0, 1);
        const int new_w = static_cast<int>(width * r0), new_h = static_cast<int>(height * r1);
        if (new_w <= 0 || new_h <= 0) continue;  // (Python would divide by zero here.)
        const double aspect = static_cast<double>(new_w) / new_h;
        if (!(o_.min_aspect <= aspect && aspect <= o_.max_aspect)) continue;
        const double u0 = rng.Uniform(0, 1), u1 = rng.Uniform(0, 1);
        const int left = static_cast<int>((width - new_w) * u0);
        const int top = static_cast<int>((height - new_h) * u1);
        const int right = left + new_w, bottom = top + new_h;
        if (left == right || top == bottom) continue;
        const std::vector<bool> inside = InsideCrop(boxes, left, top, right, bottom);
        double best = -1;
        for (size_t k = 0; k < inside.size(); ++k) {
          if (inside[k]) best = std::max(best, Iou(&boxes[4 * k], left, top, right, bottom));
        }
        if (best < 0 || best < min_iou) continue;  // No centre inside, or too little overlap.
        params->Push(top);
        params->Push(left);
        params->Push(new_h);
        params->Push(new_w);
        return;
      }
    }
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n == 0) return absl::OkStatus();
    const Image& src = *image.rgb;
    if (absl::Status s = Check(p, src.width, src.height); !s.ok()) return s;
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    const int h = static_cast<int>(p.v[2]), w = static_cast<int>(p.v[3]);
    Image& dst = *image.spare;
    dst.Resize(w, h, 3);
    for (int y = 0; y < h; ++y) {
      std::copy_n(src.pixels.data() + static_cast<size_t>(top + y) * src.stride() +
                      3 * static_cast<size_t>(left),
                  3 * static_cast<size_t>(w), dst.Row(y));
    }
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // Gather: the crop's maps (the masks are cropped alike; no params: the image as is).
  bool GatherMovesMasks() const override { return true; }
  bool Gather(const OpParams& p, int width, int height, GatherMaps* maps) const override {
    const bool crop = p.n != 0;
    if (crop && !Check(p, width, height).ok()) return false;
    const int top = crop ? static_cast<int>(p.v[0]) : 0, left = crop ? static_cast<int>(p.v[1]) : 0;
    const int h = crop ? static_cast<int>(p.v[2]) : height, w = crop ? static_cast<int>(p.v[3]) : width;
    maps->x_src.resize(static_cast<size_t>(w));
    for (int x = 0; x < w; ++x) maps->x_src[x] = left + x;
    maps->y_src.resize(static_cast<size_t>(h));
    for (int y = 0; y < h; ++y) maps->y_src[y] = top + y;
    return true;
  }

  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    if (p.n == 0) return absl::OkStatus();
    const int top = static_cast<int>(p.v[0]), left = static_cast<int>(p.v[1]);
    const int h = static_cast<int>(p.v[2]), w = static_cast<int>(p.v[3]);
    targets->Keep(InsideCrop(Corners(*targets), left, top, left + w, top + h));
    return internal::MoveTargetsBy(detection::Geometry::Crop(top, left, h, w), targets);
  }

 private:
  static absl::Status Check(const OpParams& p, int width, int height) {
    if (p.n != 4) return absl::InvalidArgumentError(absl::StrCat("needs 0 or 4 params, got ", p.n));
    const double top = p.v[0], left = p.v[1], h = p.v[2], w = p.v[3];
    if (!(top >= 0 && left >= 0 && h >= 1 && w >= 1 && top + h <= height && left + w <= width)) {
      return absl::InvalidArgumentError(absl::StrCat("crop (", top, ", ", left, ", ", h, ", ", w,
                                                     ") outside the ", width, "x", height,
                                                     " image"));
    }
    return absl::OkStatus();
  }

  const Options o_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_iou_crop",
              "SSD's crop: a random crop overlapping some box by at least a random minimum "
              "IoU; keeps the boxes whose centre it contains",
              {{"min_scale", "0.3", "a number in (0, 1]", "smallest side fraction"},
               {"max_scale", "1.0", "a number in [min_scale, 1]", "largest side fraction"},
               {"min_aspect_ratio", "0.5", "a number in (0, 100]", "smallest width / height"},
               {"max_aspect_ratio", "2.0", "a number in [min_aspect_ratio, 100]",
                "largest width / height"},
               {"sampler_options", "[0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]",
                "a list of numbers in [0, inf)",
                "the minimum IoUs drawn from (>= 1: leave the image as it is)"},
               {"trials", "40", "an integer in [1, 1000]", "crops tried per drawn IoU"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_iou_crop";
      Options o;
      // Number reads a scalar argument within (lo, hi] (lo_open) or [lo, hi].
      auto number = [&](const std::string& arg, double lo, double hi, bool lo_open,
                        const std::string& what, double* out) -> absl::Status {
        const OpValue& v = args.Get(arg);
        if (!(v.IsNumber() && (lo_open ? v.numbers[0] > lo : v.numbers[0] >= lo) &&
              v.numbers[0] <= hi)) {
          return ArgError(op, arg, what, v);
        }
        *out = v.numbers[0];
        return absl::OkStatus();
      };
      if (absl::Status s = number("min_scale", 0, 1, true, "a number in (0, 1]", &o.min_scale);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = number("max_scale", o.min_scale, 1, false,
                                  "a number in [min_scale, 1]", &o.max_scale);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = number("min_aspect_ratio", 0, 100, true, "a number in (0, 100]",
                                  &o.min_aspect);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = number("max_aspect_ratio", o.min_aspect, 100, false,
                                  "a number in [min_aspect_ratio, 100]", &o.max_aspect);
          !s.ok()) {
        return s;
      }
      const OpValue& sampler = args.Get("sampler_options");
      bool ok = !sampler.numbers.empty() && sampler.word.empty() && !sampler.is_none;
      for (double v : sampler.numbers) ok = ok && v >= 0 && std::isfinite(v);
      if (!ok) return ArgError(op, "sampler_options", "a list of numbers >= 0", sampler);
      o.sampler = sampler.numbers;
      const OpValue& trials = args.Get("trials");
      if (!(trials.IsNumber() && trials.numbers[0] >= 1 && trials.numbers[0] <= 1000 &&
            trials.numbers[0] == std::floor(trials.numbers[0]))) {
        return ArgError(op, "trials", "an integer in [1, 1000]", trials);
      }
      o.trials = static_cast<int>(trials.numbers[0]);
      return std::unique_ptr<Op>(new RandomIoUCrop(std::move(o)));
    });

}  // namespace
}  // namespace flowloader::augment
