// random_rotation.cc: torchvision's RandomRotation(degrees, interpolation=nearest,
// expand=False, center=None, fill=0): an angle drawn uniformly from [min, max]
// (RandomRotation.get_params), then F.rotate, which is PIL's Image.rotate
// (kernels/geometry.cc, PIL's bytes). With expand the output's size depends on the
// angle, so a list must end its geometry with a fixed-size op after it.
#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "stages/augment/ops/internal/affine_targets.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomRotation : public Op {
 public:
  RandomRotation(std::pair<double, double> degrees, Interpolation interpolation, bool expand,
                 std::array<uint8_t, 3> fill, bool has_center, std::array<double, 2> center)
      : degrees_(degrees), interpolation_(interpolation), expand_(expand), fill_(fill),
        has_center_(has_center), center_(center) {}

  OpSize OutputSize(OpSize in) const override { return expand_ ? OpSize{} : in; }
  // With expand, any angle's canvas fits the input's diagonal (WorkingSize's + 2).
  OpSize OutputBound(OpSize in) const override {
    if (!expand_ || !in.Known()) return expand_ ? OpSize{} : in;
    const int d = static_cast<int>(std::ceil(std::hypot(in.width, in.height))) + 2;
    return {d, d};
  }
  // With expand, the rotated corners' bounding box (kernels::Rotate's, plus its rounding).
  OpSize WorkingSize(const OpParams& p, OpSize in) const override {
    if (!expand_ || p.n < 1) return in;
    const double r = p.v[0] * 3.14159265358979323846 / 180.0;
    const double c = std::fabs(std::cos(r)), s = std::fabs(std::sin(r));
    return {static_cast<int>(std::min(2e9, std::ceil(in.width * c + in.height * s) + 2)),
            static_cast<int>(std::min(2e9, std::ceil(in.width * s + in.height * c) + 2))};
  }

  // Params: angle (RandomRotation.get_params).
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    params->Push(rng.Uniform(degrees_.first, degrees_.second));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n < 1) return absl::InvalidArgumentError("needs its angle");
    kernels::Rotate(*image.rgb, p.v[0], interpolation_, expand_, fill_, image.spare, Center());
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }
  // Nearest: PIL's engines straight on Pillow's rows (the eager path).
  bool ApplyRows(const OpParams& p, const RowImage& src, const RowImage& dst) const override {
    return p.n >= 1 && interpolation_ == Interpolation::kNearest &&
           kernels::RotateNearestRows(src, p.v[0], expand_, fill_, dst, Center());
  }

  // Boxes, masks and label maps move with the same angle (affine_targets.h); with expand
  // the canvas grows as the image does.
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    if (p.n < 1) return absl::InvalidArgumentError("needs its angle");
    return internal::AffineTargets(Move(p), targets);
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams& p, LabelPlane& plane) const override {
    if (p.n < 1) return absl::InvalidArgumentError("needs its angle");
    return internal::AffineLabels(Move(p), plane);
  }

 private:
  const double* Center() const { return has_center_ ? center_.data() : nullptr; }

  internal::AffineMove Move(const OpParams& p) const {
    internal::AffineMove m;
    m.rotate = true;
    m.angle = p.v[0];
    m.expand = expand_;
    m.has_center = has_center_;  // About center=[x, y]: the pixels' own map.
    m.center[0] = center_[0];
    m.center[1] = center_[1];
    return m;
  }

  const std::pair<double, double> degrees_;
  const Interpolation interpolation_;
  const bool expand_;
  const std::array<uint8_t, 3> fill_;
  const bool has_center_;
  const std::array<double, 2> center_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_rotation",
              "rotates by an angle drawn uniformly from degrees, counter-clockwise, about the "
              "centre",
              {{"degrees", "0", "a number d >= 0 (giving [-d, d]) or [min, max]",
                "the angle's range in degrees (required in torchvision)"},
               {"interpolation", "nearest", "nearest, bilinear or bicubic",
                "PIL's transform filter"},
               {"expand", "false", "true or false",
                "grow the output to hold the whole rotated image"},
               {"center", "null", "null or [x, y] in pixels",
                "the rotation's centre (null: the image centre); targets turn about it too"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the colour of pixels from outside the image"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_rotation";
      absl::StatusOr<std::pair<double, double>> degrees =
          internal::ReadDegrees(op, args, "degrees");
      if (!degrees.ok()) return degrees.status();
      Interpolation interpolation;
      if (absl::Status s = ReadInterpolation(op, args, "interpolation", &interpolation);
          !s.ok()) {
        return s;
      }
      bool expand = false;
      if (absl::Status s = internal::ReadBool(op, args, "expand", &expand); !s.ok()) return s;
      bool has_center = false;
      std::array<double, 2> center{};
      if (absl::Status s = internal::ReadCenter(op, args, &has_center, &center); !s.ok()) {
        return s;
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill(op, args, "fill", &fill); !s.ok()) return s;
      return std::unique_ptr<Op>(new RandomRotation(*degrees, interpolation, expand, fill, has_center, center));
    });

}  // namespace
}  // namespace flowloader::augment
