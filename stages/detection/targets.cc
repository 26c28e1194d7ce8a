// targets.cc: box formats and the per-instance bookkeeping of Targets.
#include "stages/detection/targets.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace flowloader::detection {

const char* BoxFormatName(BoxFormat format) {
  switch (format) {
    case BoxFormat::kXYXY:
      return "xyxy";
    case BoxFormat::kXYWH:
      return "xywh";
    case BoxFormat::kCXCYWH:
      return "cxcywh";
  }
  return "?";
}

absl::StatusOr<BoxFormat> ParseBoxFormat(const std::string& text) {
  if (text == "xyxy") return BoxFormat::kXYXY;
  if (text == "xywh") return BoxFormat::kXYWH;
  if (text == "cxcywh") return BoxFormat::kCXCYWH;
  return absl::InvalidArgumentError(
      absl::StrCat("box format must be xyxy, xywh or cxcywh, got \"", text, "\""));
}

void ConvertBoxes(BoxFormat from, BoxFormat to, std::vector<float>* boxes) {
  if (from == to) return;
  for (size_t i = 0; i + 4 <= boxes->size(); i += 4) {
    float* b = boxes->data() + i;
    // To xyxy first (torchvision goes through xyxy the same way).
    float x1 = b[0], y1 = b[1], x2 = b[2], y2 = b[3];
    if (from == BoxFormat::kXYWH) {
      x2 = b[0] + b[2];
      y2 = b[1] + b[3];
    } else if (from == BoxFormat::kCXCYWH) {
      x1 = b[0] - 0.5f * b[2];
      y1 = b[1] - 0.5f * b[3];
      x2 = b[0] + 0.5f * b[2];
      y2 = b[1] + 0.5f * b[3];
    }
    if (to == BoxFormat::kXYXY) {
      b[0] = x1, b[1] = y1, b[2] = x2, b[3] = y2;
    } else if (to == BoxFormat::kXYWH) {
      b[0] = x1, b[1] = y1, b[2] = x2 - x1, b[3] = y2 - y1;
    } else {
      b[0] = (x1 + x2) / 2, b[1] = (y1 + y2) / 2, b[2] = x2 - x1, b[3] = y2 - y1;
    }
  }
}

void Targets::Clear() {
  image_id = 0;
  canvas_width = canvas_height = 0;
  format = BoxFormat::kXYXY;
  boxes.clear();
  labels.clear();
  iscrowd.clear();
  area.clear();
  has_masks = false;
  masks.clear();
  has_keypoints = false;
  num_keypoints = 0;
  keypoints.clear();
  has_semantic = false;
  semantic.clear();
}

int64_t Targets::Keep(const std::vector<bool>& keep) {
  const size_t plane = mask_plane();
  const size_t kp = keypoint_stride();
  size_t out = 0;
  for (size_t k = 0; k < labels.size(); ++k) {
    if (!keep[k]) continue;
    if (out != k) {
      std::memcpy(&boxes[4 * out], &boxes[4 * k], 4 * sizeof(float));
      labels[out] = labels[k];
      if (!iscrowd.empty()) iscrowd[out] = iscrowd[k];
      if (!area.empty()) area[out] = area[k];
      if (has_masks) std::memmove(&masks[out * plane], &masks[k * plane], plane);
      if (has_keypoints) {
        std::memmove(&keypoints[out * kp], &keypoints[k * kp], kp * sizeof(float));
      }
    }
    ++out;
  }
  const int64_t dropped = static_cast<int64_t>(labels.size() - out);
  boxes.resize(4 * out);
  labels.resize(out);
  if (!iscrowd.empty()) iscrowd.resize(out);
  if (!area.empty()) area.resize(out);
  if (has_masks) masks.resize(out * plane);
  if (has_keypoints) keypoints.resize(out * kp);
  return dropped;
}

size_t Targets::Bytes() const {
  return boxes.size() * sizeof(float) + labels.size() * sizeof(int64_t) +
         iscrowd.size() * sizeof(int64_t) + area.size() * sizeof(float) + masks.size() + semantic.size() +
         keypoints.size() * sizeof(float);
}

}  // namespace flowloader::detection
