// affine_targets.cc: see affine_targets.h.
#include "stages/augment/ops/internal/affine_targets.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "stages/augment/ops/kernels/geometry.h"

namespace flowloader::augment::internal {
namespace {

// Python's math.radians.
double Radians(double degrees) { return degrees * (3.14159265358979323846 / 180.0); }

// ForwardMatrix is torchvision's _get_inverse_affine_matrix(center, angle, translate,
// scale, shear, inverted=False): the map from input to output pixels, T * C * RSS * C^-1.
void ForwardMatrix(double cx, double cy, double angle, double tx, double ty, double scale,
                   double shear_x, double shear_y, double m[6]) {
  const double rot = Radians(angle), sx = Radians(shear_x), sy = Radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  const double rss[6] = {a, b, 0.0, c, d, 0.0};
  for (int k = 0; k < 6; ++k) m[k] = rss[k] * scale;
  m[2] += m[0] * (-cx) + m[1] * (-cy);
  m[5] += m[3] * (-cx) + m[4] * (-cy);
  m[2] += cx + tx;
  m[5] += cy + ty;
}

// The v2 arguments of the move: F.rotate(angle) is F.affine(-angle) for the boxes
// (rotate_bounding_boxes).
void MoveMatrix(const AffineMove& mv, int width, int height, double m[6]) {
  const double cx = width * 0.5, cy = height * 0.5;
  if (mv.rotate) {
    ForwardMatrix(cx, cy, -mv.angle, 0, 0, 1, 0, 0, m);
  } else {
    ForwardMatrix(cx, cy, mv.angle, mv.translate_x, mv.translate_y, mv.scale, mv.shear_x,
                  mv.shear_y, m);
  }
}

// ExpandShift is expand's shift: the canvas corners through `m`, their minimum (which
// moves to the origin).
void ExpandShift(const double m[6], int width, int height, double* shift_x, double* shift_y) {
  const double xs[4] = {0, 0, static_cast<double>(width), static_cast<double>(width)};
  const double ys[4] = {0, static_cast<double>(height), static_cast<double>(height), 0};
  *shift_x = *shift_y = INFINITY;
  for (int k = 0; k < 4; ++k) {
    *shift_x = std::min(*shift_x, m[0] * xs[k] + m[1] * ys[k] + m[2]);
    *shift_y = std::min(*shift_y, m[3] * xs[k] + m[4] * ys[k] + m[5]);
  }
}

// Invert2x3 inverts the affine map m (x' = m0 x + m1 y + m2, y' = m3 x + m4 y + m5);
// false when it has no inverse.
bool Invert2x3(const double m[6], double inv[6]) {
  const double det = m[0] * m[4] - m[1] * m[3];
  if (!(det != 0) || !std::isfinite(1.0 / det)) return false;
  inv[0] = m[4] / det;
  inv[1] = -m[1] / det;
  inv[3] = -m[3] / det;
  inv[4] = m[0] / det;
  inv[2] = -(inv[0] * m[2] + inv[1] * m[5]);
  inv[5] = -(inv[3] * m[2] + inv[4] * m[5]);
  return true;
}

// CenteredForward is, for a move about a given centre, the map the pixels move by: the
// inverse of the kernel's own inverse map (kernels::AffineInverse / RotateInverse, PIL's
// expand re-centring included), so that targets stay on what the pixels show.
bool CenteredForward(const AffineMove& mv, int width, int height, double m[6]) {
  double inv[6];
  if (mv.rotate) {
    int w = 0, h = 0;
    kernels::RotateInverse(width, height, mv.angle, mv.expand, mv.center, inv, &w, &h);
  } else {
    kernels::AffineInverse(width, height, mv.angle, mv.translate_x, mv.translate_y, mv.scale,
                           mv.shear_x, mv.shear_y, mv.center, inv);
  }
  return Invert2x3(inv, m);
}

// ForwardMap is the map of a width × height canvas's coordinates after the move, and the
// shift subtracted after it: v2's matrix about the canvas centre and expand's shift, or
// with a centre the pixels' own map (CenteredForward; no shift).
bool ForwardMap(const AffineMove& mv, int width, int height, double m[6], double* shift_x,
                double* shift_y) {
  *shift_x = *shift_y = 0;
  if (mv.has_center) return CenteredForward(mv, width, height, m);
  MoveMatrix(mv, width, height, m);
  if (mv.rotate && mv.expand) ExpandShift(m, width, height, shift_x, shift_y);
  return true;
}

// MovePlane moves one plane (width × height bytes at `in`) into `out`, as the image moves.
void MovePlane(const AffineMove& mv, const Image& in, uint8_t fill, Image* out) {
  const double* center = mv.has_center ? mv.center : nullptr;
  if (mv.rotate) {
    kernels::RotatePlane(in, mv.angle, mv.expand, fill, out, center);
  } else {
    kernels::AffinePlane(in, mv.angle, mv.translate_x, mv.translate_y, mv.scale, mv.shear_x,
                         mv.shear_y, fill, out, center);
  }
}

// MovePlanes moves `count` planes of width × height stored back to back in `planes`,
// rewriting it at the new size (written to *out_w × *out_h).
void MovePlanes(const AffineMove& mv, int width, int height, int64_t count, uint8_t fill,
                std::vector<uint8_t>* planes, int* out_w, int* out_h) {
  thread_local Image in, out;
  std::vector<uint8_t> moved;
  const size_t plane = static_cast<size_t>(width) * static_cast<size_t>(height);
  for (int64_t k = 0; k < count; ++k) {
    in.Resize(width, height, 1);
    std::memcpy(in.pixels.data(), planes->data() + static_cast<size_t>(k) * plane, plane);
    MovePlane(mv, in, fill, &out);
    if (k == 0) moved.reserve(out.pixels.size() * static_cast<size_t>(count));
    moved.insert(moved.end(), out.pixels.begin(), out.pixels.end());
    *out_w = out.width;
    *out_h = out.height;
  }
  planes->swap(moved);
}

// AffineBoxes is v2's _affine_bounding_boxes_with_expand on xyxy boxes, each box's corners
// through ForwardMap's `m` less its shift, clamped to the out_w × out_h canvas after the op.
void AffineBoxes(const double m[6], double shift_x, double shift_y, int out_w, int out_h,
                 float* boxes, int64_t count) {
  auto map = [&m](double x, double y, double* ox, double* oy) {
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
  };
  for (int64_t i = 0; i < count; ++i) {
    float* b = boxes + 4 * i;
    // Corners (x0, y0), (x1, y0), (x1, y1), (x0, y1), as v2 lists them.
    const double cx[4] = {b[0], b[2], b[2], b[0]};
    const double cy[4] = {b[1], b[1], b[3], b[3]};
    double lo_x = INFINITY, lo_y = INFINITY, hi_x = -INFINITY, hi_y = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      double x, y;
      map(cx[k], cy[k], &x, &y);
      lo_x = std::min(lo_x, x);
      hi_x = std::max(hi_x, x);
      lo_y = std::min(lo_y, y);
      hi_y = std::max(hi_y, y);
    }
    // clamp_bounding_boxes: x into [0, W], y into [0, H].
    auto clamp = [](double v, int hi) {
      return static_cast<float>(std::min<double>(std::max(v, 0.0), hi));
    };
    b[0] = clamp(lo_x - shift_x, out_w);
    b[1] = clamp(lo_y - shift_y, out_h);
    b[2] = clamp(hi_x - shift_x, out_w);
    b[3] = clamp(hi_y - shift_y, out_h);
  }
}

// AffinePoints is v2's _affine_keypoints_with_expand on (x, y, visibility) points: each
// point through ForwardMap's `m` less its shift; not clamped (points may leave the canvas).
void AffinePoints(const double m[6], double shift_x, double shift_y, float* points,
                  int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    float* p = points + 3 * i;
    const double x = p[0], y = p[1];
    p[0] = static_cast<float>(m[0] * x + m[1] * y + m[2] - shift_x);
    p[1] = static_cast<float>(m[3] * x + m[4] * y + m[5] - shift_y);
  }
}

}  // namespace

absl::Status AffineTargets(const AffineMove& move, detection::Targets* targets) {
  targets->ExpandMasks();  // Windowed masks (from the annotations stage) as full planes.
  const int w = targets->canvas_width, h = targets->canvas_height;
  int out_w = w, out_h = h;
  if (move.rotate) {
    kernels::RotatedSize(w, h, move.angle, move.expand, &out_w, &out_h,
                         move.has_center ? move.center : nullptr);
  }
  double m[6], shift_x, shift_y;
  if (!ForwardMap(move, w, h, m, &shift_x, &shift_y)) {
    return absl::InvalidArgumentError("the affine map has no inverse: boxes cannot follow it");
  }
  const detection::BoxFormat format = targets->format;
  if (format != detection::BoxFormat::kXYXY) {
    detection::ConvertBoxes(format, detection::BoxFormat::kXYXY, &targets->boxes);
  }
  AffineBoxes(m, shift_x, shift_y, out_w, out_h, targets->boxes.data(), targets->size());
  if (format != detection::BoxFormat::kXYXY) {
    detection::ConvertBoxes(detection::BoxFormat::kXYXY, format, &targets->boxes);
  }
  if (targets->has_keypoints) {
    AffinePoints(m, shift_x, shift_y, targets->keypoints.data(),
                 targets->size() * targets->num_keypoints);
  }
  int mw = out_w, mh = out_h;
  if (targets->has_masks && targets->size() > 0) {
    MovePlanes(move, w, h, targets->size(), 0, &targets->masks, &mw, &mh);
  }
  if (mw != out_w || mh != out_h) {
    return absl::InternalError("the masks moved to a canvas other than the image's");
  }
  targets->canvas_width = out_w;
  targets->canvas_height = out_h;
  return absl::OkStatus();
}

absl::Status AffineLabels(const AffineMove& move, LabelPlane& plane) {
  MovePlane(move, *plane.labels, plane.fill, plane.spare);
  std::swap(*plane.labels, *plane.spare);
  return absl::OkStatus();
}

}  // namespace flowloader::augment::internal
