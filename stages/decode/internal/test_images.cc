// test_images.cc: see test_images.h.
//
// Thread-safety: free functions on values.
#include "stages/decode/internal/test_images.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "stages/core/rng.h"

namespace flowloader::decode::testing {
namespace {

uint8_t Clamp8(double v) {
  return static_cast<uint8_t>(std::lround(std::min(255.0, std::max(0.0, v))));
}

}  // namespace

Image PhotoLike(int width, int height, int channels, uint64_t seed) {
  Image img;
  img.Resize(width, height, channels);
  const double phase = static_cast<double>(Mix64(seed) % 1000) / 100.0;
  for (int y = 0; y < height; ++y) {
    uint8_t* row = img.Row(y);
    for (int x = 0; x < width; ++x) {
      // Low frequencies: slow colour gradients.
      double r = 128 + 90 * std::sin(x * 0.013 + phase) * std::cos(y * 0.021);
      double g = 120 + 80 * std::sin((x + y) * 0.011 + 2 * phase);
      double b = 110 + 95 * std::cos(x * 0.007 - y * 0.016 + phase);
      // Texture: a mid-frequency ripple.
      const double t = 18 * std::sin(x * 0.35 + y * 0.22) * std::sin(y * 0.41 - phase);
      r += t;
      g += t * 0.8;
      b -= t * 0.6;
      // Hard edges: a disk and a bar in saturated colours.
      const double dx = x - width * 0.62, dy = y - height * 0.4;
      if (dx * dx + dy * dy < 0.04 * width * height) r = 240, g = 40, b = 30;
      if (((x / 37) + (y / 53)) % 7 == 0) r *= 0.3, g *= 0.4, b = 220;
      // Sensor-like noise.
      const uint64_t n = Mix64(seed ^ (static_cast<uint64_t>(y) << 32 | x));
      const double noise = static_cast<double>(n % 13) - 6;
      uint8_t* p = row + static_cast<size_t>(x) * channels;
      if (channels <= 2) {
        p[0] = Clamp8(0.299 * r + 0.587 * g + 0.114 * b + noise);
        if (channels == 2) p[1] = static_cast<uint8_t>((x * 7 + y * 3) & 0xff);
      } else {
        p[0] = Clamp8(r + noise);
        p[1] = Clamp8(g - noise);
        p[2] = Clamp8(b + noise * 0.5);
        if (channels == 4) p[3] = static_cast<uint8_t>((x * 5 + y * 11) & 0xff);
      }
    }
  }
  return img;
}

Image ToRgb(const Image& image) {
  if (image.channels == 3) return image;
  Image out;
  out.Resize(image.width, image.height, 3);
  const size_t n = static_cast<size_t>(image.width) * image.height;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &image.pixels[i * image.channels];
    uint8_t* q = &out.pixels[i * 3];
    if (image.channels <= 2) {
      q[0] = q[1] = q[2] = p[0];
    } else {
      q[0] = p[0], q[1] = p[1], q[2] = p[2];
    }
  }
  return out;
}

double Psnr(const ImageView& a, const ImageView& b) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels) return -1;
  double sse = 0;
  const size_t row = static_cast<size_t>(a.width) * a.channels;
  for (int y = 0; y < a.height; ++y) {
    for (size_t i = 0; i < row; ++i) {
      const double d = static_cast<double>(a.Row(y)[i]) - b.Row(y)[i];
      sse += d * d;
    }
  }
  if (sse == 0) return std::numeric_limits<double>::infinity();
  const double mse = sse / (static_cast<double>(row) * a.height);
  return 10 * std::log10(255.0 * 255.0 / mse);
}

int MaxAbsDiff(const ImageView& a, const ImageView& b) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels) return 256;
  int worst = 0;
  const size_t row = static_cast<size_t>(a.width) * a.channels;
  for (int y = 0; y < a.height; ++y) {
    for (size_t i = 0; i < row; ++i) {
      worst = std::max(worst, std::abs(int{a.Row(y)[i]} - int{b.Row(y)[i]}));
    }
  }
  return worst;
}

Image Crop(const ImageView& image, int x, int y, int w, int h) {
  Image out;
  out.Resize(w, h, image.channels);
  for (int r = 0; r < h; ++r) {
    std::copy_n(image.Row(y + r) + static_cast<size_t>(x) * image.channels,
                static_cast<size_t>(w) * image.channels, out.Row(r));
  }
  return out;
}

Image AreaResize(const ImageView& image, int out_w, int out_h, double scale_x,
                 double scale_y) {
  // Separable: weights of input column/row j for output i are the overlap of
  // [j, j + 1) with [i / scale, (i + 1) / scale), clipped to the image.
  auto weights = [](int out_n, int in_n, double scale) {
    std::vector<std::vector<std::pair<int, double>>> w(out_n);
    for (int i = 0; i < out_n; ++i) {
      const double lo = i / scale, hi = std::min<double>(in_n, (i + 1) / scale);
      double total = 0;
      for (int j = static_cast<int>(lo); j < in_n && j < hi; ++j) {
        const double o = std::min<double>(j + 1, hi) - std::max<double>(j, lo);
        if (o > 0) w[i].push_back({j, o}), total += o;
      }
      for (auto& p : w[i]) p.second /= total;
    }
    return w;
  };
  const auto wx = weights(out_w, image.width, scale_x);
  const auto wy = weights(out_h, image.height, scale_y);
  const int c = image.channels;
  std::vector<double> tmp(static_cast<size_t>(out_w) * image.height * c);
  for (int y = 0; y < image.height; ++y) {
    for (int i = 0; i < out_w; ++i) {
      for (const auto& [j, w] : wx[i]) {
        for (int k = 0; k < c; ++k) {
          tmp[(static_cast<size_t>(y) * out_w + i) * c + k] += w * image.Row(y)[j * c + k];
        }
      }
    }
  }
  Image out;
  out.Resize(out_w, out_h, c);
  for (int v = 0; v < out_h; ++v) {
    for (int i = 0; i < out_w; ++i) {
      for (int k = 0; k < c; ++k) {
        double s = 0;
        for (const auto& [j, w] : wy[v]) s += w * tmp[(static_cast<size_t>(j) * out_w + i) * c + k];
        out.Row(v)[i * c + k] = Clamp8(s);
      }
    }
  }
  return out;
}

}  // namespace flowloader::decode::testing
