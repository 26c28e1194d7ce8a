// image.h: the pixel containers passed between stages.
//
// Thread-safety: plain values; an Image is owned by one sample at a time.
#ifndef FLOWLOADER_STAGES_CORE_IMAGE_H_
#define FLOWLOADER_STAGES_CORE_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace flowloader {

// ImageView is a non-owning view of interleaved 8-bit pixels (HWC, row-major).
struct ImageView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;   // 1 (gray) or 3 (RGB).
  size_t stride = 0;  // Bytes from one row to the next (>= width * channels).

  const uint8_t* Row(int y) const { return data + static_cast<size_t>(y) * stride; }
};

// Image owns interleaved 8-bit pixels, tightly packed (stride == width * channels).
struct Image {
  std::vector<uint8_t> pixels;
  int width = 0;
  int height = 0;
  int channels = 0;

  void Resize(int w, int h, int c) {
    width = w;
    height = h;
    channels = c;
    pixels.resize(static_cast<size_t>(w) * h * c);
  }
  size_t stride() const { return static_cast<size_t>(width) * channels; }
  uint8_t* Row(int y) { return pixels.data() + static_cast<size_t>(y) * stride(); }
  ImageView view() const {
    return ImageView{pixels.data(), width, height, channels, stride()};
  }
};

// RectF is an axis-aligned box in pixel coordinates: [x, x + w) × [y, y + h).
struct RectF {
  double x = 0;
  double y = 0;
  double w = 0;
  double h = 0;
};

}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_CORE_IMAGE_H_
