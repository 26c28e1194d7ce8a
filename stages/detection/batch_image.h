// batch_image.h: one image of a batch tensor as the multi-sample ops (mosaic, copy_paste)
// see it: uint8 [H, W, C] (layout hwc) or float32 [C, H, W] (after normalize), and the
// three pixel moves they need: fill, copy a rectangle, select by a mask.
//
// Thread-safety: pure functions on the caller's buffers.
#ifndef FLOWLOADER_STAGES_DETECTION_BATCH_IMAGE_H_
#define FLOWLOADER_STAGES_DETECTION_BATCH_IMAGE_H_

#include <cstddef>
#include <cstdint>

namespace flowloader::detection {

struct BatchImage {
  void* data = nullptr;
  int height = 0;
  int width = 0;
  int channels = 0;
  bool float_chw = false;  // float32 [C, H, W]; else uint8 [H, W, C].

  size_t bytes() const {
    return static_cast<size_t>(height) * static_cast<size_t>(width) *
           static_cast<size_t>(channels) * (float_chw ? 4 : 1);
  }
};

// FillImage sets every pixel of `image` to `value` (uint8: rounded and clamped to 0..255).
void FillImage(const BatchImage& image, float value);

// CopyRect copies the rectangle of w × h pixels at (sx, sy) of `src` to (dx, dy) of `dst`
// (same layout and channels; the caller keeps both rectangles inside their images).
void CopyRect(const BatchImage& src, int sx, int sy, const BatchImage& dst, int dx, int dy,
              int w, int h);

// SelectPixels sets dst's pixel to src's where mask (H × W, nonzero = take) is set.
void SelectPixels(const BatchImage& src, const uint8_t* mask, const BatchImage& dst);

}  // namespace flowloader::detection

#endif  // FLOWLOADER_STAGES_DETECTION_BATCH_IMAGE_H_
