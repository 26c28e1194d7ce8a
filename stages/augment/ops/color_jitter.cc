// color_jitter.cc: torchvision's ColorJitter(brightness=0, contrast=0,
// saturation=0, hue=0): the four adjustments in a random order, each with a
// factor drawn uniformly from its range (ColorJitter.get_params), on PIL's
// arithmetic (kernels/colour.h).
//
// Params, in get_params' order: the permutation fn_idx[0..3] (0 brightness, 1
// contrast, 2 saturation, 3 hue), then the brightness, contrast, saturation and
// hue factors. A factor whose argument leaves the image unchanged
// (torchvision's None: 0, or [1, 1] for the first three, [0, 0] for hue) is
// NaN, and Apply skips it as forward() does.
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/kernels/colour.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

using Range = std::optional<std::pair<double, double>>;

class ColorJitter : public Op {
 public:
  explicit ColorJitter(const Range (&ranges)[4]) {
    for (int k = 0; k < 4; ++k) ranges_[k] = ranges[k];
  }

  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    // torch.randperm(4): a uniform permutation (Fisher-Yates).
    int perm[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; --i) std::swap(perm[i], perm[rng.UniformInt(0, i + 1)]);
    for (int k = 0; k < 4; ++k) params->Push(perm[k]);
    for (int k = 0; k < 4; ++k) {
      params->Push(ranges_[k] ? rng.Uniform(ranges_[k]->first, ranges_[k]->second)
                              : std::numeric_limits<double>::quiet_NaN());
    }
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n != 8) return absl::InvalidArgumentError(absl::StrCat("needs 8 params, got ", p.n));
    Image& img = *image.rgb;
    for (int k = 0; k < 4; ++k) {
      const double fn = p.v[k];
      if (!(fn == 0 || fn == 1 || fn == 2 || fn == 3)) {
        return absl::InvalidArgumentError(absl::StrCat("bad permutation entry ", fn));
      }
      const double factor = p.v[4 + static_cast<int>(fn)];
      if (std::isnan(factor)) continue;
      switch (static_cast<int>(fn)) {
        case 0:
          kernels::AdjustBrightness(img, factor);
          break;
        case 1:
          kernels::AdjustContrast(img, factor);
          break;
        case 2:
          kernels::AdjustSaturation(img, factor);
          break;
        default:
          kernels::AdjustHue(img, factor);
          break;
      }
    }
    return absl::OkStatus();
  }

 private:
  Range ranges_[4];
};

// ColorJitter._check_input: a number v >= 0 gives [center - v, center + v] (the
// low end clamped at 0 for the factors), a list [min, max] must lie within the
// bound; a range that is just the center leaves the image unchanged (None).
absl::StatusOr<Range> ReadJitter(const OpArgs& args, const std::string& arg, double center,
                                 double lo, double hi, bool clamp) {
  absl::StatusOr<std::pair<double, double>> r =
      ReadRange("color_jitter", args, arg, center, lo, hi, clamp);
  if (!r.ok()) return r.status();
  if (r->first == center && r->second == center) return Range();
  return Range(*r);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

FLOWLOADER_REGISTER_OP((OpSchema{
                           "color_jitter",
                           "randomly changes brightness, contrast, saturation and hue, in a "
                           "random order",
                           {{"brightness", "0", "a number >= 0 or [min, max] within [0, inf]",
                             "factor drawn from [max(0, 1 - b), 1 + b] or [min, max]; blend with "
                             "black"},
                            {"contrast", "0", "a number >= 0 or [min, max] within [0, inf]",
                             "factor drawn from [max(0, 1 - c), 1 + c] or [min, max]; blend with "
                             "the "
                             "mean grey"},
                            {"saturation", "0", "a number >= 0 or [min, max] within [0, inf]",
                             "factor drawn from [max(0, 1 - s), 1 + s] or [min, max]; blend with "
                             "the "
                             "grey image"},
                            {"hue", "0", "a number in [0, 0.5] or [min, max] within [-0.5, 0.5]",
                             "shift drawn from [-h, h] or [min, max], in turns of PIL's 8-bit HSV "
                             "hue"}}}),
                       [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
                         Range ranges[4];
                         const char* names[3] = {"brightness", "contrast", "saturation"};
                         for (int k = 0; k < 3; ++k) {
                           absl::StatusOr<Range> r = ReadJitter(args, names[k], 1, 0, kInf, true);
                           if (!r.ok()) return r.status();
                           ranges[k] = *r;
                         }
                         absl::StatusOr<Range> hue = ReadJitter(args, "hue", 0, -0.5, 0.5, false);
                         if (!hue.ok()) return hue.status();
                         ranges[3] = *hue;
                         return std::unique_ptr<Op>(new ColorJitter(ranges));
                       });

}  // namespace
}  // namespace flowloader::augment
