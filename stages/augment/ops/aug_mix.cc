// aug_mix.cc: torchvision 0.14's AugMix(severity=3, mixture_width=3, chain_depth=-1,
// alpha=1.0, all_ops=True, interpolation=bilinear, fill=None): mixture_width chains of
// 1-3 random sub-ops, mixed with Dirichlet weights, and the mix blended with the
// original by a Beta(alpha, alpha) weight.
//
// Params, in forward()'s draw order: m0, m1 (the Dirichlet([alpha, alpha]) draw: the
// original's weight, the chains'), the mixture_width Dirichlet weights, then per chain
// its depth (chain_depth when > 0, else torch.randint(1, 4)) and per sub-op op index,
// magnitude bin (0 for AutoContrast and Equalize, which draw none) and negate (0 for the
// unsigned sub-ops, which draw none). With three chains of three sub-ops that is 35
// numbers: past OpParams::kMax, so read through OpParams::At.
//
// The mix is torchvision's, in float32: mix = m0 * img, then mix += (w_i * m1) * chain_i
// per chain, truncated to uint8 (`.to(uint8)`). The sub-ops are the policies' PIL ones
// (kernels/policy_ops.h); torchvision's AugMix runs its tensor kernels even on a PIL
// image (pil_to_tensor first), whose rounding and bilinear edges differ from PIL's by a
// level or so per sub-op (its colour ops truncate where PIL rounds): the parity cases
// bound the difference by PSNR. The loader draws the Dirichlet weights as normalized
// Gamma draws (stages/mix/beta.h): torch's distribution, not its stream.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/policy_ops.h"
#include "stages/augment/ops/op.h"
#include "stages/mix/beta.h"

namespace flowloader::augment {
namespace {

using policy::Space;
using policy::SubOp;

constexpr char kName[] = "aug_mix";
constexpr int kBins = 10;  // AugMix's _PARAMETER_MAX: the magnitude tables' length.
constexpr int kMaxWidth = 16;
constexpr int kMaxDepth = 16;

// AugMix._augmentation_space(10, (H, W)), in its order; the last four only with all_ops.
// Posterize is `4 - (arange(10) / (9 / 4)).round().int()` (kPosterize is the policies'
// base-8 table, so its bits are made in Magnitude).
constexpr Space kSpace[] = {
    {SubOp::kShearX, Space::kLinear, 0.3, true},
    {SubOp::kShearY, Space::kLinear, 0.3, true},
    {SubOp::kTranslateX, Space::kWidth, 1.0 / 3.0, true},
    {SubOp::kTranslateY, Space::kHeight, 1.0 / 3.0, true},
    {SubOp::kRotate, Space::kLinear, 30.0, true},
    {SubOp::kPosterize, Space::kPosterize, 4, false},
    {SubOp::kSolarize, Space::kSolarize, 0, false},
    {SubOp::kAutoContrast, Space::kNone, 0, false},
    {SubOp::kEqualize, Space::kNone, 0, false},
    {SubOp::kBrightness, Space::kLinear, 0.9, true},
    {SubOp::kColor, Space::kLinear, 0.9, true},
    {SubOp::kContrast, Space::kLinear, 0.9, true},
    {SubOp::kSharpness, Space::kLinear, 0.9, true},
};
constexpr int kBasicOps = 9;
constexpr int kAllOps = sizeof(kSpace) / sizeof(kSpace[0]);

double Magnitude(const Space& space, int bin, int width, int height) {
  if (space.kind == Space::kPosterize) return policy::TorchPosterizeBits(4, 4.0, kBins, bin);
  return policy::SpaceMagnitude(space, kBins, bin, width, height);
}

class AugMix : public Op {
 public:
  AugMix(int severity, int width, int depth, double alpha, bool all_ops,
         policy::Geometry geometry)
      : severity_(severity),
        width_(width),
        depth_(depth),
        alpha_(alpha),
        ops_(all_ops ? kAllOps : kBasicOps),
        geometry_(geometry) {}

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    Dirichlet(2, rng, params);
    Dirichlet(width_, rng, params);
    for (int chain = 0; chain < width_; ++chain) {
      const int depth = depth_ > 0 ? depth_ : static_cast<int>(rng.UniformInt(1, 4));
      params->Push(depth);
      for (int k = 0; k < depth; ++k) {
        const int op = static_cast<int>(rng.UniformInt(0, ops_));
        const Space& space = kSpace[op];
        params->Push(op);
        params->Push(space.kind != Space::kNone ? rng.UniformInt(0, severity_) : 0);
        params->Push(space.is_signed ? rng.UniformInt(0, 2) : 0);
      }
    }
  }

  // Per pixel: the original's copy, the float mix of 3 channels, and a chain's image and
  // its spare.
  int64_t ScratchBytes(OpSize in) const override {
    return int64_t{in.width} * in.height * (3 + 3 * static_cast<int64_t>(sizeof(float)) + 6);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (absl::Status s = Check(p); !s.ok()) return s;
    const Image original = *image.rgb;
    const size_t n = original.pixels.size();
    const float m0 = static_cast<float>(p.At(0)), m1 = static_cast<float>(p.At(1));
    std::vector<float> mix(n);
    for (size_t i = 0; i < n; ++i) mix[i] = m0 * static_cast<float>(original.pixels[i]);
    Image aug, spare;
    size_t at = 2 + width_;
    for (int chain = 0; chain < width_; ++chain) {
      aug = original;
      OpImage chain_image;
      chain_image.rgb = &aug;
      chain_image.spare = &spare;
      const int depth = static_cast<int>(p.At(at++));
      for (int k = 0; k < depth; ++k, at += 3) {
        const Space& space = kSpace[static_cast<int>(p.At(at))];
        double magnitude =
            Magnitude(space, static_cast<int>(p.At(at + 1)), original.width, original.height);
        if (space.is_signed && p.At(at + 2) != 0) magnitude = -magnitude;
        if (absl::Status s = policy::ApplySubOp(space.op, magnitude, geometry_, chain_image);
            !s.ok()) {
          return s;
        }
      }
      // combined_weights[:, i] = dirichlet[i] * m[:, 1], then mix.add_(weight * aug).
      const float weight = static_cast<float>(p.At(2 + chain)) * m1;
      const uint8_t* a = chain_image.rgb->pixels.data();
      for (size_t i = 0; i < n; ++i) {
        const float term = weight * static_cast<float>(a[i]);
        mix[i] += term;
      }
    }
    uint8_t* out = image.rgb->pixels.data();
    for (size_t i = 0; i < n; ++i) {
      out[i] = static_cast<uint8_t>(std::clamp(mix[i], 0.0f, 255.0f));  // .to(uint8)
    }
    return absl::OkStatus();
  }

 private:
  // Dirichlet pushes a Dirichlet([alpha] * k) draw: k Gamma(alpha) draws, normalized.
  void Dirichlet(int k, SampleRng& rng, OpParams* params) const {
    double g[kMaxWidth];
    double sum = 0;
    for (int i = 0; i < k; ++i) sum += g[i] = mix::Gamma(alpha_, rng);
    for (int i = 0; i < k; ++i) {
      params->Push(static_cast<float>(sum > 0 ? g[i] / sum : 1.0 / k));
    }
  }

  // Check says what is wrong with a parameter list, or OK.
  absl::Status Check(const OpParams& p) const {
    const absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
        "params are m0, m1, ", width_, " chain weights, then per chain its depth and per "
        "sub-op (op in [0, ", ops_, "), bin in [0, ", severity_, "), negate); got ",
        p.Size(), " numbers that are not"));
    size_t at = 2 + width_;
    if (p.Size() < at) return bad;
    for (int chain = 0; chain < width_; ++chain) {
      if (at >= p.Size()) return bad;
      const double depth = p.At(at++);
      if (!(depth >= 1 && depth <= kMaxDepth) || at + 3 * depth > p.Size()) return bad;
      for (int k = 0; k < static_cast<int>(depth); ++k, at += 3) {
        const double op = p.At(at), bin = p.At(at + 1);
        if (!(op >= 0 && op < ops_) || !(bin >= 0 && bin < severity_)) return bad;
      }
    }
    return at == p.Size() ? absl::OkStatus() : bad;
  }

  const int severity_;
  const int width_;
  const int depth_;
  const double alpha_;
  const int ops_;
  const policy::Geometry geometry_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{kName,
              "AugMix: mixture_width chains of random policy sub-ops mixed with Dirichlet "
              "weights, blended with the original by a Beta weight; uint8 pixels",
              {{"severity", "3", "an integer in [1, 10]", "the sub-ops' strongest bin"},
               {"mixture_width", "3", "an integer in [1, 16]", "the number of chains"},
               {"chain_depth", "-1", "an integer <= 16; <= 0: random in [1, 3]",
                "the sub-ops per chain"},
               {"alpha", "1.0", "a number in (0, 1000]",
                "the Dirichlet and Beta distributions' parameter"},
               {"all_ops", "true", "true or false",
                "include brightness, color, contrast and sharpness"},
               {"interpolation", "bilinear", "nearest, bilinear or bicubic",
                "the filter of the geometric sub-ops (PIL's)"},
               {"fill", "null", "null, a number or [r, g, b] in [0, 255]",
                "the colour outside the moved image (null: black)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      int severity = 0, width = 0, depth = 0;
      if (absl::Status s = policy::ReadInt(kName, args, "severity", 1, kBins, &severity);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = policy::ReadInt(kName, args, "mixture_width", 1, kMaxWidth, &width);
          !s.ok()) {
        return s;
      }
      if (absl::Status s = policy::ReadInt(kName, args, "chain_depth", -1000, kMaxDepth, &depth);
          !s.ok()) {
        return s;
      }
      const OpValue& alpha = args.Get("alpha");
      if (!alpha.IsNumber() || !(alpha.numbers[0] > 0 && alpha.numbers[0] <= 1000)) {
        return ArgError(kName, "alpha", "a number in (0, 1000]", alpha);
      }
      bool all_ops = true;
      if (absl::Status s = internal::ReadBool(kName, args, "all_ops", &all_ops); !s.ok()) {
        return s;
      }
      policy::Geometry geometry;
      if (absl::Status s = policy::ReadGeometry(kName, args, &geometry); !s.ok()) return s;
      return std::unique_ptr<Op>(
          new AugMix(severity, width, depth, alpha.numbers[0], all_ops, geometry));
    });

}  // namespace
}  // namespace flowloader::augment
