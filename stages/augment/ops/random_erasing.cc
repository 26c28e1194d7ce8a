// random_erasing.cc: torchvision's RandomErasing(p=0.5, scale=(0.02, 0.33),
// ratio=(0.3, 3.3), value=0, inplace=False) on the normalized tensor in the batch slot,
// plus timm's RandomErasing variants as options (mode: const | rand | pixel, max_count).
//
// Params (Draw = RandomErasing.get_params): top, left, height, width of the first box,
// then the seed of the box noise, then top, left, height, width of each further box
// (max_count > 1). A box that found no place in 10 attempts is (0, 0, H, W), which
// erases nothing, as torchvision's fallback returns the image itself. The noise of
// `random`/pixel/rand comes from the seed, so it is the sample's stream as every draw.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/crop_math.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

constexpr char kName[] = "random_erasing";
constexpr int kMaxCount = 5;  // 5 + 4 * 4 = 21 params, within OpParams::kMax.

// Fill is what an erased box holds: torchvision's value (a constant per channel, or
// value='random': normal noise per pixel, = timm's mode 'pixel'), or timm's mode 'rand'
// (one normal colour per box).
enum class Fill { kConstant, kPixelNoise, kBoxColour };

// Ziggurat is Marsaglia and Tsang's ziggurat for N(0, 1) (J. Stat. Software 5(8), 2000),
// 128 layers: one 64-bit draw per normal in 98.8% of cases, against a log, a square root
// and a sine per normal for Box-Muller (a 224² box of noise is 50 000 normals). The
// layer comes from the low 7 bits and the value from the high 32, so that the two are
// independent (the flaw of the original's shared bits).
class Ziggurat {
 public:
  static const Ziggurat& Get() {
    static const Ziggurat* const tables = new Ziggurat;
    return *tables;
  }

  float Next(SampleRng& rng) const {
    for (;;) {
      const uint64_t bits = rng.NextU64();
      const int layer = static_cast<int>(bits & 127);
      const int32_t hz = static_cast<int32_t>(bits >> 32);
      const double x = hz * w_[layer];
      if (static_cast<uint32_t>(std::abs(static_cast<int64_t>(hz))) < k_[layer]) {
        return static_cast<float>(x);  // Inside the layer's rectangle.
      }
      if (layer == 0) return static_cast<float>(Tail(rng, hz > 0));
      // The wedge: accept under the density.
      if (f_[layer] + rng.Uniform(0, 1) * (f_[layer - 1] - f_[layer]) < std::exp(-0.5 * x * x)) {
        return static_cast<float>(x);
      }
    }
  }

 private:
  static constexpr double kR = 3.442619855899;  // The base layer's right edge.
  static constexpr double kV = 9.91256303526217e-3;  // Each layer's area.

  Ziggurat() {
    const double m1 = 2147483648.0;  // 2^31: hz is a signed 32-bit draw.
    double dn = kR, tn = kR;
    const double q = kV / std::exp(-0.5 * dn * dn);
    k_[0] = static_cast<uint32_t>((dn / q) * m1);
    k_[1] = 0;
    w_[0] = q / m1;
    w_[127] = dn / m1;
    f_[0] = 1.0;
    f_[127] = std::exp(-0.5 * dn * dn);
    for (int i = 126; i >= 1; --i) {
      dn = std::sqrt(-2.0 * std::log(kV / dn + std::exp(-0.5 * dn * dn)));
      k_[i + 1] = static_cast<uint32_t>((dn / tn) * m1);
      tn = dn;
      f_[i] = std::exp(-0.5 * dn * dn);
      w_[i] = dn / m1;
    }
  }

  // Tail draws from beyond kR (Marsaglia's method for the tail).
  static double Tail(SampleRng& rng, bool positive) {
    double x, y;
    do {
      x = -std::log(1.0 - rng.Uniform(0, 1)) / kR;
      y = -std::log(1.0 - rng.Uniform(0, 1));
    } while (y + y < x * x);
    return positive ? kR + x : -kR - x;
  }

  uint32_t k_[128];
  double w_[128];
  double f_[128];
};

// Normals fills out[0..n) with standard normal draws from rng. (torch's normal_ uses its
// own generator: the values differ from torchvision's, the distribution does not.)
void Normals(SampleRng& rng, float* out, size_t n) {
  const Ziggurat& z = Ziggurat::Get();
  for (size_t i = 0; i < n; ++i) out[i] = z.Next(rng);
}

class RandomErasing : public Op {
 public:
  RandomErasing(std::pair<double, double> scale, std::pair<double, double> ratio, Fill fill,
                std::array<float, 3> value, int max_count)
      : scale_(scale), log_ratio_{std::log(ratio.first), std::log(ratio.second)}, fill_(fill),
        value_(value), max_count_(max_count) {}

  PixelForm Input() const override { return PixelForm::kFloatCHW; }

  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    // timm: count in [1, max_count], each box's area divided by the count.
    const int count = max_count_ > 1 ? static_cast<int>(rng.UniformInt(1, max_count_ + 1)) : 1;
    const double area = static_cast<double>(width) * height;
    for (int k = 0; k < count; ++k) {
      DrawBox(width, height, area / count, rng, params);
      if (k == 0) params->Push(static_cast<double>(rng.NextU64() >> 11));  // Exact in a double.
    }
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n < 5 || (p.n - 5) % 4 != 0) {
      return absl::InvalidArgumentError(absl::StrCat("random_erasing: ", p.n, " params"));
    }
    const uint64_t seed = static_cast<uint64_t>(p.v[4]);
    if (absl::Status s = EraseBox(p.v, seed, 0, image); !s.ok()) return s;
    for (int at = 5, k = 1; at < p.n; at += 4, ++k) {
      if (absl::Status s = EraseBox(p.v + at, seed, k, image); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  // DrawBox is one box of get_params: up to 10 attempts, else the no-op (0, 0, H, W).
  void DrawBox(int width, int height, double box_area, SampleRng& rng, OpParams* params) const {
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double erase_area = box_area * rng.Uniform(scale_.first, scale_.second);
      const double aspect = std::exp(rng.Uniform(log_ratio_[0], log_ratio_[1]));
      // h = int(round(math.sqrt(erase_area * aspect_ratio))): Python rounds half to even.
      const int h = internal::PyRound(std::sqrt(erase_area * aspect));
      const int w = internal::PyRound(std::sqrt(erase_area / aspect));
      if (!(h < height && w < width)) continue;
      // torch.randint(0, img_h - h + 1): a top in [0, H - h].
      params->Push(static_cast<double>(rng.UniformInt(0, height - h + 1)));
      params->Push(static_cast<double>(rng.UniformInt(0, width - w + 1)));
      params->Push(h);
      params->Push(w);
      return;
    }
    params->Push(0);
    params->Push(0);
    params->Push(height);
    params->Push(width);
  }

  absl::Status EraseBox(const double* box, uint64_t seed, int k, OpImage& image) const {
    const int top = static_cast<int>(box[0]), left = static_cast<int>(box[1]);
    const int h = static_cast<int>(box[2]), w = static_cast<int>(box[3]);
    if (h >= image.height && w >= image.width) return absl::OkStatus();  // The fallback.
    if (top < 0 || left < 0 || h < 0 || w < 0 || top + h > image.height ||
        left + w > image.width) {
      return absl::InvalidArgumentError("random_erasing: box outside the image");
    }
    // Noise: one stream per (seed, box), independent of the thread and of other boxes.
    SampleRng rng(seed, 0, static_cast<uint64_t>(k), 0x7265);
    std::array<float, 3> colour = value_;
    if (fill_ == Fill::kBoxColour) Normals(rng, colour.data(), 3);
    const size_t plane = static_cast<size_t>(image.width) * image.height;
    for (int c = 0; c < 3; ++c) {
      for (int y = top; y < top + h; ++y) {
        float* row = image.chw + c * plane + static_cast<size_t>(y) * image.width + left;
        if (fill_ == Fill::kPixelNoise) {
          Normals(rng, row, static_cast<size_t>(w));
        } else {
          for (int x = 0; x < w; ++x) row[x] = colour[c];
        }
      }
    }
    return absl::OkStatus();
  }

  const std::pair<double, double> scale_;
  const double log_ratio_[2];
  const Fill fill_;
  const std::array<float, 3> value_;
  const int max_count_;
};

// ReadFill reads value and mode into the fill and the constant colour.
absl::Status ReadFill(const OpArgs& args, Fill* fill, std::array<float, 3>* value) {
  const OpValue& v = args.Get("value");
  const std::string& mode = args.Word("mode");
  if (mode != "const" && mode != "rand" && mode != "pixel") {
    return ArgError(kName, "mode", "const, rand or pixel", args.Get("mode"));
  }
  if (mode != "const") {
    if (args.IsSet("value")) {
      return ArgError(kName, "value", "left out with mode rand or pixel (their noise is the value)",
                      v);
    }
    *fill = mode == "rand" ? Fill::kBoxColour : Fill::kPixelNoise;
    return absl::OkStatus();
  }
  if (v.word == "random") {
    *fill = Fill::kPixelNoise;
    return absl::OkStatus();
  }
  if (!v.word.empty() || v.is_none || (v.numbers.size() != 1 && v.numbers.size() != 3)) {
    return ArgError(kName, "value", "a number, [r, g, b] or random", v);
  }
  *fill = Fill::kConstant;
  for (int c = 0; c < 3; ++c) {
    // torch.tensor(value) is float32, as the tensor it is written into.
    (*value)[c] = static_cast<float>(v.numbers[v.numbers.size() == 1 ? 0 : c]);
  }
  return absl::OkStatus();
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "erases a random box of the normalized tensor (area fraction in scale, aspect "
              "ratio in ratio) with value; comes after normalize",
              {{"scale", "[0.02, 0.33]", "[min, max] with 0 <= min <= max <= 1",
                "area fraction of the box"},
               {"ratio", "[0.3, 3.3]", "[min, max] with 0 < min <= max",
                "aspect ratio (height / width) of the box, drawn log-uniformly"},
               {"value", "0", "a number, [r, g, b] or random",
                "what the box holds, on the normalized scale; random: N(0, 1) per pixel"},
               {"inplace", "false", "true or false",
                "accepted for torchvision's signature; the slot is always written in place"},
               {"mode", "const", "const, rand or pixel",
                "timm's mode: const = value; rand = one N(0, 1) colour per box; pixel = "
                "N(0, 1) per pixel (= value random)"},
               {"max_count", "1", "an integer in [1, 5]",
                "timm's max_count: 1 to max_count boxes (uniform), each with area / count"}},
              0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      // torchvision's RandomErasing alone checks its p ("should be between 0 and 1").
      if (absl::Status s = CheckNumberIn(kName, args, "p", 0, 1); !s.ok()) return s;
      const OpValue& scale = args.Get("scale");
      if (!(scale.is_list && scale.numbers.size() == 2 && scale.numbers[0] >= 0 &&
            scale.numbers[0] <= scale.numbers[1] && scale.numbers[1] <= 1)) {
        // torchvision only warns about a reversed range; it would then draw nothing sane.
        return ArgError(kName, "scale", "[min, max] with 0 <= min <= max <= 1", scale);
      }
      const OpValue& ratio = args.Get("ratio");
      if (!(ratio.is_list && ratio.numbers.size() == 2 && ratio.numbers[0] > 0 &&
            ratio.numbers[0] <= ratio.numbers[1])) {
        return ArgError(kName, "ratio", "[min, max] with 0 < min <= max", ratio);
      }
      const OpValue& count = args.Get("max_count");
      if (!count.IsNumber() || count.numbers[0] != std::floor(count.numbers[0]) ||
          count.numbers[0] < 1 || count.numbers[0] > kMaxCount) {
        return ArgError(kName, "max_count", "an integer in [1, 5]", count);
      }
      Fill fill = Fill::kConstant;
      std::array<float, 3> value{};
      if (absl::Status s = ReadFill(args, &fill, &value); !s.ok()) return s;
      // inplace changes nothing here, but must be a bool (torchvision's signature).
      bool inplace = false;
      if (absl::Status s = internal::ReadBool(kName, args, "inplace", &inplace); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new RandomErasing({scale.numbers[0], scale.numbers[1]},
                                                   {ratio.numbers[0], ratio.numbers[1]}, fill,
                                                   value, args.Int("max_count")));
    });

}  // namespace
}  // namespace flowloader::augment
