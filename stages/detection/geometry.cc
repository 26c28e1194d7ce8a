// geometry.cc: boxes and masks under flips, crops, pads and resizes, as
// torchvision.transforms.v2's kernels compute them (see geometry.h).
#include "stages/detection/geometry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace flowloader::detection {
namespace {

// ClampBoxes is v2's clamp_bounding_boxes on xyxy boxes: x into [0, W], y into [0, H].
void ClampBoxes(int width, int height, float* b, int64_t count) {
  const float w = static_cast<float>(width), h = static_cast<float>(height);
  for (int64_t i = 0; i < count; ++i, b += 4) {
    b[0] = std::clamp(b[0], 0.0f, w);
    b[2] = std::clamp(b[2], 0.0f, w);
    b[1] = std::clamp(b[1], 0.0f, h);
    b[3] = std::clamp(b[3], 0.0f, h);
  }
}

// ShiftBoxes subtracts (left, top) from every corner (crop: positive; pad: negative).
void ShiftBoxes(int left, int top, float* b, int64_t count) {
  const float l = static_cast<float>(left), t = static_cast<float>(top);
  for (int64_t i = 0; i < count; ++i, b += 4) {
    b[0] -= l;
    b[2] -= l;
    b[1] -= t;
    b[3] -= t;
  }
}

// BoxAnchor is v2's _center_crop_compute_crop_anchor: int(round((in - crop) / 2.0)),
// Python's round being half to even (std::nearbyint in the default rounding mode).
int BoxAnchor(int in, int crop) { return static_cast<int>(std::nearbyint((in - crop) / 2.0)); }

// MaskCenterCrop is v2's center_crop_image as a pad-and-crop window: (top, left) of the
// crop in the unpadded image's coordinates.
void MaskCenterCrop(int in_h, int in_w, int crop_h, int crop_w, int* top, int* left) {
  int pad_top = 0, pad_left = 0, h = in_h, w = in_w;
  if (crop_h > in_h || crop_w > in_w) {
    pad_left = crop_w > in_w ? (crop_w - in_w) / 2 : 0;
    pad_top = crop_h > in_h ? (crop_h - in_h) / 2 : 0;
    w += crop_w > in_w ? crop_w - in_w : 0;
    h += crop_h > in_h ? crop_h - in_h : 0;
  }
  *top = BoxAnchor(h, crop_h) - pad_top;
  *left = BoxAnchor(w, crop_w) - pad_left;
}

// CropPlane copies the window (top, left, height, width) of an in_h × in_w plane, 0
// where the window reaches outside it.
void CropPlane(const uint8_t* in, int in_w, int in_h, int top, int left, int height, int width,
               uint8_t* out) {
  std::memset(out, 0, static_cast<size_t>(height) * width);
  const int x0 = std::max(0, left), x1 = std::min(in_w, left + width);
  if (x1 <= x0) return;
  for (int y = std::max(0, top); y < std::min(in_h, top + height); ++y) {
    std::memcpy(out + static_cast<size_t>(y - top) * width + (x0 - left),
                in + static_cast<size_t>(y) * in_w + x0, static_cast<size_t>(x1 - x0));
  }
}

void ResizePlane(const uint8_t* in, int in_w, int in_h, int out_w, int out_h, uint8_t* out) {
  std::vector<int64_t> xs(static_cast<size_t>(out_w));
  for (int x = 0; x < out_w; ++x) xs[x] = NearestIndex(x, in_w, out_w);
  for (int y = 0; y < out_h; ++y) {
    const uint8_t* src = in + static_cast<size_t>(NearestIndex(y, in_h, out_h)) * in_w;
    uint8_t* dst = out + static_cast<size_t>(y) * out_w;
    for (int x = 0; x < out_w; ++x) dst[x] = src[xs[x]];
  }
}

}  // namespace

int64_t NearestIndex(int64_t dst, int64_t in, int64_t out) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(dst) * scale)), in - 1);
}

Geometry Geometry::Crop(int top, int left, int height, int width) {
  Geometry g{Kind::kCrop};
  g.top = top, g.left = left, g.height = height, g.width = width;
  return g;
}
Geometry Geometry::Pad(int left, int top, int right, int bottom) {
  Geometry g{Kind::kPad};
  g.pad_left = left, g.pad_top = top, g.pad_right = right, g.pad_bottom = bottom;
  return g;
}
Geometry Geometry::Resize(int height, int width) {
  Geometry g{Kind::kResize};
  g.out_height = height, g.out_width = width;
  return g;
}
Geometry Geometry::ResizedCrop(int top, int left, int height, int width, int out_height,
                               int out_width) {
  Geometry g = Crop(top, left, height, width);
  g.kind = Kind::kResizedCrop;
  g.out_height = out_height, g.out_width = out_width;
  return g;
}
Geometry Geometry::CenterCrop(int height, int width) {
  Geometry g{Kind::kCenterCrop};
  g.height = height, g.width = width;
  return g;
}

void ApplyToBoxes(const Geometry& g, BoxFormat format, int* canvas_width, int* canvas_height,
                  float* boxes, int64_t count) {
  std::vector<float> converted;
  float* b = boxes;
  if (format != BoxFormat::kXYXY) {  // Work on corners (v2 converts the same way).
    converted.assign(boxes, boxes + 4 * count);
    ConvertBoxes(format, BoxFormat::kXYXY, &converted);
    b = converted.data();
  }
  const int w = *canvas_width, h = *canvas_height;
  switch (g.kind) {
    case Geometry::Kind::kNone:
      break;
    case Geometry::Kind::kHorizontalFlip:
      for (int64_t i = 0; i < count; ++i) {
        const float x1 = b[4 * i], x2 = b[4 * i + 2];
        b[4 * i] = static_cast<float>(w) - x2;
        b[4 * i + 2] = static_cast<float>(w) - x1;
      }
      break;
    case Geometry::Kind::kVerticalFlip:
      for (int64_t i = 0; i < count; ++i) {
        const float y1 = b[4 * i + 1], y2 = b[4 * i + 3];
        b[4 * i + 1] = static_cast<float>(h) - y2;
        b[4 * i + 3] = static_cast<float>(h) - y1;
      }
      break;
    case Geometry::Kind::kCrop:
    case Geometry::Kind::kResizedCrop:
      ShiftBoxes(g.left, g.top, b, count);
      ClampBoxes(g.width, g.height, b, count);
      *canvas_width = g.width;
      *canvas_height = g.height;
      if (g.kind == Geometry::Kind::kResizedCrop) {
        int cw = g.width, ch = g.height;
        ApplyToBoxes(Geometry::Resize(g.out_height, g.out_width), BoxFormat::kXYXY, &cw, &ch, b,
                     count);
        *canvas_width = cw;
        *canvas_height = ch;
      }
      break;
    case Geometry::Kind::kPad:
      ShiftBoxes(-g.pad_left, -g.pad_top, b, count);
      *canvas_width = w + g.pad_left + g.pad_right;
      *canvas_height = h + g.pad_top + g.pad_bottom;
      ClampBoxes(*canvas_width, *canvas_height, b, count);
      break;
    case Geometry::Kind::kResize: {
      if (g.out_width == w && g.out_height == h) break;  // v2 returns the boxes as they are.
      // v2 multiplies by a float32 tensor of the ratios, computed in double.
      const float rw = static_cast<float>(static_cast<double>(g.out_width) / w);
      const float rh = static_cast<float>(static_cast<double>(g.out_height) / h);
      for (int64_t i = 0; i < count; ++i) {
        b[4 * i] *= rw;
        b[4 * i + 2] *= rw;
        b[4 * i + 1] *= rh;
        b[4 * i + 3] *= rh;
      }
      *canvas_width = g.out_width;
      *canvas_height = g.out_height;
      break;
    }
    case Geometry::Kind::kCenterCrop: {
      const Geometry crop = Geometry::Crop(BoxAnchor(h, g.height), BoxAnchor(w, g.width),
                                           g.height, g.width);
      ApplyToBoxes(crop, BoxFormat::kXYXY, canvas_width, canvas_height, b, count);
      break;
    }
  }
  if (format != BoxFormat::kXYXY) {
    ConvertBoxes(BoxFormat::kXYXY, format, &converted);
    std::copy(converted.begin(), converted.end(), boxes);
  }
}

void ApplyToMasks(const Geometry& g, const uint8_t* in, int64_t count, int* width, int* height,
                  std::vector<uint8_t>* out) {
  const int w = *width, h = *height;
  const size_t in_plane = static_cast<size_t>(w) * h;
  switch (g.kind) {
    case Geometry::Kind::kNone:
      out->assign(in, in + in_plane * count);
      return;
    case Geometry::Kind::kHorizontalFlip:
      out->resize(in_plane * count);
      for (int64_t k = 0; k < count; ++k) {
        for (int y = 0; y < h; ++y) {
          const uint8_t* src = in + k * in_plane + static_cast<size_t>(y) * w;
          uint8_t* dst = out->data() + k * in_plane + static_cast<size_t>(y) * w;
          for (int x = 0; x < w; ++x) dst[x] = src[w - 1 - x];
        }
      }
      return;
    case Geometry::Kind::kVerticalFlip:
      out->resize(in_plane * count);
      for (int64_t k = 0; k < count; ++k) {
        for (int y = 0; y < h; ++y) {
          std::memcpy(out->data() + k * in_plane + static_cast<size_t>(y) * w,
                      in + k * in_plane + static_cast<size_t>(h - 1 - y) * w, w);
        }
      }
      return;
    case Geometry::Kind::kCrop:
    case Geometry::Kind::kCenterCrop:
    case Geometry::Kind::kPad: {
      int top = g.top, left = g.left, ch = g.height, cw = g.width;
      if (g.kind == Geometry::Kind::kCenterCrop) MaskCenterCrop(h, w, ch, cw, &top, &left);
      if (g.kind == Geometry::Kind::kPad) {
        top = -g.pad_top, left = -g.pad_left;
        ch = h + g.pad_top + g.pad_bottom, cw = w + g.pad_left + g.pad_right;
      }
      const size_t plane = static_cast<size_t>(cw) * ch;
      out->resize(plane * count);
      for (int64_t k = 0; k < count; ++k) {
        CropPlane(in + k * in_plane, w, h, top, left, ch, cw, out->data() + k * plane);
      }
      *width = cw;
      *height = ch;
      return;
    }
    case Geometry::Kind::kResize: {
      const size_t plane = static_cast<size_t>(g.out_width) * g.out_height;
      out->resize(plane * count);
      for (int64_t k = 0; k < count; ++k) {
        ResizePlane(in + k * in_plane, w, h, g.out_width, g.out_height, out->data() + k * plane);
      }
      *width = g.out_width;
      *height = g.out_height;
      return;
    }
    case Geometry::Kind::kResizedCrop: {
      std::vector<uint8_t> cropped;
      ApplyToMasks(Geometry::Crop(g.top, g.left, g.height, g.width), in, count, width, height,
                   &cropped);
      ApplyToMasks(Geometry::Resize(g.out_height, g.out_width), cropped.data(), count, width,
                   height, out);
      return;
    }
  }
}

void ApplyToKeypoints(const Geometry& g, int canvas_width, int canvas_height, float* points,
                      int64_t count, int64_t stride) {
  const int w = canvas_width, h = canvas_height;
  auto shift = [&](int left, int top) {
    for (int64_t i = 0; i < count; ++i) {
      points[i * stride] -= static_cast<float>(left);
      points[i * stride + 1] -= static_cast<float>(top);
    }
  };
  switch (g.kind) {
    case Geometry::Kind::kNone:
      break;
    case Geometry::Kind::kHorizontalFlip:  // horizontal_flip_keypoints: x -> (W - 1) - x.
      for (int64_t i = 0; i < count; ++i) {
        points[i * stride] = static_cast<float>(w - 1) - points[i * stride];
      }
      break;
    case Geometry::Kind::kVerticalFlip:  // vertical_flip_keypoints: y -> (H - 1) - y.
      for (int64_t i = 0; i < count; ++i) {
        points[i * stride + 1] = static_cast<float>(h - 1) - points[i * stride + 1];
      }
      break;
    case Geometry::Kind::kCrop:  // crop_keypoints: shifted, never clamped.
      shift(g.left, g.top);
      break;
    case Geometry::Kind::kResizedCrop:
      shift(g.left, g.top);
      ApplyToKeypoints(Geometry::Resize(g.out_height, g.out_width), g.width, g.height, points,
                       count, stride);
      break;
    case Geometry::Kind::kPad:  // pad_keypoints.
      shift(-g.pad_left, -g.pad_top);
      break;
    case Geometry::Kind::kResize: {  // resize_keypoints: scaled by float32 ratios.
      if (g.out_width == w && g.out_height == h) break;
      const float rw = static_cast<float>(static_cast<double>(g.out_width) / w);
      const float rh = static_cast<float>(static_cast<double>(g.out_height) / h);
      for (int64_t i = 0; i < count; ++i) {
        points[i * stride] *= rw;
        points[i * stride + 1] *= rh;
      }
      break;
    }
    case Geometry::Kind::kCenterCrop:  // center_crop_keypoints: the boxes' anchor.
      shift(BoxAnchor(w, g.width), BoxAnchor(h, g.height));
      break;
  }
}

void Apply(const Geometry& geometry, Targets* t) {
  t->ExpandMasks();  // Op by op, masks move as full planes.
  int w = t->canvas_width, h = t->canvas_height;
  ApplyToBoxes(geometry, t->format, &w, &h, t->boxes.data(), t->size());
  if (t->has_keypoints) {
    ApplyToKeypoints(geometry, t->canvas_width, t->canvas_height, t->keypoints.data(),
                     t->size() * t->num_keypoints, 3);
  }
  if (t->has_masks) {
    thread_local std::vector<uint8_t> moved;  // Reused: no allocation once warm.
    int mw = t->canvas_width, mh = t->canvas_height;
    ApplyToMasks(geometry, t->masks.data(), t->size(), &mw, &mh, &moved);
    t->masks.swap(moved);
    // `moved` now holds the input planes: kept, a large sample's masks stayed resident
    // beside the next samples' (each thread, outside the plan); given back over 16 MiB.
    if (moved.capacity() > (size_t{16} << 20)) std::vector<uint8_t>().swap(moved);
  }
  t->canvas_width = w;
  t->canvas_height = h;
}

std::vector<bool> SanitizeKeep(const Targets& t, const SanitizeOptions& o) {
  std::vector<float> xyxy(t.boxes);
  ConvertBoxes(t.format, BoxFormat::kXYXY, &xyxy);
  std::vector<bool> keep(static_cast<size_t>(t.size()));
  const float w = static_cast<float>(t.canvas_width), h = static_cast<float>(t.canvas_height);
  // v2 compares float32 tensors with the thresholds, so in float.
  const float min_size = static_cast<float>(o.min_size);
  const float min_area = static_cast<float>(o.min_area);
  for (int64_t k = 0; k < t.size(); ++k) {
    const float* b = &xyxy[4 * k];
    const float ws = b[2] - b[0], hs = b[3] - b[1];
    // Comparisons are false for NaN, so a NaN box is dropped, as in v2.
    keep[k] = ws >= min_size && hs >= min_size && b[0] >= 0 && b[1] >= 0 && b[2] >= 0 &&
              b[3] >= 0 && ws * hs >= min_area && b[0] <= w && b[2] <= w && b[1] <= h &&
              b[3] <= h;
  }
  return keep;
}

int64_t Sanitize(const SanitizeOptions& options, Targets* targets) {
  return targets->Keep(SanitizeKeep(*targets, options));
}

}  // namespace flowloader::detection
