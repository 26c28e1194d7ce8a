// pil_gaussian_blur.cc: the blur of DINO's utils.GaussianBlur and MoCo v3's
// moco.loader.GaussianBlur: img.filter(ImageFilter.GaussianBlur(radius)) with radius =
// random.uniform(min, max), PIL's box-blur approximation of a Gaussian
// (kernels/pil_blur.cc, byte for byte as Pillow 9.4). torchvision's own GaussianBlur is
// `gaussian_blur`; upstream DINO and MoCo v3 use this one.
#include <utility>

#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class PilGaussianBlur : public Op {
 public:
  explicit PilGaussianBlur(std::pair<double, double> radius) : radius_(radius) {}

  // Params: radius (random.uniform(min, max)).
  void Draw(int, int, SampleRng& rng, OpParams* params) const override {
    params->Push(rng.Uniform(radius_.first, radius_.second));
  }

  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n < 1 || !(p.v[0] >= 0)) return absl::InvalidArgumentError("radius must be >= 0");
    // PIL takes the radius as a C float (PyArg_ParseTuple "f").
    kernels::PilGaussianBlur(*image.rgb, static_cast<float>(p.v[0]), image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

 private:
  const std::pair<double, double> radius_;
};

// The largest radius taken: PIL has no limit, but a box wider than any image only
// repeats the mean.
constexpr double kMaxRadius = 1000;

FLOWLOADER_REGISTER_OP(
    (OpSchema{"pil_gaussian_blur",
              "PIL's ImageFilter.GaussianBlur with a radius drawn uniformly from [min, max] "
              "(DINO's and MoCo v3's GaussianBlur)",
              {{"radius", "[0.1, 2.0]", "a number in [0, 1000] or [min, max] within it",
                "the blur radius in pixels (PIL's, about the Gaussian's sigma)"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const OpValue& r = args.Get("radius");
      const auto in_range = [](double v) { return v >= 0 && v <= kMaxRadius; };
      std::pair<double, double> radius;
      if (r.IsNumber() && in_range(r.numbers[0])) {
        radius = {r.numbers[0], r.numbers[0]};
      } else if (r.is_list && r.numbers.size() == 2 && in_range(r.numbers[0]) &&
                 in_range(r.numbers[1]) && r.numbers[0] <= r.numbers[1]) {
        radius = {r.numbers[0], r.numbers[1]};
      } else {
        return ArgError("pil_gaussian_blur", "radius",
                        "a number in [0, 1000] or [min, max] with 0 <= min <= max <= 1000", r);
      }
      return std::unique_ptr<Op>(new PilGaussianBlur(radius));
    });

}  // namespace
}  // namespace flowloader::augment
