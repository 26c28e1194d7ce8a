// mosaic.cc: YOLOv5's load_mosaic + border crop on a batch's rows (see mosaic.h).
#include "stages/detection/mosaic.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace flowloader::detection {

MosaicDraw DrawMosaic(const MosaicOptions& o, int64_t row, int64_t rows, int height, int width,
                      SampleRng& rng) {
  MosaicDraw d;
  d.applied = rng.Bernoulli(o.p);
  if (!d.applied) return d;
  // yc, xc = (int(random.uniform(-x, 2 * s + x)) for x in self.mosaic_border)
  d.yc = static_cast<int>(rng.Uniform(o.center_lo * height, o.center_hi * height));
  d.xc = static_cast<int>(rng.Uniform(o.center_lo * width, o.center_hi * width));
  // indices = [index, *random.choices(self.indices, k=3)]; random.shuffle(indices)
  d.tiles = {row, rng.UniformInt(0, rows), rng.UniformInt(0, rows), rng.UniformInt(0, rows)};
  for (int i = 3; i > 0; --i) std::swap(d.tiles[i], d.tiles[rng.UniformInt(0, i + 1)]);
  return d;
}

TilePlacement PlaceTile(int i, int xc, int yc, int w, int h) {
  TilePlacement t;
  const int s2w = 2 * w, s2h = 2 * h;
  switch (i) {
    case 0:  // Top left.
      t.x1a = std::max(xc - w, 0), t.y1a = std::max(yc - h, 0), t.x2a = xc, t.y2a = yc;
      t.x1b = w - (t.x2a - t.x1a), t.y1b = h - (t.y2a - t.y1a);
      break;
    case 1:  // Top right.
      t.x1a = xc, t.y1a = std::max(yc - h, 0), t.x2a = std::min(xc + w, s2w), t.y2a = yc;
      t.x1b = 0, t.y1b = h - (t.y2a - t.y1a);
      break;
    case 2:  // Bottom left.
      t.x1a = std::max(xc - w, 0), t.y1a = yc, t.x2a = xc, t.y2a = std::min(s2h, yc + h);
      t.x1b = w - (t.x2a - t.x1a), t.y1b = 0;
      break;
    default:  // Bottom right.
      t.x1a = xc, t.y1a = yc, t.x2a = std::min(xc + w, s2w), t.y2a = std::min(s2h, yc + h);
      t.x1b = 0, t.y1b = 0;
      break;
  }
  return t;
}

namespace {

// Window is the part of a tile's canvas rectangle inside the output window at (ox, oy).
struct Window {
  int x0, y0, x1, y1;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

Window Visible(const TilePlacement& t, int ox, int oy, int w, int h) {
  return Window{std::max(t.x1a, ox), std::max(t.y1a, oy), std::min(t.x2a, ox + w),
                std::min(t.y2a, oy + h)};
}

// Candidate is box_candidates for one box: box1 on the canvas, box2 in the window.
bool Candidate(const MosaicOptions& o, const double* b1, const double* b2) {
  const double eps = 1e-16;
  const double w1 = b1[2] - b1[0], h1 = b1[3] - b1[1];
  const double w2 = b2[2] - b2[0], h2 = b2[3] - b2[1];
  const double ar = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return w2 > o.min_size && h2 > o.min_size && w2 * h2 / (w1 * h1 + eps) > o.area_ratio &&
         ar < o.max_aspect_ratio;
}

// MoveKeypoints appends instance k's points of `in` to *out as ultralytics' pose mosaic
// moves them (ultralytics/ultralytics, data/augment.py and utils/instance.py; YOLOv5 has no
// keypoints): shifted with their tile (Instances.add_padding), marked unlabelled (v = 0)
// when outside the 2W × 2H canvas and clipped to it (Mosaic._cat_labels' Instances.clip),
// then shifted by the border crop and marked v = 0 when outside the H × W window, left
// unclipped (RandomPerspective.apply_keypoints). An instance of a tile without keypoints,
// or with another count per instance, gets P points of zeros (as collate pads them).
void MoveKeypoints(const Targets& in, int64_t k, int padw, int padh, int ox, int oy,
                   Targets* out) {
  const size_t stride = out->keypoint_stride();
  const size_t at = out->keypoints.size();
  out->keypoints.resize(at + stride, 0.0f);
  if (!in.has_keypoints || in.keypoint_stride() != stride ||
      in.keypoints.size() < (static_cast<size_t>(k) + 1) * stride) {
    return;
  }
  const float canvas_w = 2.0f * out->canvas_width, canvas_h = 2.0f * out->canvas_height;
  const float w = out->canvas_width, h = out->canvas_height;
  const float* src = &in.keypoints[static_cast<size_t>(k) * stride];
  float* dst = &out->keypoints[at];
  for (size_t j = 0; j < stride; j += 3) {
    float x = src[j] + static_cast<float>(padw), y = src[j + 1] + static_cast<float>(padh);
    float v = src[j + 2];
    if (x < 0 || x > canvas_w || y < 0 || y > canvas_h) v = 0;
    x = std::min(std::max(x, 0.0f), canvas_w) - static_cast<float>(ox);
    y = std::min(std::max(y, 0.0f), canvas_h) - static_cast<float>(oy);
    if (x < 0 || y < 0 || x > w || y > h) v = 0;
    dst[j] = x, dst[j + 1] = y, dst[j + 2] = v;
  }
}

// AddInstances appends tile `tile`'s instances that survive to *out.
void AddInstances(const MosaicOptions& o, const Targets& in, const TilePlacement& t,
                  const Window& v, int ox, int oy, Targets* out) {
  const int w = out->canvas_width, h = out->canvas_height;
  const int padw = t.x1a - t.x1b, padh = t.y1a - t.y1b;
  const size_t plane = out->mask_plane();
  for (int64_t k = 0; k < in.size(); ++k) {
    const float* b = &in.boxes[4 * k];
    double b1[4], b2[4];
    for (int j = 0; j < 4; ++j) {
      const double pad = j % 2 == 0 ? padw : padh, side = j % 2 == 0 ? 2.0 * w : 2.0 * h;
      b1[j] = std::min(std::max(static_cast<double>(b[j]) + pad, 0.0), side);  // np.clip
      const double off = j % 2 == 0 ? ox : oy, out_side = j % 2 == 0 ? w : h;
      b2[j] = std::min(std::max(b1[j] - off, 0.0), out_side);
    }
    if (!Candidate(o, b1, b2)) continue;
    for (int j = 0; j < 4; ++j) out->boxes.push_back(static_cast<float>(b2[j]));
    out->labels.push_back(in.labels[k]);
    out->iscrowd.push_back(k < static_cast<int64_t>(in.iscrowd.size()) ? in.iscrowd[k] : 0);
    out->area.push_back(k < static_cast<int64_t>(in.area.size()) ? in.area[k] : 0.0f);
    if (out->has_keypoints) MoveKeypoints(in, k, padw, padh, ox, oy, out);
    if (!out->has_masks) continue;
    const size_t at = out->masks.size();
    out->masks.resize(at + plane, 0);
    if (v.empty() || !in.has_masks) continue;
    const uint8_t* src = &in.masks[static_cast<size_t>(k) * in.mask_plane()];
    for (int y = v.y0; y < v.y1; ++y) {
      std::memcpy(&out->masks[at + static_cast<size_t>(y - oy) * w + (v.x0 - ox)],
                  src + static_cast<size_t>(y - padh) * in.canvas_width + (v.x0 - padw),
                  static_cast<size_t>(v.x1 - v.x0));
    }
  }
}

}  // namespace

void Mosaic(const MosaicDraw& d, const MosaicOptions& o,
            const std::array<const BatchImage*, 4>& tiles,
            const std::array<const Targets*, 4>& tile_targets, const BatchImage& out,
            Targets* out_targets) {
  const int w = out.width, h = out.height;
  // random_perspective's border crop: the canvas' window [w // 2, w // 2 + w).
  const int ox = w / 2, oy = h / 2;
  const int64_t image_id = out_targets->image_id;
  out_targets->Clear();
  out_targets->image_id = image_id;
  out_targets->canvas_width = w;
  out_targets->canvas_height = h;
  out_targets->has_masks = false;
  out_targets->has_keypoints = false;
  out_targets->num_keypoints = 0;
  for (const Targets* t : tile_targets) {
    out_targets->has_masks |= t->has_masks;
    if (t->has_keypoints && !out_targets->has_keypoints) {  // The first tile's count.
      out_targets->has_keypoints = true;
      out_targets->num_keypoints = t->num_keypoints;
    }
  }
  FillImage(out, o.fill);
  for (int i = 0; i < 4; ++i) {
    const TilePlacement t = PlaceTile(i, d.xc, d.yc, w, h);
    const Window v = Visible(t, ox, oy, w, h);
    if (!v.empty()) {
      CopyRect(*tiles[i], v.x0 - (t.x1a - t.x1b), v.y0 - (t.y1a - t.y1b), out, v.x0 - ox,
               v.y0 - oy, v.x1 - v.x0, v.y1 - v.y0);
    }
    AddInstances(o, *tile_targets[i], t, v, ox, oy, out_targets);
  }
}

}  // namespace flowloader::detection
