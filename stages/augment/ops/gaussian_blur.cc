// gaussian_blur.cc: torchvision's GaussianBlur(kernel_size, sigma=(0.1, 2.0)): sigma drawn
// uniformly from [min, max] per image (GaussianBlur.get_params), then F.gaussian_blur
// with [sigma, sigma] (kernels/gaussian_blur.cc: separable float passes, within 1 level
// of torchvision's conv2d).
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class GaussianBlur : public Op {
 public:
  GaussianBlur(int kernel_x, int kernel_y, std::pair<double, double> sigma)
      : kernel_x_(kernel_x), kernel_y_(kernel_y), sigma_(sigma) {}

  // Params: sigma (GaussianBlur.get_params).
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    params->Push(rng.Uniform(sigma_.first, sigma_.second));
  }

  // The horizontally blurred rows, as floats (kernels::GaussianBlur's scratch).
  int64_t ScratchBytes(OpSize in) const override {
    return int64_t{in.width} * in.height * 3 * static_cast<int64_t>(sizeof(float));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n < 1 || !(p.v[0] > 0)) return absl::InvalidArgumentError("sigma must be > 0");
    // torchvision reflect-pads by kernel // 2, which torch needs less than the image's
    // side (it raises): the sample is refused (a counted skip), not blurred another way.
    if (kernel_x_ / 2 >= image.rgb->width || kernel_y_ / 2 >= image.rgb->height) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel_size [", kernel_x_, ", ", kernel_y_, "] reflect-pads ",
          kernel_x_ / 2, " x ", kernel_y_ / 2, " pixels, which must be less than the image's ",
          "width and height (", image.rgb->width, " x ", image.rgb->height,
          ") as in torchvision: lower kernel_size or resize the image first"));
    }
    kernels::GaussianBlur(*image.rgb, kernel_x_, kernel_y_, p.v[0], p.v[0], image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

 private:
  const int kernel_x_, kernel_y_;
  const std::pair<double, double> sigma_;
};

// OddSide: torchvision's kernel sizes are odd and positive (capped here at 1023).
bool OddSide(double k) { return k >= 1 && k <= 1023 && k == std::floor(k) && std::fmod(k, 2) == 1; }

FLOWLOADER_REGISTER_OP(
    (OpSchema{"gaussian_blur",
              "blurs with a Gaussian kernel whose sigma is drawn uniformly from [min, max]",
              {{"kernel_size", "23", "an odd integer >= 1 or [kx, ky]",
                "kernel width and height in pixels (required in torchvision; 23 is DINO's "
                "and SimCLR's for 224-pixel crops)"},
               {"sigma", "[0.1, 2.0]", "a number > 0 or [min, max], 0 < min <= max",
                "the Gaussian's standard deviation in pixels"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "gaussian_blur";
      const OpValue& k = args.Get("kernel_size");
      int kx = 0, ky = 0;
      if ((k.IsNumber() || (k.is_list && k.numbers.size() == 1)) && OddSide(k.numbers[0])) {
        kx = ky = static_cast<int>(k.numbers[0]);
      } else if (k.is_list && k.numbers.size() == 2 && OddSide(k.numbers[0]) &&
                 OddSide(k.numbers[1])) {
        kx = static_cast<int>(k.numbers[0]);
        ky = static_cast<int>(k.numbers[1]);
      } else {
        return ArgError(op, "kernel_size", "an odd integer in [1, 1023] or [kx, ky] of them", k);
      }
      const OpValue& s = args.Get("sigma");
      std::pair<double, double> sigma;
      if (s.IsNumber() && s.numbers[0] > 0) {
        sigma = {s.numbers[0], s.numbers[0]};
      } else if (s.is_list && s.numbers.size() == 2 && s.numbers[0] > 0 &&
                 s.numbers[0] <= s.numbers[1]) {
        sigma = {s.numbers[0], s.numbers[1]};
      } else {
        return ArgError(op, "sigma", "a number > 0 or [min, max] with 0 < min <= max", s);
      }
      return std::unique_ptr<Op>(new GaussianBlur(kx, ky, sigma));
    });

}  // namespace
}  // namespace flowloader::augment
