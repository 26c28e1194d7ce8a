// random_horizontal_flip.cc: torchvision's RandomHorizontalFlip(p=0.5): F.hflip (PIL's
// FLIP_LEFT_RIGHT) with probability p, in place.
//
// Keypoints mirror as v2's horizontal_flip_keypoints (x -> W - 1 - x). A left eye mirrored
// is where a right eye is, so Keypoint R-CNN training also swaps each instance's left and
// right points: `keypoint_flip` is that permutation, point i of the output being point
// keypoint_flip[i] of the input, as `flip_inds` in torchvision's references/detection/
// transforms.py (_flip_coco_person_keypoints, v0.14.0) and Detectron2's keypoint flip
// map; `coco_person` is COCO's 17 person keypoints' (flip_inds). The references also
// mirror to W - x and zero the points with v = 0; here the coordinates stay v2's.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/flip.h"
#include "stages/augment/ops/internal/target_moves.h"
#include "stages/augment/ops/kernels/geometry.h"
#include "stages/augment/ops/kernels/label_plane.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

// kCocoPersonFlip is flip_inds of _flip_coco_person_keypoints: nose, then (left, right)
// eyes, ears, shoulders, elbows, wrists, hips, knees and ankles swapped.
const std::vector<int> kCocoPersonFlip = {0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15};

class RandomHorizontalFlip : public Op {
 public:
  explicit RandomHorizontalFlip(std::vector<int> keypoint_flip)
      : keypoint_flip_(std::move(keypoint_flip)) {}

  TargetEffect Targets() const override { return TargetEffect::kMoves; }
  absl::Status MoveTargets(const OpParams&, detection::Targets* targets) const override {
    if (absl::Status s = internal::MoveTargetsBy(detection::Geometry::HorizontalFlip(), targets);
        !s.ok()) {
      return s;
    }
    return SwapKeypoints(targets);
  }
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    kernels::HorizontalFlip(*image.rgb);
    return absl::OkStatus();
  }
  bool MovesLabels() const override { return true; }
  absl::Status MoveLabels(const OpParams&, LabelPlane& plane) const override {
    kernels::LabelHorizontalFlip(*plane.labels);
    return absl::OkStatus();
  }

  bool GatherMovesMasks() const override { return true; }
  bool Gather(const OpParams&, int width, int height, GatherMaps* maps) const override {
    maps->x_src.resize(width);
    for (int x = 0; x < width; ++x) maps->x_src[x] = width - 1 - x;
    maps->y_src.resize(height);
    for (int y = 0; y < height; ++y) maps->y_src[y] = y;
    return true;
  }

 private:
  // SwapKeypoints reorders each instance's points by keypoint_flip_ (nothing without it).
  absl::Status SwapKeypoints(detection::Targets* targets) const {
    if (keypoint_flip_.empty() || !targets->has_keypoints) return absl::OkStatus();
    const size_t points = keypoint_flip_.size();
    if (static_cast<size_t>(targets->num_keypoints) != points) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keypoint_flip lists ", points, " points and the sample's instances have ",
          targets->num_keypoints, " keypoints each; give one index per keypoint"));
    }
    std::vector<float> instance(points * 3);
    for (size_t at = 0; at + points * 3 <= targets->keypoints.size(); at += points * 3) {
      float* kp = &targets->keypoints[at];
      instance.assign(kp, kp + points * 3);
      for (size_t i = 0; i < points; ++i) {
        const size_t from = static_cast<size_t>(keypoint_flip_[i]) * 3;
        kp[3 * i] = instance[from], kp[3 * i + 1] = instance[from + 1];
        kp[3 * i + 2] = instance[from + 2];
      }
    }
    return absl::OkStatus();
  }

  const std::vector<int> keypoint_flip_;  // Empty: points keep their order.

  friend bool internal::SwapsKeypoints(const Op& op);
};

// KeypointFlip reads the `keypoint_flip` argument: null, coco_person, or a permutation
// of 0 .. P-1 (each index once, at most 1024 points).
absl::StatusOr<std::vector<int>> KeypointFlip(const OpValue& v) {
  if (v.is_none) return std::vector<int>();
  if (v.word == "coco_person") return kCocoPersonFlip;
  constexpr size_t kMaxPoints = 1024;
  const absl::Status refusal = ArgError(
      "random_horizontal_flip", "keypoint_flip",
      "null, coco_person or a permutation of 0 .. P-1 (P <= 1024)",
      v);
  if (!v.word.empty() || v.numbers.empty() || v.numbers.size() > kMaxPoints) return refusal;
  std::vector<int> flip;
  std::vector<bool> seen(v.numbers.size(), false);
  for (double d : v.numbers) {
    if (!(d >= 0 && d < static_cast<double>(v.numbers.size())) || d != static_cast<int>(d) ||
        seen[static_cast<size_t>(d)]) {
      return refusal;
    }
    seen[static_cast<size_t>(d)] = true;
    flip.push_back(static_cast<int>(d));
  }
  return flip;
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{"random_horizontal_flip",
              "mirrors the image left-right with probability p",
              {{"keypoint_flip", "null", "null, coco_person, or a permutation of 0 .. P-1",
                "swaps each instance's left and right keypoints as it mirrors them (point i "
                "becomes point keypoint_flip[i]; references' flip_inds)"}},
              0.5}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<std::vector<int>> flip = KeypointFlip(args.Get("keypoint_flip"));
      if (!flip.ok()) return flip.status();
      return std::unique_ptr<Op>(new RandomHorizontalFlip(*std::move(flip)));
    });

}  // namespace

bool internal::SwapsKeypoints(const Op& op) {
  const auto* flip = dynamic_cast<const RandomHorizontalFlip*>(&op);
  return flip != nullptr && !flip->keypoint_flip_.empty();
}

}  // namespace flowloader::augment
