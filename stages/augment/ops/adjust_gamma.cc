// adjust_gamma.cc: torchvision's F.adjust_gamma(img, gamma, gain=1) on 8-bit pixels:
// PIL's table, value = int(255.999 * gain * (i / 255) ** gamma) clipped to 0..255 (the
// tensor path's clamp(gain * x ** gamma, 0, 1) * 255.999, truncated, is the same
// number). torchvision has no class for it: p defaults to 1.
#include <array>
#include <cmath>
#include <cstdint>

#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class AdjustGamma : public Op {
 public:
  AdjustGamma(double gamma, double gain) {
    for (int i = 0; i < 256; ++i) {
      // Pillow's point() clips each table entry to 0..255 (CLIP8 of its int).
      const double v = std::trunc((255 + 1 - 1e-3) * gain * std::pow(i / 255.0, gamma));
      table_[i] = static_cast<uint8_t>(v <= 0 ? 0 : v >= 255 ? 255 : v);
    }
  }

  absl::Status Apply(const OpParams&, OpImage& image) const override {
    for (uint8_t& value : image.rgb->pixels) value = table_[value];
    return absl::OkStatus();
  }

 private:
  std::array<uint8_t, 256> table_{};
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"adjust_gamma",
              "gamma correction, gain * value ** gamma (F.adjust_gamma; always applied)",
              {{"gamma", "1", "a number >= 0", "the exponent (< 1 brightens dark regions)"},
               {"gain", "1", "a number", "the multiplier after the power"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const OpValue& gamma = args.Get("gamma");
      if (!gamma.IsNumber() || !(gamma.numbers[0] >= 0) || std::isinf(gamma.numbers[0])) {
        return ArgError("adjust_gamma", "gamma", "a finite number >= 0", gamma);
      }
      const OpValue& gain = args.Get("gain");
      if (!gain.IsNumber() || !std::isfinite(gain.numbers[0])) {
        return ArgError("adjust_gamma", "gain", "a finite number", gain);
      }
      return std::unique_ptr<Op>(new AdjustGamma(gamma.numbers[0], gain.numbers[0]));
    });

}  // namespace
}  // namespace flowloader::augment
