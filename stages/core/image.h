// image.h: the pixel containers passed between stages.
//
// Thread-safety: plain values; an Image is owned by one sample at a time.
#ifndef FLOWLOADER_STAGES_CORE_IMAGE_H_
#define FLOWLOADER_STAGES_CORE_IMAGE_H_

#include <array>
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

// SizedSlots holds up to kSlots values of T (an Image, or a set of working images), each
// kept for one width × height. A thread's scratch image that alternates between sizes
// (DINO's 224² global and 96² local views) would otherwise be grown again at every
// switch, std::vector::resize zeroing bytes that are then all overwritten. A size not
// held takes over the least recently used slot. Not thread-safe: one per thread.
template <typename T, int kSlots = 4>
class SizedSlots {
 public:
  T& For(int width, int height) {
    const uint64_t key =
        static_cast<uint64_t>(static_cast<uint32_t>(width)) << 32 | static_cast<uint32_t>(height);
    ++clock_;
    int oldest = 0;
    for (int i = 0; i < kSlots; ++i) {
      if (used_[i] != 0 && keys_[i] == key) {
        used_[i] = clock_;
        return values_[i];
      }
      if (used_[i] < used_[oldest]) oldest = i;
    }
    keys_[oldest] = key;
    used_[oldest] = clock_;
    return values_[oldest];
  }

 private:
  std::array<T, kSlots> values_{};
  std::array<uint64_t, kSlots> keys_{};
  std::array<uint64_t, kSlots> used_{};  // When each was last taken (0: never).
  uint64_t clock_ = 0;
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
