// transform.h: torchvision-compatible image transforms, fused into one pass per sample.
//
// Train: RandomResizedCrop(image_size, scale, ratio) + RandomHorizontalFlip(flip_p) +
// Normalize(mean, std). Eval: Resize(resize_size, shorter side) + CenterCrop(image_size) +
// Normalize. The crop box is planned from the header alone (Plan), before decoding, so the
// decoder decodes only what the crop needs; Apply then resizes, flips, normalizes and
// writes the layout in one pass, straight into the caller's buffer (a batch slot).
//
// Resizing follows Pillow's antialiased bilinear filter (what torchvision 0.14 applies to
// PIL images), so outputs agree with torchvision to within rounding and DCT scaling. Where
// that is faster (AVX-512), Plan asks the decoder for YCbCr planes and Apply resizes each
// plane, chroma from its stored resolution, and converts colour at the output size
// (internal/resample_ycc.h): a level or two off RGB-first resizing where colour changes
// sharply (eval PSNR against torchvision 51 dB on the benchmark's images).
//
// Thread-safety: a Transform is immutable after Create; Plan and Apply may be called from
// any number of threads at once (Apply uses thread-local scratch memory).
#ifndef FLOWLOADER_STAGES_AUGMENT_TRANSFORM_H_
#define FLOWLOADER_STAGES_AUGMENT_TRANSFORM_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stages/core/image.h"
#include "stages/core/rng.h"
#include "stages/decode/decoder.h"

namespace flowloader::augment {

enum class Mode {
  kTrain,  // RandomResizedCrop + RandomHorizontalFlip + Normalize.
  kEval,   // Resize(shorter side) + CenterCrop + Normalize.
};

enum class Layout {
  kFloatCHW,  // float32, [3, H, W], normalized with mean/std.
  kUint8HWC,  // uint8, [H, W, 3], no normalization (for GPU-side normalization).
};

// ModeNames and LayoutNames are how options, specs and the CLI spell Mode and Layout, in
// enum order: {"train", "eval"} and {"float_chw", "uint8_hwc"}. The one table of both.
const std::vector<std::string>& ModeNames();
const std::vector<std::string>& LayoutNames();
// ModeName and LayoutName spell one value.
const std::string& ModeName(Mode mode);
const std::string& LayoutName(Layout layout);
// ParseMode and ParseLayout read a spelling; InvalidArgument "WHAT must be train or eval,
// got 'NAME'" (resp. float_chw or uint8_hwc) when it is none of them.
absl::StatusOr<Mode> ParseMode(const std::string& name, const std::string& what);
absl::StatusOr<Layout> ParseLayout(const std::string& name, const std::string& what);

// Interpolation is the resize filter, as torchvision's InterpolationMode on PIL images
// (Pillow's ImagingResample filters; nearest is Pillow's nearest-neighbour resize).
enum class Interpolation { kBilinear, kBicubic, kNearest };

struct TransformOptions {
  Mode mode = Mode::kTrain;
  // Output side length in pixels (square output). Must be in [1, 16384].
  int image_size = 224;
  // Eval only: the shorter side after Resize, before CenterCrop. 0 means
  // round(image_size * 256 / 224), torchvision's ImageNet recipe. Must be >= image_size.
  int resize_size = 0;
  // Train only: RandomResizedCrop's area fraction range; 0 < scale_min <= scale_max <= 1.
  double scale_min = 0.08;
  double scale_max = 1.0;
  // Train only: aspect-ratio range (w / h); 0 < ratio_min <= ratio_max.
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
  // Train only: probability of a horizontal flip, in [0, 1].
  double flip_p = 0.5;
  // Normalize: per-channel mean and std on the [0, 1] scale (RGB order). std > 0.
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
  Layout layout = Layout::kFloatCHW;
  // The resize filter. Bilinear is the fused SIMD pass (and may take YCbCr planes);
  // bicubic and nearest resize RGB with Pillow's exact arithmetic.
  Interpolation interpolation = Interpolation::kBilinear;
};

// CropPlan is everything random about one sample, drawn before decoding.
struct CropPlan {
  // The box of the original image that becomes the output (may be fractional for eval).
  RectF region;
  // Train (crop then resize): the resize filter sees only pixels inside `region`.
  // Eval (resize then crop): it may see pixels around it, up to the image edge.
  bool clamp_to_region = true;
  bool flip = false;
  // Eval only: Resize's output size and the crop's offset in it (resized pixels). The
  // nearest filter uses them to pick F.resize's own source rows and columns (its
  // positions accumulate from the image's edge, so a box's own would round differently).
  int resized_width = 0;
  int resized_height = 0;
  int crop_left = 0;
  int crop_top = 0;
  // What to ask the decoder for: `region` plus the filter's support where it may read.
  decode::RegionRequest decode_request;
};

class Transform {
 public:
  // Create validates every option; a constructed Transform is valid.
  static absl::StatusOr<std::unique_ptr<Transform>> Create(const TransformOptions& options);

  // Plan draws this sample's crop and flip from `rng` for an image of width × height,
  // exactly as torchvision's RandomResizedCrop.get_params / Resize + CenterCrop would.
  CropPlan Plan(int width, int height, SampleRng& rng) const;

  // Apply resizes plan.region of `decoded` to image_size², flips if planned, normalizes
  // and writes OutputBytes() bytes in the configured layout to `dst`.
  absl::Status Apply(const decode::DecodedImage& decoded, const CropPlan& plan,
                     void* dst) const;

  // OutputBytes is the size of one sample's output.
  size_t OutputBytes() const;
  // OutputShape is [C, H, W] for kFloatCHW, [H, W, C] for kUint8HWC.
  std::array<int, 3> OutputShape() const;

  const TransformOptions& options() const { return options_; }

 private:
  explicit Transform(const TransformOptions& options) : options_(options) {}
  void ApplyPillow(const decode::DecodedImage& decoded, const RectF& box, const CropPlan& plan,
                   void* dst) const;
  TransformOptions options_;
};

}  // namespace flowloader::augment

#endif  // FLOWLOADER_STAGES_AUGMENT_TRANSFORM_H_
