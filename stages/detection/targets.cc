// targets.cc: box formats and the per-instance bookkeeping of Targets.
#include "stages/detection/targets.h"

#include <algorithm>
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
  masks_windowed = false;
  mask_windows.clear();
  has_keypoints = false;
  num_keypoints = 0;
  keypoints.clear();
  has_semantic = false;
  semantic.clear();
}

// WindowBytes is the bytes of window k of `windows` (x, y, width, height each).
static size_t WindowBytes(const std::vector<int32_t>& windows, size_t k) {
  return static_cast<size_t>(windows[4 * k + 2]) * static_cast<size_t>(windows[4 * k + 3]);
}

// KeepWindows is Keep for windowed masks: the kept windows and their bytes, in order.
static void KeepWindows(const std::vector<bool>& keep, std::vector<int32_t>* windows,
                        std::vector<uint8_t>* masks) {
  size_t out = 0, in_at = 0, out_at = 0;
  for (size_t k = 0; k < keep.size(); ++k) {
    const size_t bytes = WindowBytes(*windows, k);
    if (keep[k]) {
      if (in_at != out_at) std::memmove(masks->data() + out_at, masks->data() + in_at, bytes);
      if (out != k) std::memmove(&(*windows)[4 * out], &(*windows)[4 * k], 4 * sizeof(int32_t));
      out_at += bytes;
      ++out;
    }
    in_at += bytes;
  }
  windows->resize(4 * out);
  masks->resize(out_at);
}

void Targets::WriteMaskPlanes(uint8_t* out) const {
  const size_t plane = mask_plane();
  const size_t k_count = labels.size();
  if (k_count == 0 || plane == 0) return;
  if (!masks_windowed) {
    std::memcpy(out, masks.data(), std::min(masks.size(), k_count * plane));
    return;
  }
  std::memset(out, 0, k_count * plane);
  const uint8_t* src = masks.data();
  for (size_t k = 0; k < k_count; ++k) {
    const int32_t* win = &mask_windows[4 * k];
    uint8_t* dst = out + k * plane + static_cast<size_t>(win[1]) * canvas_width + win[0];
    for (int32_t y = 0; y < win[3]; ++y, src += win[2], dst += canvas_width) {
      std::memcpy(dst, src, static_cast<size_t>(win[2]));
    }
  }
}

void Targets::ExpandMasks() {
  if (!masks_windowed) return;
  std::vector<uint8_t> planes(MaskPlaneBytes());
  WriteMaskPlanes(planes.data());
  masks.swap(planes);
  masks_windowed = false;
  mask_windows.clear();
}

int64_t Targets::Keep(const std::vector<bool>& keep) {
  const size_t plane = mask_plane();
  if (masks_windowed) KeepWindows(keep, &mask_windows, &masks);
  const bool move_planes = has_masks && !masks_windowed;
  const size_t kp = keypoint_stride();
  // An op that added instances without points leaves them unlabelled (v = 0), so the
  // field stays K × P × 3.
  if (has_keypoints) keypoints.resize(labels.size() * kp, 0.0f);
  size_t out = 0;
  for (size_t k = 0; k < labels.size(); ++k) {
    if (!keep[k]) continue;
    if (out != k) {
      std::memcpy(&boxes[4 * out], &boxes[4 * k], 4 * sizeof(float));
      labels[out] = labels[k];
      if (!iscrowd.empty()) iscrowd[out] = iscrowd[k];
      if (!area.empty()) area[out] = area[k];
      if (move_planes) std::memmove(&masks[out * plane], &masks[k * plane], plane);
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
  if (move_planes) masks.resize(out * plane);
  if (has_keypoints) keypoints.resize(out * kp);
  return dropped;
}

size_t Targets::Bytes() const {
  return boxes.size() * sizeof(float) + labels.size() * sizeof(int64_t) +
         iscrowd.size() * sizeof(int64_t) + area.size() * sizeof(float) + masks.size() +
         mask_windows.size() * sizeof(int32_t) + semantic.size() +
         keypoints.size() * sizeof(float);
}

}  // namespace flowloader::detection
