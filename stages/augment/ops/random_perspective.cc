// random_perspective.cc: torchvision's RandomPerspective(distortion_scale=0.5, p=0.5,
// interpolation=bilinear, fill=0): four corners drawn as RandomPerspective.get_params
// draws them (each moved inwards by up to distortion_scale × half the side), then
// F.perspective, which solves for the map's 8 coefficients (_get_perspective_coeffs)
// and is PIL's Image.transform(PERSPECTIVE) (kernels/geometry.cc, PIL's arithmetic).
//
// torchvision solves the coefficients in float32 (LAPACK gels), this op in double, so
// a pixel whose source position lies within ~1e-4 of a pixel edge may take the
// neighbour: the parity cases bound the difference by PSNR. A side of one pixel gives
// no single map (torchvision's lstsq raises): the image is left as it is.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

class RandomPerspective : public Op {
 public:
  RandomPerspective(double distortion_scale, Interpolation interpolation,
                    std::array<uint8_t, 3> fill)
      : scale_(distortion_scale), interpolation_(interpolation), fill_(fill) {}

  // Params: the end points, top-left, top-right, bottom-right, bottom-left, each x then
  // y (get_params' `endpoints`; its `startpoints` are the image's corners). torch's
  // randint(lo, hi) per value, in get_params' order.
  void Draw(int width, int height, SampleRng& rng, OpParams* params) const override {
    // int64: a distortion_scale above 1 moves corners past the opposite side, up to
    // 10^6 half-sides (Python's int(distortion_scale * half_w) never overflows).
    const int64_t dx = static_cast<int64_t>(scale_ * (width / 2));
    const int64_t dy = static_cast<int64_t>(scale_ * (height / 2));
    auto near = [&rng](int64_t d) { return static_cast<double>(rng.UniformInt(0, d + 1)); };
    auto far = [&rng](int64_t side, int64_t d) {
      return static_cast<double>(rng.UniformInt(side - d - 1, side));
    };
    params->Push(near(dx));          // top-left
    params->Push(near(dy));
    params->Push(far(width, dx));    // top-right
    params->Push(near(dy));
    params->Push(far(width, dx));    // bottom-right
    params->Push(far(height, dy));
    params->Push(near(dx));          // bottom-left
    params->Push(far(height, dy));
  }

  // Apply also takes 16 params: the end points, then start points other than the
  // corners (F.perspective's `startpoints`, for the functional call); or 24: those 16,
  // then the map's 8 coefficients as torchvision's float32 least squares gives them (the
  // eager calls solve with torch itself, so that an ill-conditioned map, frequent with
  // a distortion_scale of 1 or more, is torchvision's to the bit).
  absl::Status Apply(const OpParams& p, OpImage& image) const override {
    if (p.n != 8 && p.n != 16 && p.n != 24) {
      return absl::InvalidArgumentError("needs its 8 end point coordinates (or 8 end "
                                        "and 8 start point coordinates, and 8 coefficients)");
    }
    const Image& src = *image.rgb;
    const double w1 = src.width - 1, h1 = src.height - 1;
    const double corners[8] = {0, 0, w1, 0, w1, h1, 0, h1};
    double coeffs[8];
    if (p.n == 24) {
      std::copy(p.v + 16, p.v + 24, coeffs);
    } else if (!kernels::PerspectiveCoeffs(p.n == 16 ? p.v + 8 : corners, p.v, coeffs)) {
      return absl::OkStatus();
    }
    kernels::Perspective(src, coeffs, interpolation_, fill_, image.spare);
    std::swap(*image.rgb, *image.spare);
    return absl::OkStatus();
  }

 private:
  const double scale_;
  const Interpolation interpolation_;
  const std::array<uint8_t, 3> fill_;
};

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_perspective",
              "a random perspective warp: each corner moved inwards by up to "
              "distortion_scale of half the side",
              {{"distortion_scale", "0.5", "a number in [0, 1000000]",
                "how far the corners may move, as a fraction of half the side (above 1 "
                "they may move past the opposite side, as torchvision's)"},
               {"interpolation", "bilinear", "nearest, bilinear or bicubic",
                "PIL's transform filter"},
               {"fill", "0", "a number or [r, g, b] in [0, 255]",
                "the colour of pixels from outside the image"}},
              /*default_p=*/0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      const std::string op = "random_perspective";
      if (absl::Status s = CheckNumberIn(op, args, "distortion_scale", 0.0, 1e6); !s.ok()) {
        return s;
      }
      Interpolation interpolation;
      if (absl::Status s = ReadInterpolation(op, args, "interpolation", &interpolation);
          !s.ok()) {
        return s;
      }
      std::array<uint8_t, 3> fill{};
      if (absl::Status s = internal::ReadFill(op, args, "fill", &fill); !s.ok()) return s;
      return std::unique_ptr<Op>(
          new RandomPerspective(args.Number("distortion_scale"), interpolation, fill));
    });

}  // namespace
}  // namespace flowloader::augment
