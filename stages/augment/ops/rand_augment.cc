// rand_augment.cc: torchvision's RandAugment(num_ops=2, magnitude=9,
// num_magnitude_bins=31, interpolation=nearest, fill=None): num_ops sub-ops, each
// uniformly of 14 (with replacement), at one fixed magnitude bin, with a random sign
// where the sub-op is signed. Options for timm's RandAugment (rand_augment_transform):
//
// - magnitude_std: each sub-op's magnitude is N(magnitude, magnitude_std), clipped to
//   [0, num_magnitude_bins - 1] (timm clips to [0, 10], its scale's top); above 100 it is
//   uniform in [0, magnitude], as timm's mstd > 100.
// - increasing: timm's `inc1` set of 15 (AutoContrast, Equalize, Invert, Rotate,
//   PosterizeIncreasing, SolarizeIncreasing, SolarizeAdd, Color/Contrast/Brightness/
//   SharpnessIncreasing, ShearX/Y, TranslateX/YRel) with timm's level functions, the
//   level being magnitude * 10 / (num_magnitude_bins - 1): timm's m9 is magnitude=9,
//   num_magnitude_bins=11.
// - op_p: the probability that each chosen sub-op applies (timm's `p`, 0.5 in its
//   rand- strings; torchvision applies every one: 1).
//
// Where it differs from timm: timm picks bilinear or bicubic at random per sub-op unless
// told one, flowloader uses `interpolation`; timm fills with its img_mean (the dataset
// mean, [124, 116, 104] for ImageNet), flowloader with `fill` (torchvision's black by
// default); timm's magnitude noise is python's random.gauss, here Box-Muller on the
// sample's stream. The sub-ops' arithmetic is timm's (PIL's, through the shared kernels).
//
// Params, per sub-op: op index (in torchvision's, or timm's inc1, order), level (the
// magnitude bin, fractional under magnitude_std), negate (1 = the sign draw negated it;
// 0 for unsigned sub-ops, which draw none), applied (op_p's draw).
#include <algorithm>
#include <cmath>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using policy::Space;
using policy::SubOp;

constexpr char kName[] = "rand_augment";
// torchvision takes any num_ops; past OpParams::kMax / 4 the params spill to OpParams::more.
constexpr int kMaxOps = 1024;

// RandAugment._augmentation_space, in its order: AutoAugment's without Invert, its last.
constexpr const Space* kSpace = policy::kTorchvisionSpace;
constexpr int kOps = policy::kTorchvisionSpaceSize - 1;
static_assert(policy::kTorchvisionSpace[kOps].op == SubOp::kInvert);

// timm's _RAND_INCREASING_TRANSFORMS, in its order.
enum class Timm {
  kAutoContrast, kEqualize, kInvert, kRotate, kPosterize, kSolarize, kSolarizeAdd, kColor,
  kContrast, kBrightness, kSharpness, kShearX, kShearY, kTranslateXRel, kTranslateYRel,
};
constexpr int kTimmOps = 15;
// Whether timm's level function negates at random (_randomly_negate).
constexpr bool kTimmSigned[kTimmOps] = {false, false, false, true, false, false, false, true,
                                        true,  true,  true,  true, true,  true,  true};

// SolarizeAdd is timm's solarize_add(img, add, thresh=128): its LUT adds `add` below 128,
// saturating at 255; with add <= 128 the sum never exceeds 255, so it is a compare and an
// add: 16 values at a time with SSE2 (8x the speed of a table lookup per byte).
void SolarizeAdd(Image& img, int add) {
  const uint8_t a = static_cast<uint8_t>(add);
  uint8_t* p = img.pixels.data();
  const size_t n = img.pixels.size();
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i va = _mm_set1_epi8(static_cast<char>(a));
  const __m128i minus_one = _mm_set1_epi8(-1);
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    // Below 128 is non-negative as a signed byte: v > -1.
    const __m128i below = _mm_cmpgt_epi8(v, minus_one);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                     _mm_add_epi8(v, _mm_and_si128(below, va)));
  }
#endif
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(p[i] < 128 ? p[i] + a : p[i]);
}

class RandAugment : public Op {
 public:
  RandAugment(int num_ops, double magnitude, int bins, double magnitude_std, bool increasing,
              double op_p, policy::Geometry geometry)
      : num_ops_(num_ops), magnitude_(magnitude), bins_(bins), magnitude_std_(magnitude_std),
        increasing_(increasing), op_p_(op_p), geometry_(geometry) {}

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    const int ops = increasing_ ? kTimmOps : kOps;
    for (int i = 0; i < num_ops_; ++i) {
      // forward(): op_index = torch.randint(len(op_meta)), then the sign if signed.
      const int op = static_cast<int>(rng.UniformInt(0, ops));
      const bool applied = op_p_ >= 1 || rng.Uniform(0, 1) < op_p_;
      const double level = DrawLevel(rng);
      const bool is_signed = increasing_ ? kTimmSigned[op] : kSpace[op].is_signed;
      params->Push(op);
      params->Push(level);
      params->Push(is_signed ? static_cast<double>(rng.UniformInt(0, 2)) : 0.0);
      params->Push(applied ? 1 : 0);
    }
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.Size() != 4 * static_cast<size_t>(num_ops_)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rand_augment: ", p.Size(), " params, want 4 per sub-op (op, level, "
                       "negate, applied)"));
    }
    for (int i = 0; i < num_ops_; ++i) {
      const double s[4] = {p.At(4 * i), p.At(4 * i + 1), p.At(4 * i + 2), p.At(4 * i + 3)};
      const int op = static_cast<int>(s[0]);
      const double level = s[1];
      if (op < 0 || op >= (increasing_ ? kTimmOps : kOps) || !(level >= 0 && level <= bins_ - 1)) {
        return absl::InvalidArgumentError("rand_augment: op or level out of range");
      }
      if (s[3] == 0) continue;
      const absl::Status status = increasing_ ? ApplyTimm(static_cast<Timm>(op), level, s[2] != 0, image)
                                              : ApplyTorchvision(op, level, s[2] != 0, image);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  // DrawLevel is the magnitude, with timm's noise where magnitude_std is set.
  double DrawLevel(SampleRng& rng) const {
    if (magnitude_std_ <= 0) return magnitude_;
    if (magnitude_std_ > 100) return rng.Uniform(0, magnitude_);
    const double u1 = 1.0 - rng.Uniform(0, 1), u2 = rng.Uniform(0, 1);
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    return std::clamp(magnitude_ + magnitude_std_ * normal, 0.0, static_cast<double>(bins_ - 1));
  }

  absl::Status ApplyTorchvision(int op, double level, bool negate, OpImage& image) const {
    const Space& space = kSpace[op];
    double magnitude =
        policy::SpaceMagnitude(space, bins_, level, image.rgb->width, image.rgb->height);
    if (space.is_signed && negate) magnitude = -magnitude;
    return policy::ApplySubOp(space.op, magnitude, geometry_, image);
  }

  // ApplyTimm is timm's AugmentOp.__call__ after its prob check, at timm's level
  // (0..10): LEVEL_TO_ARG[name](level) then NAME_TO_OP[name].
  absl::Status ApplyTimm(Timm op, double level, bool negate, OpImage& image) const {
    const double f = level * 10.0 / (bins_ - 1) / 10.0;  // (level / _LEVEL_DENOM).
    const double sign = negate ? -1.0 : 1.0;
    Image& img = *image.rgb;
    switch (op) {
      case Timm::kAutoContrast:
        return policy::ApplySubOp(SubOp::kAutoContrast, 0, geometry_, image);
      case Timm::kEqualize:
        return policy::ApplySubOp(SubOp::kEqualize, 0, geometry_, image);
      case Timm::kInvert:
        return policy::ApplySubOp(SubOp::kInvert, 0, geometry_, image);
      case Timm::kRotate:  // img.rotate(degrees): F.rotate's call.
        return policy::ApplySubOp(SubOp::kRotate, sign * f * 30.0, geometry_, image);
      case Timm::kPosterize:  // 4 - int(level / 10 * 4) bits kept.
        return policy::ApplySubOp(SubOp::kPosterize, 4 - static_cast<int>(f * 4), geometry_,
                                  image);
      case Timm::kSolarize:  // 256 - min(256, int(level / 10 * 256)).
        return policy::ApplySubOp(SubOp::kSolarize, 256 - std::min(256, static_cast<int>(f * 256)),
                                  geometry_, image);
      case Timm::kSolarizeAdd:  // min(128, int(level / 10 * 110)): at most 110 for level <= 10.
        SolarizeAdd(img, std::min(128, static_cast<int>(f * 110)));
        return absl::OkStatus();
      case Timm::kColor:
      case Timm::kContrast:
      case Timm::kBrightness:
      case Timm::kSharpness: {
        // _enhance_increasing_level_to_arg: max(0.1, 1.0 + ±level / 10 * 0.9).
        const double factor = std::max(0.1, 1.0 + sign * (f * 0.9));
        if (op == Timm::kColor) kernels::AdjustSaturation(img, factor);
        if (op == Timm::kContrast) kernels::AdjustContrast(img, factor);
        if (op == Timm::kBrightness) kernels::AdjustBrightness(img, factor);
        if (op == Timm::kSharpness) kernels::AdjustSharpness(img, factor);
        return absl::OkStatus();
      }
      case Timm::kShearX:  // Image.transform(AFFINE, (1, factor, 0, 0, 1, 0)).
        return policy::ApplySubOp(SubOp::kShearX, sign * f * 0.3, geometry_, image);
      case Timm::kShearY:
        return policy::ApplySubOp(SubOp::kShearY, sign * f * 0.3, geometry_, image);
      case Timm::kTranslateXRel:
        // (1, 0, pixels, 0, 1, 0) samples x + pixels: F.affine's translate is -pixels.
        policy::Translate(-(sign * f * 0.45 * img.width), 0.0, geometry_, image);
        return absl::OkStatus();
      case Timm::kTranslateYRel:
        policy::Translate(0.0, -(sign * f * 0.45 * img.height), geometry_, image);
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  const int num_ops_;
  const double magnitude_;
  const int bins_;
  const double magnitude_std_;
  const bool increasing_;
  const double op_p_;
  const policy::Geometry geometry_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "RandAugment: num_ops sub-ops drawn from 14 (timm's 15 with increasing), each at "
              "magnitude; uint8 pixels",
              {{"num_ops", "2", "an integer in [0, 1024]", "sub-ops applied in sequence"},
               {"magnitude", "9", "a number in [-num_magnitude_bins, num_magnitude_bins - 1]",
                "the magnitude bin of every sub-op (below 0 counted from the last bin, as "
                "torchvision's magnitudes[magnitude] indexes)"},
               {"num_magnitude_bins", "31", "an integer in [2, 1024]",
                "the number of magnitude values"},
               {"interpolation", "nearest", "nearest, bilinear or bicubic",
                "the filter of the geometric sub-ops (PIL's)"},
               {"fill", "null", "null, a number or [r, g, b] in [0, 255]",
                "the colour outside the moved image (null: black)"},
               {"magnitude_std", "0", "a number >= 0",
                "timm's mstd: Gaussian noise on each sub-op's magnitude, clipped to [0, "
                "num_magnitude_bins - 1]; > 100: uniform in [0, magnitude]"},
               {"increasing", "false", "true or false",
                "timm's inc1 sub-op set and level functions, level = magnitude * 10 / "
                "(num_magnitude_bins - 1)"},
               {"op_p", "1", "a number in [0, 1]",
                "probability that each chosen sub-op applies (timm's p, 0.5 in its configs)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      int num_ops = 0, bins = 0;
      if (absl::Status s = policy::ReadInt(kName, args, "num_ops", 0, kMaxOps, &num_ops); !s.ok()) {
        return s;
      }
      if (absl::Status s = policy::ReadInt(kName, args, "num_magnitude_bins", 2, 1024, &bins);
          !s.ok()) {
        return s;
      }
      // torchvision indexes magnitudes[magnitude]: beyond the last bin it fails per sample.
      if (absl::Status s = CheckNumberIn(kName, args, "magnitude", -bins, bins - 1); !s.ok()) {
        return s;
      }
      double magnitude = args.Number("magnitude");
      if (magnitude < 0) magnitude += bins;  // Python's negative index.
      if (absl::Status s = CheckNumberIn(kName, args, "magnitude_std", 0, 1e9); !s.ok()) return s;
      if (absl::Status s = CheckNumberIn(kName, args, "op_p", 0, 1); !s.ok()) return s;
      const OpValue& increasing = args.Get("increasing");
      if (!increasing.IsNumber() || (increasing.numbers[0] != 0 && increasing.numbers[0] != 1)) {
        return ArgError(kName, "increasing", "true or false", increasing);
      }
      policy::Geometry geometry;
      if (absl::Status s = policy::ReadGeometry(kName, args, &geometry); !s.ok()) return s;
      return std::unique_ptr<Op>(new RandAugment(num_ops, magnitude, bins,
                                                 args.Number("magnitude_std"),
                                                 args.Bool("increasing"), args.Number("op_p"),
                                                 geometry));
    });

}  // namespace
}  // namespace flowloader::augment
