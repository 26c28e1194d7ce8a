// random_zoom_out.cc: torchvision's detection reference RandomZoomOut(fill=None,
// side_range=(1.0, 4.0), p=0.5) (references/detection/transforms.py at v0.14.0; v2's
// RandomZoomOut): the image is placed at a random spot of a canvas r times its size
// (r uniform in side_range), the rest filled with `fill`. Boxes shift with the image;
// masks are padded with 0 (as v2 pads them; the v0.14 reference leaves masks alone).
//
// Params, as forward() draws them: left, top, right, bottom (the padding):
//   r = side_range[0] + u · (side_range[1] − side_range[0]); canvas = int(size · r);
//   left = int((canvas_w − w) · u1), top = int((canvas_h − h) · u2).
// The output's size depends on the draw, so a list with it needs a fixed-size op after
// it (resize to [h, w], fixed_size_crop, ...).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/internal/numpy_pad.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using internal::NumpyPad;
using internal::PadMode;

// A canvas larger than this (768 MiB of RGB) is refused for the sample rather than
// allocated: side_range 4 on a 6000 × 4000 photo stays below it.
constexpr int64_t kMaxCanvasPixels = int64_t{1} << 28;

class RandomZoomOut : public Op {
 public:
  RandomZoomOut(double lo, double hi, std::array<uint8_t, 3> fill)
      : lo_(lo), hi_(hi), fill_(fill) {}

  OpSize OutputSize(OpSize) const override { return {}; }  // Depends on the draw.
  // The canvas is int(side · r), r ≤ side_range[1]; identity where r draws 1.
  OpSize OutputBound(OpSize in) const override {
    if (!in.Known()) return {};
    const double r = std::max(1.0, std::max(lo_, hi_));
    return {static_cast<int>(std::ceil(in.width * r)), static_cast<int>(std::ceil(in.height * r))};
  }
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  // The canvas drawn (params: left, top, right, bottom padding), so that the memory check
  // counts it before Apply allocates it: up to 16 times the input's pixels at side_range
  // 4 (a 4000x3000 photo's canvas is 549 MiB).
  OpSize WorkingSize(const OpParams& p, OpSize in) const override {
    if (!Check(p).ok()) return in;
    return {in.width + static_cast<int>(p.v[0] + p.v[2]),
            in.height + static_cast<int>(p.v[1] + p.v[3])};
  }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const double r = lo_ + rng.Uniform(0, 1) * (hi_ - lo_);
    const int canvas_w = static_cast<int>(width * r), canvas_h = static_cast<int>(height * r);
    const double u1 = rng.Uniform(0, 1), u2 = rng.Uniform(0, 1);
    const int left = static_cast<int>((canvas_w - width) * u1);
    const int top = static_cast<int>((canvas_h - height) * u2);
    params->Push(left);
    params->Push(top);
    params->Push(canvas_w - (left + width));
    params->Push(canvas_h - (top + height));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (absl::Status s = Check(p); !s.ok()) return s;
    const Image& src = *image.rgb;
    const int left = static_cast<int>(p.v[0]), top = static_cast<int>(p.v[1]);
    const int64_t canvas = (int64_t{left} + src.width + static_cast<int64_t>(p.v[2])) *
                           (int64_t{top} + src.height + static_cast<int64_t>(p.v[3]));
    if (canvas > kMaxCanvasPixels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the canvas would be ", canvas, " pixels, more than ", kMaxCanvasPixels,
          ": lower side_range or the image size"));
    }
    Image& dst = *image.spare;
    dst.Resize(left + src.width + static_cast<int>(p.v[2]), top + src.height + static_cast<int>(p.v[3]), 3);
    // The canvas: one row of fill, copied to every row; then the image's rows over it
    // (row copies, not a per-pixel gather: the canvas is up to 16 times the image).
    uint8_t* first = dst.Row(0);
    for (int x = 0; x < dst.width; ++x) std::memcpy(first + 3 * static_cast<size_t>(x), fill_.data(), 3);
    for (int y = 1; y < dst.height; ++y) std::memcpy(dst.Row(y), first, dst.stride());
    for (int y = 0; y < src.height; ++y) {
      std::memcpy(dst.Row(top + y) + 3 * static_cast<size_t>(left),
                  src.pixels.data() + static_cast<size_t>(y) * src.stride(), src.stride());
    }
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

  // Gather: the padding's maps (PadTargets moves the masks through the same ones).
  bool GatherMovesMasks() const override { return true; }
  bool Gather(const OpParams& p, int width, int height, GatherMaps* maps) const override {
    if (!Check(p).ok() || (int64_t{width} + static_cast<int64_t>(p.v[0] + p.v[2])) *
                                  (int64_t{height} + static_cast<int64_t>(p.v[1] + p.v[3])) >
                              kMaxCanvasPixels) {
      return false;
    }
    Maps(p, width, height, &maps->x_src, &maps->y_src);
    maps->fill = fill_;
    return true;
  }

  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    thread_local std::vector<int> map_x, map_y;
    Maps(p, targets->canvas_width, targets->canvas_height, &map_x, &map_y);
    internal::PadTargets(-static_cast<int>(p.v[1]), -static_cast<int>(p.v[0]), map_x, map_y,
                         targets);
    return absl::OkStatus();
  }

 private:
  static absl::Status Check(const OpParams& p) {
    if (p.n != 4) return absl::InvalidArgumentError(absl::StrCat("needs 4 params, got ", p.n));
    for (int k = 0; k < 4; ++k) {
      if (!(p.v[k] >= 0 && p.v[k] <= 65536)) {
        return absl::InvalidArgumentError(absl::StrCat("bad padding ", p.v[k]));
      }
    }
    return absl::OkStatus();
  }
  static void Maps(const OpParams& p, int width, int height, std::vector<int>* map_x,
                   std::vector<int>* map_y) {
    NumpyPad(width, static_cast<int>(p.v[0]), static_cast<int>(p.v[2]), PadMode::kConstant,
             map_x);
    NumpyPad(height, static_cast<int>(p.v[1]), static_cast<int>(p.v[3]), PadMode::kConstant,
             map_y);
  }

  const double lo_, hi_;
  const std::array<uint8_t, 3> fill_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_zoom_out",
              "places the image at a random spot of a canvas up to side_range times its "
              "size, filled with fill (SSD's zoom out; boxes and masks follow)",
              {{"side_range", "[1.0, 4.0]", "[min, max] with 1 <= min <= max <= 16",
                "canvas side as a multiple of the image's"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]", "the canvas colour"}},
              0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const OpValue& range = args.Get("side_range");
      if (!(range.is_list && range.numbers.size() == 2 && range.numbers[0] >= 1 &&
            range.numbers[0] <= range.numbers[1] && range.numbers[1] <= 16)) {
        return ArgError("random_zoom_out", "side_range",
                        "[min, max] with 1 <= min <= max <= 16", range);
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill("random_zoom_out", args, "fill", &fill); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new RandomZoomOut(range.numbers[0], range.numbers[1], fill));
    });

}  // namespace
}  // namespace flowloader::augment
