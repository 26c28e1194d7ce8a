// random_photometric_distort.cc: torchvision's detection reference
// RandomPhotometricDistort(contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
// brightness=(0.875, 1.125), p=0.5) (references/detection/transforms.py at v0.14.0, the
// SSD recipe's colour op; v2's RandomPhotometricDistort is the same): each adjustment
// applies with probability p, in the order brightness, contrast (before or after, a coin),
// saturation, hue, contrast, then a random channel permutation. Colour only: boxes and
// masks stay where they are.
//
// p is each adjustment's probability, as torchvision's, not the whole op's (OwnsP).
// Params, in forward()'s order: brightness, contrast_before (0 or 1), contrast,
// saturation, hue (each factor NaN when not applied), then the permutation c0, c1, c2
// (-1, -1, -1 when not applied). The factors come from ColorJitter.get_params of a
// one-adjustment ColorJitter: uniform over the range.
//
// The permutation runs on PIL as the reference does it: pil_to_tensor, convert_image_dtype
// (v / 255 in float32), the channels permuted, to_pil_image (x · 255, truncated to uint8),
// so a value comes back as trunc(float(v) / 255 · 255), which is v for every byte.
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Range {
  double lo, hi;
};

class RandomPhotometricDistort : public Op {
 public:
  RandomPhotometricDistort(Range brightness, Range contrast, Range saturation, Range hue)
      : brightness_(brightness), contrast_(contrast), saturation_(saturation), hue_(hue) {}

  bool OwnsP() const override { return true; }
  TargetEffect Targets() const override { return TargetEffect::kKeeps; }

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    double r[7];  // torch.rand(7): which adjustments apply.
    for (double& v : r) v = rng.Uniform(0, 1);
    auto factor = [&](bool applies, Range range) {
      return applies ? rng.Uniform(range.lo, range.hi) : kNaN;
    };
    const bool contrast_before = r[1] < 0.5;
    params->Push(factor(r[0] < p(), brightness_));
    params->Push(contrast_before ? 1 : 0);
    const double contrast_first = factor(contrast_before && r[2] < p(), contrast_);
    const double saturation = factor(r[3] < p(), saturation_);
    const double hue = factor(r[4] < p(), hue_);
    const double contrast_last = factor(!contrast_before && r[5] < p(), contrast_);
    params->Push(contrast_before ? contrast_first : contrast_last);
    params->Push(saturation);
    params->Push(hue);
    int perm[3] = {-1, -1, -1};
    if (r[6] < p()) {  // torch.randperm(3): a uniform permutation.
      perm[0] = 0, perm[1] = 1, perm[2] = 2;
      for (int i = 2; i > 0; --i) std::swap(perm[i], perm[rng.UniformInt(0, i + 1)]);
    }
    for (int c : perm) params->Push(c);
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n != 8) return absl::InvalidArgumentError(absl::StrCat("needs 8 params, got ", p.n));
    Image& img = *image.rgb;
    const double brightness = p.v[0], contrast = p.v[2], saturation = p.v[3], hue = p.v[4];
    const bool contrast_before = p.v[1] != 0;
    if (!std::isnan(brightness)) kernels::AdjustBrightness(img, brightness);
    if (contrast_before && !std::isnan(contrast)) kernels::AdjustContrast(img, contrast);
    if (!std::isnan(saturation)) kernels::AdjustSaturation(img, saturation);
    if (!std::isnan(hue)) kernels::AdjustHue(img, hue);
    if (!contrast_before && !std::isnan(contrast)) kernels::AdjustContrast(img, contrast);
    if (p.v[5] >= 0) {
      int perm[3];
      for (int c = 0; c < 3; ++c) {
        perm[c] = static_cast<int>(p.v[5 + c]);
        if (perm[c] < 0 || perm[c] > 2) {
          return absl::InvalidArgumentError(absl::StrCat("bad channel ", p.v[5 + c]));
        }
      }
      PermuteChannels(perm, img);
    }
    return absl::OkStatus();
  }

 private:
  // PermuteChannels writes channel c of each pixel from channel perm[c].
  static void PermuteChannels(const int (&perm)[3], Image& img) {
    for (int y = 0; y < img.height; ++y) {
      uint8_t* row = img.Row(y);
      for (int x = 0; x < img.width; ++x, row += 3) {
        const uint8_t in[3] = {row[0], row[1], row[2]};
        for (int c = 0; c < 3; ++c) row[c] = in[perm[c]];
      }
    }
  }

  const Range brightness_, contrast_, saturation_, hue_;
};

// ReadPair reads [min, max] within [lo, hi], min <= max (the reference takes tuples).
absl::StatusOr<Range> ReadPair(const OpArgs& args, const std::string& arg, double lo,
                               double hi) {
  const OpValue& v = args.Get(arg);
  if (!(v.is_list && v.numbers.size() == 2 && v.numbers[0] >= lo && v.numbers[1] <= hi &&
        v.numbers[0] <= v.numbers[1])) {
    return ArgError("random_photometric_distort", arg,
                    absl::StrCat("[min, max] within [", lo, ", ", hi, "]"), v);
  }
  return Range{v.numbers[0], v.numbers[1]};
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_photometric_distort",
              "SSD's colour distortion: brightness, contrast, saturation, hue and a channel "
              "permutation, each with probability p (boxes and masks unchanged)",
              {{"brightness", "[0.875, 1.125]", "[min, max] within [0, 1000]",
                "brightness factor range"},
               {"contrast", "[0.5, 1.5]", "[min, max] within [0, 1000]",
                "contrast factor range (applied before or after saturation and hue, a coin)"},
               {"saturation", "[0.5, 1.5]", "[min, max] within [0, 1000]",
                "saturation factor range"},
               {"hue", "[-0.05, 0.05]", "[min, max] within [-0.5, 0.5]", "hue shift range"}},
              0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<Range> b = ReadPair(args, "brightness", 0, 1000);
      if (!b.ok()) return b.status();
      absl::StatusOr<Range> c = ReadPair(args, "contrast", 0, 1000);
      if (!c.ok()) return c.status();
      absl::StatusOr<Range> s = ReadPair(args, "saturation", 0, 1000);
      if (!s.ok()) return s.status();
      absl::StatusOr<Range> h = ReadPair(args, "hue", -0.5, 0.5);
      if (!h.ok()) return h.status();
      return std::unique_ptr<Op>(new RandomPhotometricDistort(*b, *c, *s, *h));
    });

}  // namespace
}  // namespace flowloader::augment
