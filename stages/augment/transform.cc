// transform.cc: option checks, crop planning and the fused Apply. The arithmetic lives in
// internal/crop_math (torchvision's numbers) and internal/resample (Pillow's filter).
//
// Thread-safety: Transform is immutable after Create; Apply's scratch is thread-local.
#include "stages/augment/transform.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stages/augment/internal/crop_math.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/internal/resample.h"
#include "stages/augment/internal/resample_ycc.h"

namespace flowloader::augment {
namespace {

// Largest output side: keeps image_size² * 3 and every index in int range.
constexpr int kMaxImageSize = 1 << 14;

// A decoded box may miss the planned region by float noise in covered/scale; more than
// this (in decoded pixels) means the decoder and the plan disagree.
constexpr double kEdgeTolerance = 1e-3;

bool Finite(double v) { return std::isfinite(v); }

int EffectiveResizeSize(const TransformOptions& o) {
  return o.resize_size != 0 ? o.resize_size
                            : static_cast<int>(std::lround(o.image_size * 256.0 / 224.0));
}

// Invalid is a refusal in the words the user wrote: the fields are the augment stage's
// options (image_size, resize_size, ...), which the spec's keys and the ops' arguments
// set; no internal struct is named.
absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

// Window is the readable index range of one axis of the decoded image.
struct Window {
  int lo;
  int hi;
};

// ClampWindow: only the pixels the box overlaps (train: crop, then resize the crop).
Window ClampWindow(double x0, double x1, int size) {
  Window w;
  // The epsilon keeps an integer edge that arrived as 100.0000000001 on its pixel.
  w.lo = std::max(0, static_cast<int>(std::floor(x0 + 1e-6)));
  w.hi = std::min(size, static_cast<int>(std::ceil(x1 - 1e-6)));
  if (w.hi <= w.lo) {  // A box thinner than a pixel: its one pixel.
    w.lo = std::min(w.lo, size - 1);
    w.hi = w.lo + 1;
  }
  return w;
}

// SetReadWindow sets a resample spec's readable window (win_x0 .. win_y1) for the box
// [x0, x1) x [y0, y1) in an image of width x height: only the pixels the box overlaps
// when clamped to the region (train: crop, then resize the crop), else the whole image.
template <class Spec>
void SetReadWindow(double x0, double x1, double y0, double y1, int width, int height,
                   bool clamp_to_region, Spec* spec) {
  if (clamp_to_region) {
    const Window wx = ClampWindow(x0, x1, width);
    const Window wy = ClampWindow(y0, y1, height);
    spec->win_x0 = wx.lo;
    spec->win_x1 = wx.hi;
    spec->win_y0 = wy.lo;
    spec->win_y1 = wy.hi;
  } else {
    spec->win_x0 = 0;
    spec->win_x1 = width;
    spec->win_y0 = 0;
    spec->win_y1 = height;
  }
}

// OutputSpecFor: the layout, and Normalize as one multiply-add per value.
internal::OutputSpec OutputSpecFor(const TransformOptions& options, void* dst) {
  internal::OutputSpec out;
  out.dst = dst;
  if (options.layout == Layout::kFloatCHW) {
    out.kind = internal::OutputSpec::Kind::kFloatCHW;
    for (int c = 0; c < 3; ++c) {
      // (q / 255 - mean) / std as one multiply-add.
      out.scale[c] = static_cast<float>(1.0 / (255.0 * options.std[c]));
      out.offset[c] = static_cast<float>(-static_cast<double>(options.mean[c]) /
                                         options.std[c]);
    }
  } else {
    out.kind = internal::OutputSpec::Kind::kUint8HWC;
  }
  return out;
}

// PlaneFor is one plane's part of a YCbCr resize: `box` (decoded luma pixels) in that
// plane's samples, which each cover step_x x step_y luma pixels starting phase_y rows
// above the Y plane's row 0; the window is the box's pixels (train) or the whole plane.
internal::PlaneSpec PlaneFor(const ImageView& src, const RectF& box, int step_x, int step_y,
                             int phase_y, bool clamp_to_region) {
  internal::PlaneSpec p;
  p.src = src;
  p.box = RectF{box.x / step_x, (box.y + phase_y) / step_y, box.w / step_x, box.h / step_y};
  SetReadWindow(p.box.x, p.box.x + p.box.w, p.box.y, p.box.y + p.box.h, src.width,
                src.height, clamp_to_region, &p);
  return p;
}

internal::YccSpec YccSpecFor(const decode::DecodedImage& decoded, const RectF& box,
                             bool clamp_to_region, int out_size, bool flip) {
  const decode::ChromaPlanes& c = decoded.chroma;
  const Image& img = decoded.image;
  internal::YccSpec spec;
  spec.planes[0] = PlaneFor(img.view(), box, 1, 1, 0, clamp_to_region);
  spec.planes[1] = PlaneFor(c.cb(img), box, c.step_x, c.step_y, c.phase_y, clamp_to_region);
  spec.planes[2] = PlaneFor(c.cr(img), box, c.step_x, c.step_y, c.phase_y, clamp_to_region);
  spec.out_size = out_size;
  spec.flip = flip;
  return spec;
}

// FilterSupport is the filter's reach in output pixels (Pillow's support).
double FilterSupport(Interpolation interpolation) {
  return interpolation == Interpolation::kBicubic ? 2.0 : 1.0;
}

// AcceptsYcc: only the bilinear pass resizes YCbCr planes.
bool AcceptsYcc(const TransformOptions& o) {
  return o.interpolation == Interpolation::kBilinear && internal::YccResampleIsFast();
}

// NearestAxis is one axis of F.resize(NEAREST) then the crop: Pillow resizes with
// ImagingScaleAffine, whose source position starts at scale / 2 and accumulates `scale`
// per output pixel in double, truncated; an output pixel exactly between two sources
// (integer ratios) goes the way that accumulation rounds, so positions are accumulated
// from the image's edge (offset + count steps), not from the crop's. Each is then mapped
// into the decoded pixels (the identity for a full-scale decode).
void NearestAxis(int in_size, int out_size, int offset, int count, double covered_origin,
                 double decoded_scale, int decoded_size, int* index) {
  const double scale = static_cast<double>(in_size) / out_size;
  double pos = scale * 0.5;
  for (int k = 0; k < offset + count; ++k, pos += scale) {
    if (k < offset) continue;
    const int source = pos < 0.0 ? -1 : static_cast<int>(pos);
    const int decoded =
        static_cast<int>(std::floor((source + 0.5 - covered_origin) * decoded_scale));
    index[k - offset] = std::clamp(decoded, 0, decoded_size - 1);
  }
}

// NearestResizeThenCrop is eval's Resize(NEAREST) + CenterCrop: the crop's pixels of
// F.resize's output, from the source rows and columns F.resize picks.
void NearestResizeThenCrop(const decode::DecodedImage& decoded, const CropPlan& plan, int n,
                           Image* out) {
  const Image& img = decoded.image;
  // The original size: what `covered` and the scale say the decode spans, for a full
  // decode the image itself.
  const int width = static_cast<int>(std::lround(plan.region.w * plan.resized_width / n));
  const int height = static_cast<int>(std::lround(plan.region.h * plan.resized_height / n));
  thread_local std::vector<int> cols, rows;
  cols.resize(n);
  rows.resize(n);
  NearestAxis(width, plan.resized_width, plan.crop_left, n, decoded.covered.x,
              decoded.scale_x, img.width, cols.data());
  NearestAxis(height, plan.resized_height, plan.crop_top, n, decoded.covered.y,
              decoded.scale_y, img.height, rows.data());
  out->Resize(n, n, 3);
  for (int y = 0; y < n; ++y) {
    const uint8_t* in = img.pixels.data() + static_cast<size_t>(rows[y]) * img.stride();
    uint8_t* o = out->Row(y);
    for (int x = 0; x < n; ++x) {
      const uint8_t* px = in + 3 * cols[plan.flip ? n - 1 - x : x];
      o[3 * x] = px[0];
      o[3 * x + 1] = px[1];
      o[3 * x + 2] = px[2];
    }
  }
}

}  // namespace

// ApplyPillow is Apply for bicubic and nearest: Pillow's exact resize of the box (train:
// of the crop alone, as F.resized_crop; eval: reading around it, as Resize then
// CenterCrop), then the flip and the layout.
void Transform::ApplyPillow(const decode::DecodedImage& decoded, const RectF& box,
                            const CropPlan& plan, void* dst) const {
  // One n × n image per size a thread's transforms produce (PillowResample sizes it).
  thread_local SizedSlots<Image> slots;
  const int n = options_.image_size;
  Image& resized = slots.For(n, n);
  const Image& img = decoded.image;
  if (!plan.clamp_to_region && options_.interpolation == Interpolation::kNearest &&
      plan.resized_width > 0) {
    NearestResizeThenCrop(decoded, plan, n, &resized);
  } else if (plan.clamp_to_region) {
    const Window wx = ClampWindow(box.x, box.x + box.w, img.width);
    const Window wy = ClampWindow(box.y, box.y + box.h, img.height);
    const ImageView window{img.pixels.data() + wy.lo * img.stride() + wx.lo * 3, wx.hi - wx.lo,
                           wy.hi - wy.lo, 3, img.stride()};
    internal::PillowResample(window, RectF{box.x - wx.lo, box.y - wy.lo, box.w, box.h}, n, n,
                             options_.interpolation, plan.flip, &resized);
  } else {
    internal::PillowResample(img.view(), box, n, n, options_.interpolation, plan.flip, &resized);
  }
  const size_t plane = static_cast<size_t>(n) * n;
  if (options_.layout == Layout::kUint8HWC) {
    std::copy(resized.pixels.begin(), resized.pixels.begin() + plane * 3,
              static_cast<uint8_t*>(dst));
    return;
  }
  const internal::OutputSpec out = OutputSpecFor(options_, dst);
  float* chw = static_cast<float*>(dst);
  for (int c = 0; c < 3; ++c) {
    for (size_t i = 0; i < plane; ++i) {
      chw[c * plane + i] = static_cast<float>(resized.pixels[3 * i + c]) * out.scale[c] +
                           out.offset[c];
    }
  }
}

absl::StatusOr<std::unique_ptr<Transform>> Transform::Create(const TransformOptions& o) {
  if (o.mode != Mode::kTrain && o.mode != Mode::kEval) return Invalid("unknown mode");
  if (o.layout != Layout::kFloatCHW && o.layout != Layout::kUint8HWC) {
    return Invalid("unknown layout");
  }
  if (o.image_size <= 0 || o.image_size > kMaxImageSize) {
    return Invalid(absl::StrCat("image_size must be in [1, ", kMaxImageSize, "], got ",
                                o.image_size));
  }
  if (o.resize_size != 0 &&
      (o.resize_size < o.image_size || o.resize_size > kMaxImageSize)) {
    return Invalid(absl::StrCat("resize_size must be 0 (auto) or in [image_size=",
                                o.image_size, ", ", kMaxImageSize, "], got ",
                                o.resize_size));
  }
  // Only eval resizes before its crop (train crops, then resizes to image_size).
  if (o.mode == Mode::kEval && o.resize_size == 0 && EffectiveResizeSize(o) > kMaxImageSize) {
    return Invalid(absl::StrCat("image_size ", o.image_size, " in eval resizes the shorter "
                                "side to ", EffectiveResizeSize(o), " (image_size × 256/224), "
                                "over ", kMaxImageSize, ": lower image_size or set resize_size"));
  }
  // Negated comparisons so that NaN fails them.
  if (!(Finite(o.scale_min) && Finite(o.scale_max) && o.scale_min > 0 &&
        o.scale_min <= o.scale_max && o.scale_max <= 1)) {
    return Invalid(absl::StrCat("need 0 < scale_min <= scale_max <= 1, got scale [",
                                o.scale_min, ", ", o.scale_max, "]"));
  }
  if (!(Finite(o.ratio_min) && Finite(o.ratio_max) && o.ratio_min > 0 &&
        o.ratio_min <= o.ratio_max)) {
    return Invalid(absl::StrCat("need 0 < ratio_min <= ratio_max (finite), got ratio [",
                                o.ratio_min, ", ", o.ratio_max, "]"));
  }
  if (!(o.flip_p >= 0 && o.flip_p <= 1)) {
    return Invalid(absl::StrCat("flip_p must be in [0, 1], got ", o.flip_p));
  }
  for (int c = 0; c < 3; ++c) {
    if (!Finite(o.mean[c])) {
      return Invalid(absl::StrCat("mean[", c, "] must be finite, got ", o.mean[c]));
    }
    if (!(Finite(o.std[c]) && o.std[c] > 0)) {
      return Invalid(absl::StrCat("std[", c, "] must be finite and > 0, got ", o.std[c]));
    }
  }
  return std::unique_ptr<Transform>(new Transform(o));
}

CropPlan Transform::Plan(int width, int height, SampleRng& rng) const {
  CropPlan plan;
  if (width <= 0 || height <= 0) return plan;  // Empty region: Apply refuses it.
  const int n = options_.image_size;
  if (options_.mode == Mode::kTrain) {
    const internal::IntBox box = internal::RandomResizedCropBox(
        width, height, options_.scale_min, options_.scale_max, options_.ratio_min,
        options_.ratio_max, rng);
    plan.region = RectF{static_cast<double>(box.left), static_cast<double>(box.top),
                        static_cast<double>(box.width), static_cast<double>(box.height)};
    plan.clamp_to_region = true;
    plan.flip = rng.Bernoulli(options_.flip_p);
    // Crop then resize: the filter reads nothing outside the crop.
    plan.decode_request.region = plan.region;
    plan.decode_request.target_width = n;
    plan.decode_request.target_height = n;
    plan.decode_request.accept_ycc = AcceptsYcc(options_);
    return plan;
  }

  // Eval: Resize(shorter side) then CenterCrop, as one fractional box of the original.
  int new_w = 0;
  int new_h = 0;
  internal::ResizeShorterSide(width, height, EffectiveResizeSize(options_), &new_w, &new_h);
  const int top = internal::CenterCropOffset(new_h, n);
  const int left = internal::CenterCropOffset(new_w, n);
  const double sx = static_cast<double>(width) / new_w;  // Original px per resized px.
  const double sy = static_cast<double>(height) / new_h;
  plan.region = RectF{left * sx, top * sy, n * sx, n * sy};
  plan.clamp_to_region = false;
  plan.flip = false;
  plan.resized_width = new_w;
  plan.resized_height = new_h;
  plan.crop_left = left;
  plan.crop_top = top;
  // The filter reaches support × max(scale, 1) original pixels beyond the box.
  const double support = FilterSupport(options_.interpolation);
  const double reach_x = support * std::max(sx, 1.0);
  const double reach_y = support * std::max(sy, 1.0);
  const double x0 = std::max(0.0, plan.region.x - reach_x);
  const double y0 = std::max(0.0, plan.region.y - reach_y);
  const double x1 = std::min<double>(width, plan.region.x + plan.region.w + reach_x);
  const double y1 = std::min<double>(height, plan.region.y + plan.region.h + reach_y);
  plan.decode_request.region = RectF{x0, y0, x1 - x0, y1 - y0};
  // The request's target is what the grown box becomes downstream (n columns for the
  // region proper, proportionally more for the margin), so the decoder's DCT-scale
  // choice keeps the region itself at >= n decoded pixels.
  plan.decode_request.target_width =
      static_cast<int>(std::ceil(n * (x1 - x0) / plan.region.w - 1e-9));
  plan.decode_request.target_height =
      static_cast<int>(std::ceil(n * (y1 - y0) / plan.region.h - 1e-9));
  plan.decode_request.accept_ycc = AcceptsYcc(options_);
  return plan;
}

absl::Status Transform::Apply(const decode::DecodedImage& decoded, const CropPlan& plan,
                              void* dst) const {
  const Image& img = decoded.image;
  const bool ycc = decoded.format == decode::PixelFormat::kYcc;
  if (dst == nullptr) return absl::InvalidArgumentError("Apply: dst is null");
  if (img.channels != (ycc ? 1 : 3) || img.width <= 0 || img.height <= 0 ||
      img.pixels.size() < img.stride() * static_cast<size_t>(img.height)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Apply: decoded image must be non-empty ", ycc ? "Y plane" : "RGB", ", got ",
        img.width, "x", img.height, "x", img.channels, " with ", img.pixels.size(),
        " bytes"));
  }
  if (ycc) {
    const decode::ChromaPlanes& c = decoded.chroma;
    const size_t need = img.stride() * static_cast<size_t>(img.height) +
                        2 * static_cast<size_t>(std::max(c.width, 0)) * std::max(c.height, 0);
    if (c.width <= 0 || c.height <= 0 || (c.step_x != 1 && c.step_x != 2) ||
        (c.step_y != 1 && c.step_y != 2) || c.phase_y < 0 || c.phase_y >= c.step_y ||
        c.width * c.step_x < img.width || c.height * c.step_y < img.height + c.phase_y ||
        img.pixels.size() < need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Apply: chroma planes ", c.width, "x", c.height, " (step ", c.step_x, "x",
          c.step_y, ", phase ", c.phase_y, ") do not cover the ", img.width, "x",
          img.height, " Y plane in ", img.pixels.size(), " bytes"));
    }
  }
  if (!(Finite(decoded.scale_x) && Finite(decoded.scale_y) && decoded.scale_x > 0 &&
        decoded.scale_y > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Apply: decoded scale must be > 0, got ", decoded.scale_x, " x ", decoded.scale_y));
  }
  const RectF& r = plan.region;
  if (!(Finite(r.x) && Finite(r.y) && Finite(r.w) && Finite(r.h) && r.w > 0 && r.h > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Apply: empty plan region ", r.w, "x",
                                                   r.h, " at (", r.x, ", ", r.y, ")"));
  }

  // Map the region into decoded pixels.
  double x0 = (r.x - decoded.covered.x) * decoded.scale_x;
  double y0 = (r.y - decoded.covered.y) * decoded.scale_y;
  double x1 = x0 + r.w * decoded.scale_x;
  double y1 = y0 + r.h * decoded.scale_y;
  if (x0 < -kEdgeTolerance || y0 < -kEdgeTolerance || x1 > img.width + kEdgeTolerance ||
      y1 > img.height + kEdgeTolerance) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Apply: plan region maps to [", x0, ", ", x1, ") x [", y0, ", ", y1,
        ") of the decoded image, outside its ", img.width, "x", img.height, " pixels"));
  }
  x0 = std::max(x0, 0.0);
  y0 = std::max(y0, 0.0);
  x1 = std::min<double>(x1, img.width);
  y1 = std::min<double>(y1, img.height);

  if (options_.interpolation != Interpolation::kBilinear) {
    if (ycc) return absl::InvalidArgumentError("Apply: bicubic/nearest need RGB pixels");
    ApplyPillow(decoded, RectF{x0, y0, x1 - x0, y1 - y0}, plan, dst);
    return absl::OkStatus();
  }
  const internal::OutputSpec out = OutputSpecFor(options_, dst);
  if (ycc) {
    internal::ResampleYcc(
        YccSpecFor(decoded, RectF{x0, y0, x1 - x0, y1 - y0}, plan.clamp_to_region,
                   options_.image_size, plan.flip),
        out);
    return absl::OkStatus();
  }

  internal::ResampleSpec spec;
  spec.src = img.view();
  spec.box = RectF{x0, y0, x1 - x0, y1 - y0};
  spec.out_size = options_.image_size;
  spec.flip = plan.flip;
  SetReadWindow(x0, x1, y0, y1, img.width, img.height, plan.clamp_to_region, &spec);

  internal::ResampleRgb(spec, out);
  return absl::OkStatus();
}

size_t Transform::OutputBytes() const {
  const size_t n = static_cast<size_t>(options_.image_size);
  const size_t elem = options_.layout == Layout::kFloatCHW ? sizeof(float) : 1;
  return 3 * n * n * elem;
}

std::array<int, 3> Transform::OutputShape() const {
  const int n = options_.image_size;
  if (options_.layout == Layout::kFloatCHW) return {3, n, n};
  return {n, n, 3};
}

const std::vector<std::string>& ModeNames() {
  static const std::vector<std::string>* const names =
      new std::vector<std::string>{"train", "eval"};
  return *names;
}

const std::vector<std::string>& LayoutNames() {
  static const std::vector<std::string>* const names =
      new std::vector<std::string>{"float_chw", "uint8_hwc"};
  return *names;
}

const std::string& ModeName(Mode mode) { return ModeNames()[static_cast<size_t>(mode)]; }

const std::string& LayoutName(Layout layout) {
  return LayoutNames()[static_cast<size_t>(layout)];
}

namespace {

// ParseChoice is the index of `name` in `names`, or InvalidArgument naming `what`.
absl::StatusOr<size_t> ParseChoice(const std::vector<std::string>& names,
                                   const std::string& name, const std::string& what) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat(what, " must be ", absl::StrJoin(names, " or "),
                                                 ", got '", name, "'"));
}

}  // namespace

absl::StatusOr<Mode> ParseMode(const std::string& name, const std::string& what) {
  absl::StatusOr<size_t> i = ParseChoice(ModeNames(), name, what);
  if (!i.ok()) return i.status();
  return static_cast<Mode>(*i);
}

absl::StatusOr<Layout> ParseLayout(const std::string& name, const std::string& what) {
  absl::StatusOr<size_t> i = ParseChoice(LayoutNames(), name, what);
  if (!i.ok()) return i.status();
  return static_cast<Layout>(*i);
}

}  // namespace flowloader::augment
