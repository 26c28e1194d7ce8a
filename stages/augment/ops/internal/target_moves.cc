// target_moves.cc: see target_moves.h.
#include "stages/augment/ops/internal/target_moves.h"

#include <cstdint>

namespace flowloader::augment::internal {

absl::Status MoveTargetsBy(const detection::Geometry& geometry, detection::Targets* targets) {
  detection::Apply(geometry, targets);
  return absl::OkStatus();
}

void PadTargets(int top, int left, const std::vector<int>& map_x,
                const std::vector<int>& map_y, detection::Targets* targets) {
  targets->ExpandMasks();  // Windowed masks (from the annotations stage) as full planes.
  const int out_w = static_cast<int>(map_x.size()), out_h = static_cast<int>(map_y.size());
  int cw = targets->canvas_width, ch = targets->canvas_height;
  detection::ApplyToBoxes(detection::Geometry::Crop(top, left, out_h, out_w),
                          targets->format, &cw, &ch, targets->boxes.data(), targets->size());
  if (targets->has_keypoints) {
    detection::ApplyToKeypoints(detection::Geometry::Crop(top, left, out_h, out_w),
                                targets->canvas_width, targets->canvas_height,
                                targets->keypoints.data(),
                                targets->size() * targets->num_keypoints, 3);
  }
  if (targets->has_masks) {
    const int in_w = targets->canvas_width;
    const size_t in_plane = targets->mask_plane();
    const size_t out_plane = static_cast<size_t>(out_w) * static_cast<size_t>(out_h);
    std::vector<uint8_t> out(out_plane * static_cast<size_t>(targets->size()));
    for (int64_t k = 0; k < targets->size(); ++k) {
      const uint8_t* in = targets->masks.data() + static_cast<size_t>(k) * in_plane;
      uint8_t* dst = out.data() + static_cast<size_t>(k) * out_plane;
      for (int y = 0; y < out_h; ++y) {
        for (int x = 0; x < out_w; ++x) {
          const int sy = map_y[y], sx = map_x[x];
          *dst++ = sy < 0 || sx < 0 ? 0 : in[static_cast<size_t>(sy) * in_w + sx];
        }
      }
    }
    targets->masks.swap(out);
  }
  targets->canvas_width = out_w;
  targets->canvas_height = out_h;
}

}  // namespace flowloader::augment::internal
