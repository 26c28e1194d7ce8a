// batch_image.cc: fill, rectangle copy and masked select on a batch tensor's image.
#include "stages/detection/batch_image.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flowloader::detection {

void FillImage(const BatchImage& image, float value) {
  const size_t pixels = static_cast<size_t>(image.height) * static_cast<size_t>(image.width) *
                        static_cast<size_t>(image.channels);
  if (image.float_chw) {
    float* p = static_cast<float*>(image.data);
    std::fill(p, p + pixels, value);
  } else {
    const float v = std::min(255.0f, std::max(0.0f, std::nearbyint(value)));
    std::memset(image.data, static_cast<int>(v), pixels);
  }
}

void CopyRect(const BatchImage& src, int sx, int sy, const BatchImage& dst, int dx, int dy,
              int w, int h) {
  if (w <= 0 || h <= 0) return;
  if (src.float_chw) {
    const float* s = static_cast<const float*>(src.data);
    float* d = static_cast<float*>(dst.data);
    const size_t splane = static_cast<size_t>(src.height) * src.width;
    const size_t dplane = static_cast<size_t>(dst.height) * dst.width;
    for (int c = 0; c < src.channels; ++c) {
      for (int y = 0; y < h; ++y) {
        std::memcpy(d + c * dplane + static_cast<size_t>(dy + y) * dst.width + dx,
                    s + c * splane + static_cast<size_t>(sy + y) * src.width + sx,
                    static_cast<size_t>(w) * sizeof(float));
      }
    }
    return;
  }
  const uint8_t* s = static_cast<const uint8_t*>(src.data);
  uint8_t* d = static_cast<uint8_t*>(dst.data);
  const size_t c = static_cast<size_t>(src.channels);
  for (int y = 0; y < h; ++y) {
    std::memcpy(d + (static_cast<size_t>(dy + y) * dst.width + dx) * c,
                s + (static_cast<size_t>(sy + y) * src.width + sx) * c, static_cast<size_t>(w) * c);
  }
}

void SelectPixels(const BatchImage& src, const uint8_t* mask, const BatchImage& dst) {
  const size_t plane = static_cast<size_t>(dst.height) * dst.width;
  if (dst.float_chw) {
    const float* s = static_cast<const float*>(src.data);
    float* d = static_cast<float*>(dst.data);
    for (int c = 0; c < dst.channels; ++c) {
      for (size_t i = 0; i < plane; ++i) {
        if (mask[i]) d[c * plane + i] = s[c * plane + i];
      }
    }
    return;
  }
  const uint8_t* s = static_cast<const uint8_t*>(src.data);
  uint8_t* d = static_cast<uint8_t*>(dst.data);
  const size_t c = static_cast<size_t>(dst.channels);
  for (size_t i = 0; i < plane; ++i) {
    if (mask[i]) std::memcpy(d + i * c, s + i * c, c);
  }
}

}  // namespace flowloader::detection
