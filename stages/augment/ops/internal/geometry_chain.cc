// geometry_chain.cc: see geometry_chain.h.
#include "stages/augment/ops/internal/geometry_chain.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/detection/geometry.h"

namespace flowloader::augment::internal {
namespace {

// ReleaseIfLarge frees a thread's chain image made for one large image (over 16 MiB):
// kept, it stayed beside the next samples' images, outside the worker's memory check.
// Smaller ones keep their storage for the next sample.
void ReleaseIfLarge(Image* image) {
  if (image->pixels.capacity() > (size_t{16} << 20)) *image = Image();
}

std::atomic<bool> g_enabled{true};
std::atomic<int64_t> g_chains_run{0};

// An axis map of a composed chain: value >= 0 is a source index along the axis; a value
// v < 0 is the fill of chain step -(v + 1) (a later step's fill covers an earlier one's).
using AxisMap = std::vector<int>;

int FillStep(int v) { return v < 0 ? -(v + 1) : -1; }

// Step is one op of the chain that applies: a gather (maps) or the resize.
struct Step {
  size_t op = 0;
  bool resize = false;
  OpParams params;
  GatherMaps maps;                 // A gather's maps.
  int in_width = 0, in_height = 0;  // The image the step reads.
  int out_width = 0, out_height = 0;
  Interpolation filter = Interpolation::kBilinear;  // The resize's.
};

// Identity is the map of an axis of n pixels onto itself.
AxisMap Identity(int n) {
  AxisMap m(static_cast<size_t>(n));
  std::iota(m.begin(), m.end(), 0);
  return m;
}

// Compose is `current` (the source of each pixel of the step's input) followed by the
// step's map `m` (-1: the step's fill, step number `step`).
AxisMap Compose(const AxisMap& current, const std::vector<int>& m, int step) {
  AxisMap out(m.size());
  for (size_t x = 0; x < m.size(); ++x) out[x] = m[x] < 0 ? -(step + 1) : current[m[x]];
  return out;
}

// GatherComposed writes dst (mx.size() × my.size()) with src's pixel (mx[x], my[y]), or
// the fill of the later of the steps that filled it.
void GatherComposed(const ImageView& src, const AxisMap& mx, const AxisMap& my,
                    const std::vector<std::array<uint8_t, 3>>& fills, Image* dst) {
  const int w = static_cast<int>(mx.size()), h = static_cast<int>(my.size());
  dst->Resize(w, h, 3);
  for (int y = 0; y < h; ++y) {
    uint8_t* out = dst->Row(y);
    const int fy = FillStep(my[y]);
    if (fy >= 0) {  // The whole row is fill, except where a later step fills a column.
      for (int x = 0; x < w; ++x) {
        std::memcpy(out + 3 * x, fills[std::max(fy, FillStep(mx[x]))].data(), 3);
      }
      continue;
    }
    const uint8_t* in = src.Row(my[y]);
    int x = 0;
    while (x < w) {
      if (mx[x] < 0) {
        std::memcpy(out + 3 * x, fills[FillStep(mx[x])].data(), 3);
        ++x;
        continue;
      }
      // A run of consecutive source columns is one copy (crops, pads); others per pixel.
      int run = 1;
      while (x + run < w && mx[x + run] == mx[x] + run) ++run;
      std::memcpy(out + 3 * x, in + 3 * static_cast<size_t>(mx[x]), 3 * static_cast<size_t>(run));
      x += run;
    }
  }
}

// Span is the smallest range [first, last] holding every source index of `m`, or
// first > last when there is none (all fill).
std::pair<int, int> Span(const AxisMap& m) {
  int first = INT32_MAX, last = -1;
  for (int v : m) {
    if (v < 0) continue;
    first = std::min(first, v);
    last = std::max(last, v);
  }
  return {first, last};
}

// MaskMap is the source index, on the first canvas, of each output pixel of an axis
// for the masks: the gathers before the resize (`before`, composed), the resize's
// nearest index (from `in` to `out` pixels; out == 0: no resize), the gathers after it
// (`after`, composed); -1 where any fill is (masks pad with 0).
AxisMap MaskMap(const AxisMap& before, int in, int out, const AxisMap& after) {
  AxisMap m(after.size());
  for (size_t x = 0; x < after.size(); ++x) {
    int v = after[x];
    if (v >= 0 && out > 0) v = static_cast<int>(detection::NearestIndex(v, in, out));
    if (v >= 0 && out > 0) v = before[v];
    m[x] = v < 0 ? -1 : v;
  }
  return m;
}

// GatherMasks writes the planes of instances `ids` of `in` (planes of in_w × in_h) through
// the maps into `out`, 0 where either index is -1.
void GatherMasks(const std::vector<uint8_t>& in, int in_w, int in_h,
                 const std::vector<int64_t>& ids, const AxisMap& mx, const AxisMap& my,
                 std::vector<uint8_t>* out) {
  const size_t w = mx.size(), h = my.size();
  const size_t in_plane = static_cast<size_t>(in_w) * in_h;
  out->resize(ids.size() * w * h);
  uint8_t* dst = out->data();
  for (int64_t id : ids) {
    const uint8_t* plane = in.data() + static_cast<size_t>(id) * in_plane;
    for (size_t y = 0; y < h; ++y, dst += w) {
      if (my[y] < 0) {
        std::memset(dst, 0, w);
        continue;
      }
      const uint8_t* row = plane + static_cast<size_t>(my[y]) * in_w;
      for (size_t x = 0; x < w; ++x) dst[x] = mx[x] < 0 ? 0 : row[mx[x]];
    }
  }
}

// Covered is the range [first, last] of the positions of `m` whose source index lies in
// [lo, lo + n), or first > last when none does.
std::pair<int, int> Covered(const AxisMap& m, int lo, int n) {
  int first = INT32_MAX, last = -1;
  for (int i = 0; i < static_cast<int>(m.size()); ++i) {
    if (m[i] >= lo && m[i] < lo + n) {
      first = std::min(first, i);
      last = i;
    }
  }
  return {first, last};
}

// GatherWindows is GatherMasks for windowed masks (Targets::masks_windowed): instance
// ids[j]'s window of `windows` (x, y, width, height; its bytes in `in`, windows packed in
// order) goes through the maps into the smallest output window holding every output pixel
// whose source lies in it; the rest of each output plane is 0, as GatherMasks would write
// it. Only the windows are read and written: LSJ's instances cover a few percent of the
// canvas, and GatherMasks' full planes were ~12% of the recipe's CPU time (perf), with as
// much again in zeroing and faulting them in.
void GatherWindows(const std::vector<uint8_t>& in, const std::vector<int32_t>& windows,
                   const std::vector<int64_t>& ids, const AxisMap& mx, const AxisMap& my,
                   std::vector<uint8_t>* out, std::vector<int32_t>* out_windows) {
  std::vector<size_t> offsets(windows.size() / 4 + 1, 0);  // Where each window's bytes start.
  for (size_t k = 0; k + 1 < offsets.size(); ++k) {
    offsets[k + 1] = offsets[k] + static_cast<size_t>(windows[4 * k + 2]) * windows[4 * k + 3];
  }
  out->clear();
  out_windows->clear();
  for (int64_t id : ids) {
    const int32_t* win = &windows[4 * static_cast<size_t>(id)];
    const int wx = win[0], wy = win[1], ww = win[2], wh = win[3];
    auto [x0, x1] = Covered(mx, wx, ww);
    auto [y0, y1] = Covered(my, wy, wh);
    if (x0 > x1 || y0 > y1) x0 = y0 = 0, x1 = y1 = -1;  // Nothing of it shows.
    const int ow = x1 - x0 + 1, oh = y1 - y0 + 1;
    out_windows->insert(out_windows->end(), {x0, y0, ow, oh});
    const size_t at = out->size();
    out->resize(at + static_cast<size_t>(ow) * static_cast<size_t>(oh));
    const uint8_t* src = in.data() + offsets[static_cast<size_t>(id)];
    uint8_t* dst = out->data() + at;
    for (int y = y0; y <= y1; ++y, dst += ow) {
      const int sy = my[y] - wy;
      if (sy < 0 || sy >= wh) {
        std::memset(dst, 0, static_cast<size_t>(ow));
      } else if (y > y0 && my[y] == my[y - 1]) {  // Upscaled: the row above again.
        std::memcpy(dst, dst - ow, static_cast<size_t>(ow));
      } else {
        const uint8_t* row = src + static_cast<size_t>(sy) * ww;
        for (int x = 0; x < ow; ++x) {
          const int sx = mx[x0 + x] - wx;
          dst[x] = sx < 0 || sx >= ww ? 0 : row[sx];
        }
      }
    }
  }
}

// Plan draws ops from `begin` and keeps the steps of the chain they form: each op that
// applies must be a gather (whose maps also move the masks, when the sample has masks) or
// the chain's one resize. The boxes move through `standin` as each op moves them (its
// labels are the instance numbers). Returns how many ops the chain covers.
absl::StatusOr<size_t> Plan(const std::vector<std::unique_ptr<Op>>& ops, size_t begin,
                            size_t end, const DrawOp& draw, const CheckDraw& check_draw,
                            int width, int height,
                            bool has_masks, detection::Targets* standin,
                            std::vector<Step>* steps) {
  bool resized = false;
  size_t i = begin;
  for (; i < end; ++i) {
    const Op& op = *ops[i];
    if (op.Input() != PixelForm::kUint8HWC || op.Output() != PixelForm::kUint8HWC) break;
    // Not drawn where the draw itself may not fit (2 GB of elastic_transform noise for an
    // 80 Mpx image were drawn here, then dropped, before the op's own check refused it).
    if (!check_draw(i, width, height).ok()) break;
    Step step;
    step.op = i;
    if (!draw(i, width, height, standin, &step.params)) continue;  // Not applied: no pixel moves.
    step.in_width = width;
    step.in_height = height;
    OpSize out;
    if (!resized && op.ResizeTo(step.params, width, height, &out, &step.filter)) {
      step.resize = resized = true;
    } else if (op.Gather(step.params, width, height, &step.maps) &&
               (!has_masks || op.GatherMovesMasks())) {
      out = {static_cast<int>(step.maps.x_src.size()), static_cast<int>(step.maps.y_src.size())};
    } else {
      break;
    }
    if (standin != nullptr) {
      if (absl::Status s = op.MoveTargets(step.params, standin); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(op.name(), ": ", s.message()));
      }
    }
    step.out_width = width = out.width;
    step.out_height = height = out.height;
    steps->push_back(std::move(step));
  }
  return i - begin;
}

// MovePixels runs the steps on the image (see the file comment).
void MovePixels(const std::vector<Step>& steps, OpImage& image, AxisMap* before_x,
                AxisMap* before_y, AxisMap* after_x, AxisMap* after_y) {
  const Image& src = *image.rgb;
  std::vector<std::array<uint8_t, 3>> fills(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) fills[s] = steps[s].maps.fill;
  *before_x = Identity(src.width);
  *before_y = Identity(src.height);
  size_t s = 0;
  for (; s < steps.size() && !steps[s].resize; ++s) {
    *before_x = Compose(*before_x, steps[s].maps.x_src, static_cast<int>(s));
    *before_y = Compose(*before_y, steps[s].maps.y_src, static_cast<int>(s));
  }
  if (s == steps.size()) {  // Gathers only: one gather.
    *after_x = *before_x;
    *after_y = *before_y;
    GatherComposed(src.view(), *before_x, *before_y, fills, image.spare);
    std::swap(*image.rgb, *image.spare);
    return;
  }
  // What the resize reads: the source, or the gathers before it, made once.
  thread_local Image composed;
  ImageView resize_in = src.view();
  if (s > 0) {
    GatherComposed(src.view(), *before_x, *before_y, fills, &composed);
    resize_in = composed.view();
  }
  const Step& resize = steps[s];
  *after_x = Identity(resize.out_width);
  *after_y = Identity(resize.out_height);
  for (size_t t = s + 1; t < steps.size(); ++t) {
    *after_x = Compose(*after_x, steps[t].maps.x_src, static_cast<int>(t));
    *after_y = Compose(*after_y, steps[t].maps.y_src, static_cast<int>(t));
  }
  const auto [x0, x1] = Span(*after_x);
  const auto [y0, y1] = Span(*after_y);
  thread_local Image window;
  if (x0 <= x1 && y0 <= y1) {
    PillowResampleWindow(resize_in, resize.out_width, resize.out_height, resize.filter, x0, y0,
                         x1 - x0 + 1, y1 - y0 + 1, &window);
  } else {
    window.Resize(1, 1, 3);  // Nothing of the resize shows: every pixel is a fill.
  }
  ReleaseIfLarge(&composed);
  if (s + 1 == steps.size()) {  // The resize last: the window is the whole output.
    std::swap(*image.rgb, window);
    ReleaseIfLarge(&window);
    return;
  }
  AxisMap wx = *after_x, wy = *after_y;
  for (int& v : wx) v = v >= 0 ? v - x0 : v;
  for (int& v : wy) v = v >= 0 ? v - y0 : v;
  GatherComposed(window.view(), wx, wy, fills, image.spare);
  std::swap(*image.rgb, *image.spare);
  ReleaseIfLarge(&window);
}

}  // namespace

absl::StatusOr<size_t> RunGeometryChain(const std::vector<std::unique_ptr<Op>>& ops,
                                        size_t begin, size_t end, const DrawOp& draw,
                                        const CheckDraw& check_draw, const CheckStep& check,
                                        const CheckMasks& check_masks, OpImage& image,
                                        detection::Targets* targets,
                                        std::vector<size_t>* applied) {
  applied->clear();
  if (!g_enabled.load(std::memory_order_relaxed) || image.rgb == nullptr) return 0;
  // The boxes move through a stand-in without the masks, whose labels number the
  // instances, so that the masks can move once at the end, kept as the boxes were.
  detection::Targets standin;
  std::vector<uint8_t> masks;
  std::vector<int32_t> windows;
  const bool has_masks = targets != nullptr && targets->has_masks;
  const bool windowed = has_masks && targets->masks_windowed;
  if (targets != nullptr) {
    masks.swap(targets->masks);
    windows.swap(targets->mask_windows);
    targets->has_masks = targets->masks_windowed = false;
    standin = *targets;
    targets->masks.swap(masks);
    targets->mask_windows.swap(windows);
    targets->has_masks = has_masks;
    targets->masks_windowed = windowed;
    std::iota(standin.labels.begin(), standin.labels.end(), int64_t{0});
  }
  std::vector<Step> steps;
  absl::StatusOr<size_t> covered =
      Plan(ops, begin, end, draw, check_draw, image.rgb->width, image.rgb->height, has_masks,
           targets != nullptr ? &standin : nullptr, &steps);
  if (!covered.ok()) return covered.status();
  if (steps.size() < 2) return 0;  // One op (or none) applied: the op's own pass is as fast.
  for (const Step& step : steps) {
    if (absl::Status s = check(step.op, step.params, step.in_width, step.in_height); !s.ok()) {
      return s;
    }
  }
  if (has_masks) {
    if (absl::Status s = check_masks(image.rgb->width, image.rgb->height,
                                     steps.back().out_width, steps.back().out_height);
        !s.ok()) {
      return s;
    }
  }
  for (const Step& step : steps) applied->push_back(step.op);
  g_chains_run.fetch_add(1, std::memory_order_relaxed);

  AxisMap before_x, before_y, after_x, after_y;
  MovePixels(steps, image, &before_x, &before_y, &after_x, &after_y);
  if (targets == nullptr) return covered;

  // The targets: the stand-in's boxes; the labels and masks of the instances it kept.
  const std::vector<int64_t> ids = standin.labels;
  std::vector<int64_t> labels(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) labels[k] = targets->labels[ids[k]];
  const int in_w = targets->canvas_width, in_h = targets->canvas_height;
  std::vector<uint8_t> in_masks;
  std::vector<int32_t> in_windows;
  in_masks.swap(targets->masks);
  in_windows.swap(targets->mask_windows);
  *targets = std::move(standin);
  targets->labels = std::move(labels);
  targets->has_masks = has_masks;
  targets->masks_windowed = windowed;
  if (has_masks) {
    auto resize = std::find_if(steps.begin(), steps.end(), [](const Step& s) { return s.resize; });
    AxisMap mx, my;
    if (resize == steps.end()) {
      mx = MaskMap(before_x, 0, 0, after_x);
      my = MaskMap(before_y, 0, 0, after_y);
    } else {
      mx = MaskMap(before_x, resize->in_width, resize->out_width, after_x);
      my = MaskMap(before_y, resize->in_height, resize->out_height, after_y);
    }
    if (windowed) {
      GatherWindows(in_masks, in_windows, ids, mx, my, &targets->masks, &targets->mask_windows);
    } else {
      GatherMasks(in_masks, in_w, in_h, ids, mx, my, &targets->masks);
    }
  }
  return covered;
}

void SetGeometryChainForTesting(bool enabled) { g_enabled.store(enabled); }

int64_t GeometryChainsRunForTesting() { return g_chains_run.load(); }

}  // namespace flowloader::augment::internal
