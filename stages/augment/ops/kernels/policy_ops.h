// policy_ops.h: the sub-ops of the augment policies (trivial_augment_wide, rand_augment,
// auto_augment): torchvision 0.14's _apply_op in transforms/autoaugment.py on the shared
// colour and geometry kernels, and the magnitude tables its _augmentation_space builds
// with torch.linspace (in float32, rounded as torch rounds them, so that a bin's
// magnitude is torchvision's to the bit: int(16.0) and int(15.999999) translate
// differently).
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_POLICY_OPS_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_POLICY_OPS_H_

#include <array>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "stages/augment/ops/op.h"
#include "stages/augment/transform.h"

namespace flowloader::augment::policy {

// SubOp names _apply_op's op_name values.
enum class SubOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};

// Geometry is what the geometric sub-ops are given: torchvision's interpolation (PIL's
// nearest, bilinear or bicubic) and fill (None = 0; numbers are int()ed, as
// F_pil._parse_fill does for an RGB image).
struct Geometry {
  Interpolation interpolation = Interpolation::kNearest;
  std::array<uint8_t, 3> fill{0, 0, 0};
};

// ApplySubOp is _apply_op(img, op, magnitude, interpolation, fill) on image.rgb: the
// magnitude as _apply_op receives it (already signed; translations int()ed here, as
// _apply_op does). Geometric sub-ops write image.spare and swap it in.
absl::Status ApplySubOp(SubOp op, double magnitude, const Geometry& geometry, OpImage& image);

// SubOpTables: for the sub-ops that are a table per channel (Identity, Brightness,
// Posterize, Solarize, Invert; AutoContrast and Equalize from the counts `histogram`
// gives), ApplySubOp's values as tables (Op::PointTables), and true; else false.
bool SubOpTables(SubOp op, double magnitude,
                 const Op::ValueCounts& histogram,
                 uint8_t (&luts)[3][256]);

// SubOpRows: for the geometric sub-ops with nearest interpolation (ShearX/Y,
// TranslateX/Y, Rotate), ApplySubOp's pixels written from `src`'s rows into `dst`'s
// (Op::ApplyRows), and true; else false, nothing written.
bool SubOpRows(SubOp op, double magnitude, const Geometry& geometry, const RowImage& src,
               const RowImage& dst);

// Shear is F.affine(img, shear=[shear_x, shear_y] degrees, center=[0, 0]) (ShearX/Y's
// call): kernels::Affine turns about the image centre, so the top-left centre becomes
// the translation that puts the matrix's constant terms back to 0.
void Shear(double shear_x, double shear_y, const Geometry& geometry, OpImage& image);

// Translate is F.affine(img, translate=[dx, dy]) about the centre, without int(): timm's
// relative translations move by fractional pixels.
void Translate(double dx, double dy, const Geometry& geometry, OpImage& image);

// TorchLinspace is float(torch.linspace(start, end, steps)[index]) on the CPU: float32
// arithmetic, the first half counted from start and the second from end (fused
// multiply-add), except the elements of the leading 16-element blocks, which torch's
// AVX2 kernel makes as base + k * step from the first element of each 8-lane vector.
double TorchLinspace(double start, double end, int steps, int index);

// TorchPosterizeBits is (base - (torch.arange(bins) / ((bins - 1) / divisions)).round()
// .int())[index]: float32 division, rounded half to even.
int TorchPosterizeBits(int base, double divisions, int bins, double index);

// Space is one entry of an _augmentation_space: the sub-op, how a magnitude bin becomes
// its magnitude, and whether _apply_op's caller draws a sign for it.
struct Space {
  enum Kind {
    kNone,       // torch.tensor(0.0): no bin is drawn, the magnitude is 0.
    kLinear,     // torch.linspace(0, max, bins).
    kWidth,      // torch.linspace(0, max * width, bins) (TranslateX: 150 / 331 * width).
    kHeight,     // torch.linspace(0, max * height, bins).
    kSolarize,   // torch.linspace(255, 0, bins).
    kPosterize,  // 8 - (arange(bins) / ((bins - 1) / max)).round().int().
  };
  SubOp op;
  Kind kind;
  double max;
  bool is_signed;
};

// kTorchvisionSpace is AutoAugment._augmentation_space, indexed by SubOp (Invert last);
// RandAugment's is the same without Invert.
inline constexpr Space kTorchvisionSpace[] = {
    {SubOp::kIdentity, Space::kNone, 0, false},
    {SubOp::kShearX, Space::kLinear, 0.3, true},
    {SubOp::kShearY, Space::kLinear, 0.3, true},
    {SubOp::kTranslateX, Space::kWidth, 150.0 / 331.0, true},
    {SubOp::kTranslateY, Space::kHeight, 150.0 / 331.0, true},
    {SubOp::kRotate, Space::kLinear, 30.0, true},
    {SubOp::kBrightness, Space::kLinear, 0.9, true},
    {SubOp::kColor, Space::kLinear, 0.9, true},
    {SubOp::kContrast, Space::kLinear, 0.9, true},
    {SubOp::kSharpness, Space::kLinear, 0.9, true},
    {SubOp::kPosterize, Space::kPosterize, 4, false},
    {SubOp::kSolarize, Space::kSolarize, 0, false},
    {SubOp::kAutoContrast, Space::kNone, 0, false},
    {SubOp::kEqualize, Space::kNone, 0, false},
    {SubOp::kInvert, Space::kNone, 0, false},
};
inline constexpr int kTorchvisionSpaceSize =
    sizeof(kTorchvisionSpace) / sizeof(kTorchvisionSpace[0]);
static_assert(kTorchvisionSpaceSize == static_cast<int>(SubOp::kInvert) + 1);

// SpaceMagnitude is the entry's magnitude at `level` for a width x height image:
// torchvision's magnitudes[level] for an integer level; between bins (rand_augment's
// magnitude_std) the same line, evaluated there.
double SpaceMagnitude(const Space& space, int bins, double level, int width, int height);

// ReadGeometry reads the policies' interpolation and fill arguments.
absl::Status ReadGeometry(const std::string& op, const OpArgs& args, Geometry* geometry);

// ReadInt reads an integer argument in [lo, hi].
absl::Status ReadInt(const std::string& op, const OpArgs& args, const std::string& arg, int lo,
                     int hi, int* out);

}  // namespace flowloader::augment::policy

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_POLICY_OPS_H_
