// trivial_augment_wide.cc: torchvision's TrivialAugmentWide(num_magnitude_bins=31,
// interpolation=nearest, fill=None): one sub-op of 14, uniformly, at a uniform
// magnitude bin, with a random sign where the sub-op is signed.
//
// Params: op index (in torchvision's _augmentation_space order), magnitude bin (0 for
// the sub-ops without magnitudes, which draw none), negate (1 when torchvision's
// torch.randint(2) sign draw is 1; 0 for unsigned sub-ops, which draw none).
#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using policy::Space;
using policy::SubOp;

constexpr char kName[] = "trivial_augment_wide";

// TrivialAugmentWide._augmentation_space, in its order.
constexpr Space kSpace[] = {
    {SubOp::kIdentity, Space::kNone, 0, false},
    {SubOp::kShearX, Space::kLinear, 0.99, true},
    {SubOp::kShearY, Space::kLinear, 0.99, true},
    {SubOp::kTranslateX, Space::kLinear, 32.0, true},
    {SubOp::kTranslateY, Space::kLinear, 32.0, true},
    {SubOp::kRotate, Space::kLinear, 135.0, true},
    {SubOp::kBrightness, Space::kLinear, 0.99, true},
    {SubOp::kColor, Space::kLinear, 0.99, true},
    {SubOp::kContrast, Space::kLinear, 0.99, true},
    {SubOp::kSharpness, Space::kLinear, 0.99, true},
    {SubOp::kPosterize, Space::kPosterize, 6, false},
    {SubOp::kSolarize, Space::kSolarize, 0, false},
    {SubOp::kAutoContrast, Space::kNone, 0, false},
    {SubOp::kEqualize, Space::kNone, 0, false},
};
constexpr int kOps = sizeof(kSpace) / sizeof(kSpace[0]);

class TrivialAugmentWide : public Op {
 public:
  TrivialAugmentWide(int bins, policy::Geometry geometry) : bins_(bins), geometry_(geometry) {}

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    // forward(): op_index, then a bin if the op has magnitudes, then a sign if signed.
    const int op = static_cast<int>(rng.UniformInt(0, kOps));
    const Space& space = kSpace[op];
    const int bin = space.kind != Space::kNone ? static_cast<int>(rng.UniformInt(0, bins_)) : 0;
    const int negate = space.is_signed ? static_cast<int>(rng.UniformInt(0, 2)) : 0;
    params->Push(op);
    params->Push(bin);
    params->Push(negate);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const int op = static_cast<int>(p.v[0]), bin = static_cast<int>(p.v[1]);
    if (p.n != 3 || op < 0 || op >= kOps || bin < 0 || bin >= bins_) {
      return absl::InvalidArgumentError("trivial_augment_wide: params are op, bin, negate");
    }
    const Space& space = kSpace[op];
    double magnitude =
        policy::SpaceMagnitude(space, bins_, bin, image.rgb->width, image.rgb->height);
    if (space.is_signed && p.v[2] != 0) magnitude = -magnitude;
    return policy::ApplySubOp(space.op, magnitude, geometry_, image);
  }

  bool PointTables(const OpParams& p, int width, int height,
                   const ValueCounts& histogram,
                   uint8_t (&luts)[3][256]) const override {
    const int op = static_cast<int>(p.v[0]), bin = static_cast<int>(p.v[1]);
    if (p.n != 3 || op < 0 || op >= kOps || bin < 0 || bin >= bins_) return false;
    const Space& space = kSpace[op];
    double magnitude = policy::SpaceMagnitude(space, bins_, bin, width, height);
    if (space.is_signed && p.v[2] != 0) magnitude = -magnitude;
    return policy::SubOpTables(space.op, magnitude, histogram, luts);
  }

  bool ApplyRows(const OpParams& p, const RowImage& src, const RowImage& dst) const override {
    const int op = static_cast<int>(p.v[0]), bin = static_cast<int>(p.v[1]);
    if (p.n != 3 || op < 0 || op >= kOps || bin < 0 || bin >= bins_) return false;
    const Space& space = kSpace[op];
    double magnitude = policy::SpaceMagnitude(space, bins_, bin, src.width, src.height);
    if (space.is_signed && p.v[2] != 0) magnitude = -magnitude;
    return policy::SubOpRows(space.op, magnitude, geometry_, src, dst);
  }

 private:
  const int bins_;
  const policy::Geometry geometry_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "TrivialAugment Wide: one of 14 sub-ops (identity, shear, translate, rotate, "
              "brightness, color, contrast, sharpness, posterize, solarize, autocontrast, "
              "equalize) at a random magnitude; uint8 pixels",
              {{"num_magnitude_bins", "31", "an integer in [2, 1024]",
                "the number of magnitude values"},
               {"interpolation", "nearest", "nearest, bilinear or bicubic",
                "the filter of the geometric sub-ops (PIL's)"},
               {"fill", "null", "null, a number or [r, g, b] in [0, 255]",
                "the colour outside the moved image (null: black)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      int bins = 0;
      if (absl::Status s = policy::ReadInt(kName, args, "num_magnitude_bins", 2, 1024, &bins);
          !s.ok()) {
        return s;
      }
      policy::Geometry geometry;
      if (absl::Status s = policy::ReadGeometry(kName, args, &geometry); !s.ok()) return s;
      return std::unique_ptr<Op>(new TrivialAugmentWide(bins, geometry));
    });

}  // namespace
}  // namespace flowloader::augment
