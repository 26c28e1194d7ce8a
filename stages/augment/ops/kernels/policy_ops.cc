// policy_ops.cc: _apply_op on the shared kernels, and torch's linspace rounding.
#include "stages/augment/ops/kernels/policy_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/kernels/geometry.h"

namespace flowloader::augment::policy {
namespace {

// Python's math.degrees and math.radians: one multiplication by a rounded constant.
constexpr double kPi = 3.141592653589793;
double Degrees(double x) { return x * (180.0 / kPi); }
double Radians(double x) { return x * (kPi / 180.0); }

// AffineInPlace runs kernels::Affine from image.rgb into image.spare and swaps them.
void AffineInPlace(double tx, double ty, double shear_x, double shear_y, const Geometry& g,
                   OpImage& image) {
  kernels::Affine(*image.rgb, 0.0, tx, ty, 1.0, shear_x, shear_y, g.interpolation, g.fill,
                  image.spare);
  std::swap(*image.rgb, *image.spare);
}

}  // namespace

// ShearTranslation is the translation Shear gives F.affine for a width x height image.
void ShearTranslation(int width, int height, double shear_x, double shear_y, double* tx,
                      double* ty) {
  // torchvision's inverse matrix about centre c with translation t has constant terms
  // m2 = m0 (-cx - tx) + m1 (-cy - ty) + cx, m5 = m3 (-cx - tx) + m4 (-cy - ty) + cy.
  // A pure shear has m0 = m4 = 1, so with c = (0, 0) both are 0. About the image centre,
  // ShearX (m1 = tan sx, m3 = 0) needs tx = -tan(sx) cy; ShearY (m1 = 0, m3 = tan sy)
  // ty = -tan(sy) cx. (Exact up to the rounding of those products: PIL's 16.16 fixed
  // point of the nearest path does not see it.)
  const double cx = width * 0.5, cy = height * 0.5;
  const double sx = Radians(shear_x), sy = Radians(shear_y);
  *tx = shear_x != 0 ? -std::tan(sx) * cy : 0.0;
  *ty = shear_y != 0 ? -(std::sin(sy) / std::cos(sy)) * cx : 0.0;
}

void Shear(double shear_x, double shear_y, const Geometry& geometry, OpImage& image) {
  double tx = 0, ty = 0;
  ShearTranslation(image.rgb->width, image.rgb->height, shear_x, shear_y, &tx, &ty);
  AffineInPlace(tx, ty, shear_x, shear_y, geometry, image);
}

void Translate(double dx, double dy, const Geometry& geometry, OpImage& image) {
  AffineInPlace(dx, dy, 0.0, 0.0, geometry, image);
}

absl::Status ApplySubOp(SubOp op, double magnitude, const Geometry& geometry, OpImage& image) {
  Image& img = *image.rgb;
  switch (op) {
    case SubOp::kIdentity:
      break;
    case SubOp::kShearX:  // shear=[math.degrees(math.atan(magnitude)), 0.0], center=[0, 0].
      Shear(Degrees(std::atan(magnitude)), 0.0, geometry, image);
      break;
    case SubOp::kShearY:
      Shear(0.0, Degrees(std::atan(magnitude)), geometry, image);
      break;
    case SubOp::kTranslateX:  // translate=[int(magnitude), 0]: int() truncates.
      Translate(std::trunc(magnitude), 0.0, geometry, image);
      break;
    case SubOp::kTranslateY:
      Translate(0.0, std::trunc(magnitude), geometry, image);
      break;
    case SubOp::kRotate:
      kernels::Rotate(img, magnitude, geometry.interpolation, false, geometry.fill, image.spare);
      std::swap(*image.rgb, *image.spare);
      break;
    case SubOp::kBrightness:
      kernels::AdjustBrightness(img, 1.0 + magnitude);
      break;
    case SubOp::kColor:
      kernels::AdjustSaturation(img, 1.0 + magnitude);
      break;
    case SubOp::kContrast:
      kernels::AdjustContrast(img, 1.0 + magnitude);
      break;
    case SubOp::kSharpness:
      kernels::AdjustSharpness(img, 1.0 + magnitude);
      break;
    case SubOp::kPosterize: {
      const int bits = static_cast<int>(magnitude);
      if (bits < 0 || bits > 8) return absl::InvalidArgumentError("posterize: bits outside 0..8");
      kernels::Posterize(img, bits);
      break;
    }
    case SubOp::kSolarize:
      kernels::Solarize(img, magnitude);
      break;
    case SubOp::kAutoContrast:
      kernels::Autocontrast(img);
      break;
    case SubOp::kEqualize:
      kernels::Equalize(img);
      break;
    case SubOp::kInvert:
      kernels::Invert(img);
      break;
  }
  return absl::OkStatus();
}

bool SubOpTables(SubOp op, double magnitude,
                 const Op::ValueCounts& histogram,
                 uint8_t (&luts)[3][256]) {
  Op::Histogram h;
  switch (op) {
    case SubOp::kIdentity:
      for (int v = 0; v < 256; ++v) luts[0][v] = static_cast<uint8_t>(v);
      break;
    case SubOp::kBrightness:
      kernels::BrightnessTable(1.0 + magnitude, luts[0]);
      break;
    case SubOp::kPosterize: {
      const int bits = static_cast<int>(magnitude);
      if (bits < 0 || bits > 8) return false;
      kernels::PosterizeTable(bits, luts[0]);
      break;
    }
    case SubOp::kSolarize:
      kernels::SolarizeTable(magnitude, luts[0]);
      break;
    case SubOp::kInvert:
      kernels::InvertTable(luts[0]);
      break;
    case SubOp::kAutoContrast:
      histogram(h, /*extremes_only=*/true);
      kernels::AutocontrastTables(h, luts);
      return true;
    case SubOp::kEqualize:
      histogram(h, /*extremes_only=*/false);
      kernels::EqualizeTables(h, luts);
      return true;
    default:
      return false;
  }
  std::memcpy(luts[1], luts[0], 256);
  std::memcpy(luts[2], luts[0], 256);
  return true;
}

bool SubOpRows(SubOp op, double magnitude, const Geometry& geometry, const RowImage& src,
               const RowImage& dst) {
  if (geometry.interpolation != Interpolation::kNearest) return false;
  const Geometry& g = geometry;
  double tx = 0, ty = 0;
  switch (op) {
    case SubOp::kShearX:
    case SubOp::kShearY: {
      const double shear = Degrees(std::atan(magnitude));
      const double sx = op == SubOp::kShearX ? shear : 0.0;
      const double sy = op == SubOp::kShearY ? shear : 0.0;
      ShearTranslation(src.width, src.height, sx, sy, &tx, &ty);
      return kernels::AffineNearestRows(src, 0.0, tx, ty, 1.0, sx, sy, g.fill, dst);
    }
    case SubOp::kTranslateX:
      return kernels::AffineNearestRows(src, 0.0, std::trunc(magnitude), 0.0, 1.0, 0.0, 0.0,
                                        g.fill, dst);
    case SubOp::kTranslateY:
      return kernels::AffineNearestRows(src, 0.0, 0.0, std::trunc(magnitude), 1.0, 0.0, 0.0,
                                        g.fill, dst);
    case SubOp::kRotate:
      return kernels::RotateNearestRows(src, magnitude, false, g.fill, dst);
    default:
      return false;
  }
}

double TorchLinspace(double start, double end, int steps, int index) {
  if (steps == 1) return static_cast<float>(start);
  const float s = static_cast<float>(start), e = static_cast<float>(end);
  const float step = (e - s) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  // The scalar element (compiled with FMA in torch's AVX2 kernel: one rounding).
  auto scalar = [&](int i) -> float {
    return i < halfway ? std::fmaf(step, static_cast<float>(i), s)
                       : std::fmaf(-step, static_cast<float>(steps - i - 1), e);
  };
  // cpu_serial_kernel_vec runs two 8-lane vectors per iteration while 16 elements are
  // left; each vector is Vectorized<float>::arange(scalar(b), step): b + k * step,
  // rounded twice (no FMA in arange). The tail is scalar.
  const int vectorized = steps / 16 * 16;
  if (index >= vectorized) return scalar(index);
  const int b = index / 8 * 8;
  const int k = index - b;
  if (k == 0) return scalar(b);
  volatile float k_step = static_cast<float>(k) * step;  // Rounded on its own: no FMA.
  return scalar(b) + k_step;
}

int TorchPosterizeBits(int base, double divisions, int bins, double index) {
  const float divisor = static_cast<float>((bins - 1) / divisions);
  return base - static_cast<int>(std::nearbyint(static_cast<float>(index) / divisor));
}

double SpaceMagnitude(const Space& space, int bins, double level, int width, int height) {
  const bool on_bin = level == std::floor(level);
  auto line = [&](double start, double end) {
    if (on_bin) return TorchLinspace(start, end, bins, static_cast<int>(level));
    return start + (end - start) * level / (bins - 1);
  };
  switch (space.kind) {
    case Space::kNone:
      return 0.0;
    case Space::kLinear:
      return line(0.0, space.max);
    case Space::kWidth:
      return line(0.0, space.max * width);
    case Space::kHeight:
      return line(0.0, space.max * height);
    case Space::kSolarize:
      return line(255.0, 0.0);
    case Space::kPosterize:
      return TorchPosterizeBits(8, space.max, bins, level);
  }
  return 0.0;
}

absl::Status ReadGeometry(const std::string& op, const OpArgs& args, Geometry* geometry) {
  if (absl::Status s = ReadInterpolation(op, args, "interpolation", &geometry->interpolation);
      !s.ok()) {
    return s;
  }
  const OpValue& fill = args.Get("fill");
  if (fill.is_none) return absl::OkStatus();
  // int(x) as _parse_fill, clamped to [0, 255] as PIL does (which refuses beyond a C int).
  const char* what = "null, a number or [r, g, b], each an int (clamped to [0, 255], as PIL "
                     "does)";
  if (!fill.word.empty() || (fill.numbers.size() != 1 && fill.numbers.size() != 3)) {
    return ArgError(op, "fill", what, fill);
  }
  for (int c = 0; c < 3; ++c) {
    const double v = std::trunc(fill.numbers[fill.numbers.size() == 1 ? 0 : c]);
    if (!(v >= -2147483648.0 && v <= 2147483647.0)) return ArgError(op, "fill", what, fill);
    geometry->fill[c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
  }
  return absl::OkStatus();
}

absl::Status ReadInt(const std::string& op, const OpArgs& args, const std::string& arg, int lo,
                     int hi, int* out) {
  const OpValue& v = args.Get(arg);
  if (!v.IsNumber() || v.numbers[0] != std::floor(v.numbers[0]) || v.numbers[0] < lo ||
      v.numbers[0] > hi) {
    return ArgError(op, arg, absl::StrCat("an integer in [", lo, ", ", hi, "]"), v);
  }
  *out = static_cast<int>(v.numbers[0]);
  return absl::OkStatus();
}

}  // namespace flowloader::augment::policy
