// random_affine.cc: torchvision's RandomAffine(degrees, translate=None, scale=None,
// shear=None, interpolation=nearest, fill=0, center=None): RandomAffine.get_params
// draws angle, (tx, ty), scale, (shear_x, shear_y) in that order; F.affine applies them
// about the centre with PIL's Image.transform (kernels/geometry.cc, PIL's bytes).
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "stages/augment/internal/crop_math.h"
#include "stages/augment/ops/internal/affine_targets.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

struct AffineRanges {
  std::pair<double, double> degrees;
  bool translate = false;
  double max_tx = 0, max_ty = 0;  // Fractions of width and height.
  bool scale = false;
  std::pair<double, double> scale_range{1, 1};
  int shears = 0;  // 0, 2 (x only) or 4 (x and y) values.
  double shear[4] = {};
};

class RandomAffine : public Op {
 public:
  RandomAffine(AffineRanges r, Interpolation interpolation, std::array<uint8_t, 3> fill,
               bool has_center, std::array<double, 2> center)
      : r_(r), interpolation_(interpolation), fill_(fill), has_center_(has_center),
        center_(center) {}

  // Params: angle, tx, ty, scale, shear_x, shear_y (RandomAffine.get_params, with
  // img_size = [width, height]).
  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    params->Push(rng.Uniform(r_.degrees.first, r_.degrees.second));
    double tx = 0, ty = 0;
    if (r_.translate) {
      const double max_dx = r_.max_tx * width, max_dy = r_.max_ty * height;
      tx = internal::PyRound(rng.Uniform(-max_dx, max_dx));
      ty = internal::PyRound(rng.Uniform(-max_dy, max_dy));
    }
    params->Push(tx);
    params->Push(ty);
    params->Push(r_.scale ? rng.Uniform(r_.scale_range.first, r_.scale_range.second) : 1.0);
    double shear_x = 0, shear_y = 0;
    if (r_.shears > 0) shear_x = rng.Uniform(r_.shear[0], r_.shear[1]);
    if (r_.shears == 4) shear_y = rng.Uniform(r_.shear[2], r_.shear[3]);
    params->Push(shear_x);
    params->Push(shear_y);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (!Valid(p)) return absl::InvalidArgumentError("needs 6 params, scale > 0");
    kernels::Affine(*image.rgb, p.v[0], p.v[1], p.v[2], p.v[3], p.v[4], p.v[5], interpolation_,
                    fill_, image.spare, Center());
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }
  // Nearest: PIL's engines straight on Pillow's rows (the eager path).
  bool ApplyRows(const OpParams& p, const RowImage& src, const RowImage& dst) const override {
    return Valid(p) && interpolation_ == Interpolation::kNearest &&
           kernels::AffineNearestRows(src, p.v[0], p.v[1], p.v[2], p.v[3], p.v[4], p.v[5],
                                      fill_, dst, Center());
  }

  // Boxes, masks and label maps move with the same drawn parameters (affine_targets.h).
  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams& p, detection::Targets* targets) const override {
    if (!Valid(p)) return absl::InvalidArgumentError("needs 6 params, scale > 0");
    return internal::AffineTargets(Move(p), targets);
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams& p, LabelPlane& plane) const override {
    if (!Valid(p)) return absl::InvalidArgumentError("needs 6 params, scale > 0");
    return internal::AffineLabels(Move(p), plane);
  }

 private:
  const double* Center() const { return has_center_ ? center_.data() : nullptr; }

  static bool Valid(const OpParams& p) { return p.n >= 6 && p.v[3] > 0; }
  internal::AffineMove Move(const OpParams& p) const {
    internal::AffineMove m;
    m.has_center = has_center_;  // About center=[x, y]: the pixels' own map.
    m.center[0] = center_[0];
    m.center[1] = center_[1];
    m.angle = p.v[0];
    m.translate_x = p.v[1];
    m.translate_y = p.v[2];
    m.scale = p.v[3];
    m.shear_x = p.v[4];
    m.shear_y = p.v[5];
    return m;
  }

  const AffineRanges r_;
  const Interpolation interpolation_;
  const std::array<uint8_t, 3> fill_;
  const bool has_center_;
  const std::array<double, 2> center_;
};

// ReadShear: _setup_angle(shear, req_sizes=(2, 4)): a number s >= 0 gives x in [-s, s],
// [min, max] x's range, [xmin, xmax, ymin, ymax] both; each range min <= max.
absl::Status ReadShear(const std::string& op, const OpArgs& args, AffineRanges* r) {
  const OpValue& v = args.Get("shear");
  if (v.is_none) return absl::OkStatus();
  const char* what = "null, a number >= 0, [min, max] or [xmin, xmax, ymin, ymax] "
                     "(each min <= max, within (-90, 90))";
  std::vector<double> s;
  if (v.IsNumber() && v.numbers[0] >= 0) {
    s = {-v.numbers[0], v.numbers[0]};
  } else if (v.is_list && (v.numbers.size() == 2 || v.numbers.size() == 4)) {
    s = v.numbers;
  } else {
    return ArgError(op, "shear", what, v);
  }
  for (size_t i = 0; i < s.size(); i += 2) {
    // Past ±90° the shear's tangent and cosine blow up (torchvision does not check).
    if (!(s[i] <= s[i + 1] && s[i] > -90 && s[i + 1] < 90)) {
      return ArgError(op, "shear", what, v);
    }
  }
  r->shears = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) r->shear[i] = s[i];
  return absl::OkStatus();
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_affine",
              "rotates, translates, scales and shears about the centre by amounts drawn "
              "uniformly from the given ranges",
              {{"degrees", "0", "a number d >= 0 (giving [-d, d]) or [min, max]",
                "the rotation's range in degrees (required in torchvision)"},
               {"translate", "null", "null or [a, b], each in [0, 1]",
                "largest shift as a fraction of width (a) and height (b)"},
               {"scale", "null", "null or [min, max], 0 < min <= max", "the scale's range"},
               {"shear", "null", "null, a number s >= 0, [min, max] or [xmin, xmax, ymin, ymax]",
                "shear angles' ranges in degrees (a number or two values: x only)"},
               {"interpolation", "nearest", "nearest, bilinear or bicubic",
                "PIL's transform filter"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the colour of pixels from outside the image"},
               {"center", "null", "null or [x, y] in pixels",
                "the centre (null: the image centre); targets move about it too"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_affine";
      AffineRanges r;
      absl::StatusOr<std::pair<double, double>> degrees =
          internal::ReadDegrees(op, args, "degrees");
      if (!degrees.ok()) return degrees.status();
      r.degrees = *degrees;
      const OpValue& t = args.Get("translate");
      if (!t.is_none) {
        if (!(t.is_list && t.numbers.size() == 2 && t.numbers[0] >= 0 && t.numbers[0] <= 1 &&
              t.numbers[1] >= 0 && t.numbers[1] <= 1)) {
          return ArgError(op, "translate", "null or [a, b], each in [0, 1]", t);
        }
        r.translate = true;
        r.max_tx = t.numbers[0];
        r.max_ty = t.numbers[1];
      }
      const OpValue& s = args.Get("scale");
      if (!s.is_none) {
        if (!(s.is_list && s.numbers.size() == 2 && s.numbers[0] > 0 &&
              s.numbers[0] <= s.numbers[1])) {
          return ArgError(op, "scale", "null or [min, max] with 0 < min <= max", s);
        }
        r.scale = true;
        r.scale_range = {s.numbers[0], s.numbers[1]};
      }
      if (absl::Status st = ReadShear(op, args, &r); !st.ok()) return st;
      Interpolation interpolation;
      if (absl::Status st = ReadInterpolation(op, args, "interpolation", &interpolation);
          !st.ok()) {
        return st;
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status st = internal::ReadFill(op, args, "fill", &fill); !st.ok()) return st;
      bool has_center = false;
      std::array<double, 2> center{};
      if (absl::Status st = internal::ReadCenter(op, args, &has_center, &center); !st.ok()) {
        return st;
      }
      return std::unique_ptr<Op>(new RandomAffine(r, interpolation, fill, has_center, center));
    });

}  // namespace
}  // namespace flowloader::augment
