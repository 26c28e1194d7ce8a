// multi_crop.cc: FiveCrop's and TenCrop's boxes (F.five_crop, F.ten_crop) and the copy of
// one crop.
#include "stages/augment/ops/internal/multi_crop.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/crop_math.h"
#include "stages/augment/ops/internal/geometry_args.h"

namespace flowloader::augment::internal {

absl::StatusOr<std::unique_ptr<Op>> MultiCrop::Create(const std::string& op,
                                                      const OpArgs& args, int crops) {
  int h = 0, w = 0;
  if (absl::Status s = ReadSize(op, args, "size", true, &h, &w); !s.ok()) return s;
  bool vertical_flip = false;
  if (crops == 10) {
    if (absl::Status s = ReadBool(op, args, "vertical_flip", &vertical_flip); !s.ok()) return s;
  }
  return std::unique_ptr<Op>(new MultiCrop(h, w, crops, vertical_flip));
}

absl::Status MultiCrop::CheckFits(int width, int height) const {
  if (width_ <= width && height_ <= height) return absl::OkStatus();
  // torchvision: "Requested crop size (h, w) is bigger than input size (H, W)".
  return absl::InvalidArgumentError(absl::StrCat(
      "requested crop size (", height_, ", ", width_, ") is bigger than input size (", height,
      ", ", width, "): lower ", name(), " size or resize the image to at least it first"));
}

CropBox MultiCrop::Box(int c, int width, int height) const {
  // F.five_crop: tl (0, 0), tr (0, W - w), bl (H - h, 0), br (H - h, W - w), then
  // F.center_crop's (round((H - h) / 2), round((W - w) / 2)).
  CropBox box;
  switch (c % 5) {
    case 0: break;
    case 1: box.left = width - width_; break;
    case 2: box.top = height - height_; break;
    case 3:
      box.top = height - height_;
      box.left = width - width_;
      break;
    default:
      box.top = CenterCropOffset(height, height_);
      box.left = CenterCropOffset(width, width_);
  }
  if (c >= 5) {
    // F.ten_crop's second five are boxes of the flipped image: the mirrored box of this
    // one, read mirrored.
    if (vertical_flip_) {
      box.top = height - height_ - box.top;
      box.mirror_y = true;
    } else {
      box.left = width - width_ - box.left;
      box.mirror_x = true;
    }
  }
  return box;
}

absl::Status MultiCrop::Apply(const OpParams& params, OpImage& image) const {
  if (params.n != 1 || !(params.v[0] >= 0 && params.v[0] < crops_) ||
      params.v[0] != static_cast<int>(params.v[0])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "makes ", crops_, " crops: its parameter is the crop's index in [0, ", crops_ - 1,
        "], got ", params.n == 0 ? std::string("none") : absl::StrCat(params.v[0])));
  }
  const Image& src = *image.rgb;
  if (absl::Status s = CheckFits(src.width, src.height); !s.ok()) return s;
  const CropBox box = Box(static_cast<int>(params.v[0]), src.width, src.height);
  Image& dst = *image.spare;
  dst.Resize(width_, height_, 3);
  const size_t row_bytes = 3 * static_cast<size_t>(width_);
  for (int y = 0; y < height_; ++y) {
    const int sy = box.top + (box.mirror_y ? height_ - 1 - y : y);
    const uint8_t* in = src.pixels.data() + static_cast<size_t>(sy) * src.stride() +
                        3 * static_cast<size_t>(box.left);
    uint8_t* out = dst.Row(y);
    if (!box.mirror_x) {
      std::memcpy(out, in, row_bytes);
      continue;
    }
    for (int x = 0; x < width_; ++x) {
      const uint8_t* p = in + 3 * static_cast<size_t>(width_ - 1 - x);
      out[3 * x] = p[0];
      out[3 * x + 1] = p[1];
      out[3 * x + 2] = p[2];
    }
  }
  std::swap(*image.rgb, *image.spare);
  return absl::OkStatus();
}

}  // namespace flowloader::augment::internal
