// drawn_resize.cc: see drawn_resize.h.
#include "stages/augment/ops/internal/drawn_resize.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "stages/augment/internal/pillow_resample.h"
#include "stages/augment/ops/internal/target_moves.h"

namespace flowloader::augment::internal {

bool DrawnSize(const OpParams& p, OpSize* out) {
  if (p.n != 2 || !(p.v[0] >= 1 && p.v[1] >= 1 && p.v[0] <= 16384 && p.v[1] <= 16384)) {
    return false;
  }
  *out = {static_cast<int>(p.v[1]), static_cast<int>(p.v[0])};
  return true;
}

absl::Status ResizeToDrawnSize(const OpParams& p, Interpolation interpolation,
                               OpImage& image) {
  OpSize size;
  if (!DrawnSize(p, &size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the new size must be 1 to 16384 pixels a side, got ", p.n > 0 ? p.v[0] : 0, "x",
        p.n > 1 ? p.v[1] : 0, ": lower the target size or the scale"));
  }
  const Image& src = *image.rgb;
  PillowResample(src.view(),
                 RectF{0, 0, static_cast<double>(src.width), static_cast<double>(src.height)},
                 static_cast<int>(p.v[1]), static_cast<int>(p.v[0]), interpolation, false,
                 image.spare);
  std::swap(*image.rgb, *image.spare);
  return absl::OkStatus();
}

absl::Status MoveTargetsToDrawnSize(const OpParams& p, detection::Targets* targets) {
  return MoveTargetsBy(
      detection::Geometry::Resize(static_cast<int>(p.v[0]), static_cast<int>(p.v[1])),
      targets);
}

}  // namespace flowloader::augment::internal
