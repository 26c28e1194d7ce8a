// elastic_transform.cc: torchvision 0.14's ElasticTransform(alpha=50.0, sigma=5.0,
// interpolation=bilinear, fill=0): a displacement field of two smoothed noise planes
// moves every pixel (grid_sample over identity grid + displacement).
//
// torchvision's get_params draws dx = torch.rand([1, 1, H, W]) * 2 - 1, blurs it with
// F.gaussian_blur([kx, kx], sigma) (kx = int(8 * sigma[0] + 1), made odd; sigma[0] along
// x, sigma[1] along y; reflect padding), scales it by alpha[0] / H, then the same for dy
// (ky from sigma[1], scaled by alpha[1] / W: torchvision's own size order). Even on a PIL
// image the pixels are its tensor kernel: grid_sample(align_corners=False, zeros
// padding) with a mask channel for the fill (out = v * mask + (1 - mask) * fill, which
// also darkens the border pixels once more, as torchvision does), rounded half to even,
// then cast to uint8 as torch casts: modular (a fill of -1 is 255, 300 is 44; the fill is
// torchvision's float, not truncated or clamped as PIL's fills are).
//
// Params: the two torch.rand planes as drawn, dx's H × W values then dy's (row-major,
// float32 in [0, 1)), so that an eager call with torch's draws gives torchvision's
// field; the blur, the scaling and the sampling are here, in float32 as torch's. The
// loader draws the planes from the sample's stream. They are 2 × H × W values, past
// OpParams::kMax, so they live in OpParams::more (8 bytes a pixel while the op runs).
//
// torchvision's separable 2-D blur is one conv2d and its accumulation order is
// MKL-DNN's; this one is two 1-D passes: the field differs by float rounding (~1e-7),
// which moves a bilinear output by far less than a level, so at most 1 level where a
// value sits on a rounding edge (the parity cases' bound). torch refuses reflect padding
// wider than the image (an image under kx / 2 pixels a side); here it folds again.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

constexpr char kName[] = "elastic_transform";

// TorchUint8 is torch's float -> uint8 cast of a rounded value on x86: through int32
// (its low byte: -1 is 255, 300 is 44), and a value outside int32 (or NaN) is int32's
// minimum, whose low byte is 0.
uint8_t TorchUint8(float rounded) {
  const bool in_range = rounded >= -2147483648.0f && rounded < 2147483648.0f;
  return static_cast<uint8_t>(static_cast<uint32_t>(
      in_range ? static_cast<int32_t>(rounded) : std::numeric_limits<int32_t>::min()));
}

// KernelSize is get_params' int(8 * sigma + 1), made odd.
int KernelSize(double sigma) {
  int k = static_cast<int>(8 * sigma + 1);
  return k % 2 == 0 ? k + 1 : k;
}

// Kernel1D is _get_gaussian_kernel1d(k, sigma) in float32: exp(-0.5 (x / sigma)^2) over
// linspace(-(k-1)/2, (k-1)/2, k) (integers: k is odd), divided by its float sum.
std::vector<float> Kernel1D(int k, double sigma) {
  std::vector<float> w(k);
  const float s = static_cast<float>(sigma);
  float sum = 0;
  for (int i = 0; i < k; ++i) {
    const float t = static_cast<float>(i - k / 2) / s;
    w[i] = std::exp(-0.5f * (t * t));
    sum += w[i];
  }
  for (float& v : w) v /= sum;
  return w;
}

// Reflect is torch's reflect padding (the edge pixel not repeated), folded again where
// the pad is wider than the side.
int Reflect(int i, int n) {
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// Blur runs the separable Gaussian (kernel k, sigma_x along rows, sigma_y along columns)
// over a width × height float plane, in place.
void Blur(std::vector<float>& plane, int width, int height, int k, double sigma_x,
          double sigma_y) {
  const std::vector<float> kx = Kernel1D(k, sigma_x), ky = Kernel1D(k, sigma_y);
  const int r = k / 2;
  std::vector<float> tmp(plane.size());
  // Rows: each copied with its reflected pads, then the taps in order over contiguous
  // floats (a loop over x the compiler vectorizes; each sum keeps torch's tap order).
  std::vector<float> padded(static_cast<size_t>(width) + 2 * r);
  std::vector<float> acc(width);
  for (int y = 0; y < height; ++y) {
    const float* row = &plane[static_cast<size_t>(y) * width];
    for (int x = -r; x < width + r; ++x) padded[x + r] = row[Reflect(x, width)];
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int j = 0; j < k; ++j) {
      const float w = kx[j];
      const float* in = padded.data() + j;
      for (int x = 0; x < width; ++x) acc[x] += w * in[x];
    }
    std::copy(acc.begin(), acc.end(), tmp.begin() + static_cast<size_t>(y) * width);
  }
  for (int y = 0; y < height; ++y) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int i = 0; i < k; ++i) {
      const float* row = &tmp[static_cast<size_t>(Reflect(y + i - r, height)) * width];
      const float w = ky[i];
      for (int x = 0; x < width; ++x) acc[x] += w * row[x];
    }
    std::copy(acc.begin(), acc.end(), plane.begin() + static_cast<size_t>(y) * width);
  }
}

class ElasticTransform : public Op {
 public:
  ElasticTransform(double alpha_x, double alpha_y, double sigma_x, double sigma_y,
                   Interpolation interpolation, bool has_fill, std::array<float, 3> fill)
      : alpha_{alpha_x, alpha_y},
        sigma_{sigma_x, sigma_y},
        interpolation_(interpolation),
        has_fill_(has_fill),
        fill_(fill) {}

  // Draws torch.rand([1, 1, H, W]) twice: dx's plane, then dy's (float32 in [0, 1)).
  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    const size_t n = 2 * static_cast<size_t>(width) * height;
    params->more.reserve(n > OpParams::kMax ? n - OpParams::kMax : 0);
    for (size_t i = 0; i < n; ++i) {
      params->Push(static_cast<float>(rng.NextU64() >> 40) * (1.0f / 16777216.0f));
    }
  }

  // Per pixel: the two noise planes drawn (OpParams::more), the dx and dy fields and
  // Blur's temporary plane, all float.
  int64_t ScratchBytes(OpSize in) const override {
    return int64_t{in.width} * in.height * 5 * static_cast<int64_t>(sizeof(float));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    const Image& src = *image.rgb;
    const int w = src.width, h = src.height;
    const size_t n = static_cast<size_t>(w) * h;
    if (p.Size() != 2 * n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "needs 2 x ", w, " x ", h, " noise values (two torch.rand planes), got ", p.Size()));
    }
    std::vector<float> dx(n), dy(n);
    for (size_t i = 0; i < n; ++i) {
      const float u = static_cast<float>(p.At(i)), v = static_cast<float>(p.At(n + i));
      if (!(u >= 0 && u <= 1 && v >= 0 && v <= 1)) {  // NaN too: no wild coordinates.
        return absl::InvalidArgumentError(absl::StrCat(
            "noise values must be in [0, 1] (torch.rand's), got ", u, " and ", v));
      }
      dx[i] = u * 2.0f - 1.0f;
      dy[i] = v * 2.0f - 1.0f;
    }
    if (sigma_[0] > 0) Blur(dx, w, h, KernelSize(sigma_[0]), sigma_[0], sigma_[1]);
    if (sigma_[1] > 0) Blur(dy, w, h, KernelSize(sigma_[1]), sigma_[0], sigma_[1]);
    const float ax = static_cast<float>(alpha_[0]), ay = static_cast<float>(alpha_[1]);
    const float fh = static_cast<float>(h), fw = static_cast<float>(w);
    for (size_t i = 0; i < n; ++i) {
      dx[i] = dx[i] * ax / fh;  // torchvision's alpha[0] / size[0] (the height).
      dy[i] = dy[i] * ay / fw;
    }
    Sample(src, dx, dy, image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

 private:
  // Sample is _apply_grid_transform(img, identity + displacement, mode, fill).
  void Sample(const Image& src, const std::vector<float>& dx, const std::vector<float>& dy,
              Image* dst) const {
    const int w = src.width, h = src.height;
    dst->Resize(w, h, 3);
    // _create_identity_grid: linspace((-s + 1) / s, (s - 1) / s, s) per axis.
    std::vector<float> gx(w), gy(h);
    for (int x = 0; x < w; ++x) {
      gx[x] = static_cast<float>(
          policy::TorchLinspace((-w + 1.0) / w, (w - 1.0) / w, w, x));
    }
    for (int y = 0; y < h; ++y) {
      gy[y] = static_cast<float>(
          policy::TorchLinspace((-h + 1.0) / h, (h - 1.0) / h, h, y));
    }
    // grid_sample's unnormalize for align_corners=False: (g + 1) * (size / 2) - 0.5.
    const float sx = static_cast<float>(w) / 2, sy = static_cast<float>(h) / 2;
    const uint8_t* in = src.pixels.data();
    for (int y = 0; y < h; ++y) {
      uint8_t* out = dst->Row(y);
      for (int x = 0; x < w; ++x) {
        const size_t i = static_cast<size_t>(y) * w + x;
        const float ix = (gx[x] + dx[i] + 1.0f) * sx - 0.5f;
        const float iy = (gy[y] + dy[i] + 1.0f) * sy - 0.5f;
        float v[3] = {0, 0, 0};
        float mask = 0;
        if (interpolation_ == Interpolation::kNearest) {
          const int nx = static_cast<int>(std::nearbyint(ix));
          const int ny = static_cast<int>(std::nearbyint(iy));
          if (nx >= 0 && nx < w && ny >= 0 && ny < h) {
            const uint8_t* px = in + (static_cast<size_t>(ny) * w + nx) * 3;
            for (int c = 0; c < 3; ++c) v[c] = px[c];
            mask = 1;
          }
          for (int c = 0; c < 3; ++c) {
            const float o = has_fill_ && mask < 0.5f ? fill_[c] : v[c];
            out[3 * x + c] = TorchUint8(std::nearbyint(o));
          }
          continue;
        }
        // Bilinear: grid_sample's weights and sum order (nw, ne, sw, se); taps outside
        // are zeros.
        const float x0 = std::floor(ix), y0 = std::floor(iy);
        const float we = ix - x0, ww = 1.0f - we;
        const float ws = iy - y0, wn = 1.0f - ws;
        const float weight[4] = {wn * ww, wn * we, ws * ww, ws * we};
        const int tx[4] = {static_cast<int>(x0), static_cast<int>(x0) + 1,
                           static_cast<int>(x0), static_cast<int>(x0) + 1};
        const int ty[4] = {static_cast<int>(y0), static_cast<int>(y0),
                           static_cast<int>(y0) + 1, static_cast<int>(y0) + 1};
        for (int t = 0; t < 4; ++t) {
          const bool inside = tx[t] >= 0 && tx[t] < w && ty[t] >= 0 && ty[t] < h;
          const uint8_t* px =
              inside ? in + (static_cast<size_t>(ty[t]) * w + tx[t]) * 3 : nullptr;
          for (int c = 0; c < 3; ++c) v[c] += (inside ? px[c] : 0.0f) * weight[t];
          mask += (inside ? 1.0f : 0.0f) * weight[t];
        }
        for (int c = 0; c < 3; ++c) {
          float o = v[c];
          if (has_fill_) o = o * mask + (1.0f - mask) * fill_[c];
          // torch.round (half to even), then the uint8 cast (modular: an out-of-range
          // fill wraps, as torchvision's; in-range values never leave [0, 255]).
          out[3 * x + c] = TorchUint8(std::nearbyint(o));
        }
      }
    }
  }

  const double alpha_[2];
  const double sigma_[2];
  const Interpolation interpolation_;
  const bool has_fill_;
  const std::array<float, 3> fill_;  // torchvision's float fill, any value.
};

// ReadPair reads "a number or [x, y]" in [-hi, hi] into a pair: torchvision takes any
// sign (a negative alpha moves pixels the other way, a sigma <= 0 is no blur).
absl::Status ReadPair(const OpArgs& args, const std::string& arg, double hi, double out[2]) {
  const OpValue& v = args.Get(arg);
  const std::string what = absl::StrCat("a number or [x, y], each in [-", hi, ", ", hi, "]");
  if (!v.word.empty() || v.is_none || (v.numbers.size() != 1 && v.numbers.size() != 2)) {
    return ArgError(kName, arg, what, v);
  }
  out[0] = v.numbers[0];
  out[1] = v.numbers.size() == 2 ? v.numbers[1] : v.numbers[0];
  for (int i = 0; i < 2; ++i) {
    if (!(out[i] >= -hi && out[i] <= hi)) return ArgError(kName, arg, what, v);
  }
  return absl::OkStatus();
}

// ReadFloatFill reads ElasticTransform's fill: a number (every channel) or [r, g, b],
// each finite, kept as the float torchvision's tensor kernel blends (not PIL's truncated,
// clamped fill: ElasticTransform runs its tensor kernel on PIL images too).
absl::Status ReadFloatFill(const OpArgs& args, std::array<float, 3>* fill) {
  const OpValue& v = args.Get("fill");
  const bool one = v.IsNumber() || (v.is_list && v.numbers.size() == 1);
  const char* what = "null, a number or [r, g, b], each finite (cast to uint8 as "
                     "torchvision's: -1 is 255)";
  if (!v.word.empty() || !(one || (v.is_list && v.numbers.size() == 3))) {
    return ArgError(kName, "fill", what, v);
  }
  for (int c = 0; c < 3; ++c) {
    const double x = v.numbers[one ? 0 : c];
    if (!std::isfinite(static_cast<float>(x))) return ArgError(kName, "fill", what, v);
    (*fill)[c] = static_cast<float>(x);
  }
  return absl::OkStatus();
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "an elastic warp: every pixel moved by a random displacement field (noise "
              "blurred by sigma, scaled by alpha), as torchvision's grid_sample",
              {{"alpha", "50.0", "a number or [x, y], each in [-10000, 10000]",
                "the displacements' magnitude (negative: the other way)"},
               {"sigma", "5.0",
                "a number or [x, y], each in [-100, 100], both <= 0 or both > 0",
                "the displacements' smoothness (the Gaussian blur's sigma; <= 0: no blur)"},
               {"interpolation", "bilinear", "nearest or bilinear",
                "grid_sample's mode"},
               {"fill", "0", "null, a number or [r, g, b], each finite",
                "the colour of pixels from outside the image (null: zeros, no mask); "
                "outside [0, 255] it wraps as torchvision's uint8 cast (-1 is 255)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      double alpha[2], sigma[2];
      if (absl::Status s = ReadPair(args, "alpha", 10000, alpha); !s.ok()) return s;
      if (absl::Status s = ReadPair(args, "sigma", 100, sigma); !s.ok()) return s;
      if ((sigma[0] > 0) != (sigma[1] > 0)) {
        // torchvision blurs dx with both sigmas when sigma[0] > 0: a zero one gives NaNs.
        return ArgError(kName, "sigma", "a number or [x, y], both <= 0 or both > 0",
                        args.Get("sigma"));
      }
      Interpolation interpolation;
      if (absl::Status s = ReadInterpolation(kName, args, "interpolation", &interpolation);
          !s.ok()) {
        return s;
      }
      if (interpolation == Interpolation::kBicubic) {
        return ArgError(kName, "interpolation", "nearest or bilinear (torchvision's tensor "
                        "kernel, which ElasticTransform uses on PIL images too)",
                        args.Get("interpolation"));
      }
      std::array<float, 3> fill{};
      const bool has_fill = !args.Get("fill").is_none;
      if (has_fill) {
        if (absl::Status s = ReadFloatFill(args, &fill); !s.ok()) return s;
      }
      return std::unique_ptr<Op>(new ElasticTransform(alpha[0], alpha[1], sigma[0], sigma[1],
                                                      interpolation, has_fill, fill));
    });

}  // namespace
}  // namespace flowloader::augment
