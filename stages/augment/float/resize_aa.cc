// resize_aa.cc: ResizeAntialias (float_ops.h), ATen 1.13's _upsample_bilinear2d_aa and
// _upsample_bicubic2d_aa on the CPU: a separable resample whose filter support grows
// with the downscaling ratio (as PIL's), the width pass first into a T buffer, then the
// height pass, each only where that side changes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

// Filter: aa_filter of HelperInterpLinear (triangle) and HelperInterpCubic (Keys,
// a = -0.5).
template <typename T>
T Filter(Mode mode, T x) {
  x = std::abs(x);
  if (mode == Mode::kBilinear) return x < T(1) ? T(1) - x : T(0);
  const T a = static_cast<T>(-0.5);
  if (x < T(1)) return ((a + T(2)) * x - (a + T(3))) * x * x + T(1);
  if (x < T(2)) return ((a * x - T(5) * a) * x + T(8) * a) * x - T(4) * a;
  return T(0);
}

// AxisWeights: for each output index its first source index, count and weights
// (_compute_weights_aa), `span` weights per output.
template <typename T>
struct AxisWeights {
  int span = 0;
  std::vector<int> first, count;
  std::vector<T> w;
};

template <typename T>
AxisWeights<T> Weights(Mode mode, int in, int out) {
  const int interp = mode == Mode::kBilinear ? 2 : 4;
  const T scale = static_cast<T>(in) / static_cast<T>(out);
  const T support = scale >= T(1) ? static_cast<T>(interp * 0.5) * scale
                                  : static_cast<T>(interp * 0.5);
  AxisWeights<T> a;
  a.span = static_cast<int>(std::ceil(support)) * 2 + 1;
  a.first.resize(out);
  a.count.resize(out);
  a.w.assign(static_cast<size_t>(out) * a.span, T(0));
  const T invscale = scale >= T(1) ? T(1) / scale : T(1);
  for (int i = 0; i < out; ++i) {
    const T center = static_cast<T>(scale * (i + 0.5));
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - lo;
    T* w = &a.w[static_cast<size_t>(i) * a.span];
    T total = T(0);
    for (int64_t j = 0; j < n; ++j) {
      w[j] = Filter(mode, static_cast<T>((static_cast<T>(j + lo) - center + 0.5) * invscale));
      total += w[j];
    }
    for (int64_t j = 0; j < n && total != T(0); ++j) w[j] /= total;
    a.first[i] = static_cast<int>(lo);
    a.count[i] = static_cast<int>(n);
  }
  return a;
}

// RowPass resamples every row of `in` into dense rows of out_len (the width pass).
template <typename T>
void RowPass(const Chw<const T>& in, T* out, int out_len, const AxisWeights<T>& a) {
  for (int l = 0; l < in.channels * in.height; ++l) {
    const T* src = in.Row(l / in.height, l % in.height);
    T* dst = out + static_cast<size_t>(out_len) * l;
    for (int i = 0; i < out_len; ++i) {
      const T* w = &a.w[static_cast<size_t>(i) * a.span];
      const T* s = src + a.first[i];
      T v = a.count[i] > 0 ? s[0] * w[0] : T(0);
      for (int j = 1; j < a.count[i]; ++j) v += s[j] * w[j];
      dst[i] = v;
    }
  }
}

}  // namespace

template <typename T>
void ResizeAntialias(const Chw<const T>& in, const Chw<T>& out, Mode mode) {
  // The width pass (into `mid`, in's height × out's width), then the height pass.
  std::vector<T> mid;
  if (in.width == out.width) {  // The height pass reads in's rows: dense first.
    mid.resize(in.Size());
    for (int c = 0; c < in.channels; ++c) {
      for (int y = 0; y < in.height; ++y) {
        std::memcpy(&mid[(static_cast<size_t>(c) * in.height + y) * in.width], in.Row(c, y),
                    sizeof(T) * in.width);
      }
    }
    if (in.height == out.height) {
      std::memcpy(out.data, mid.data(), sizeof(T) * in.Size());
      return;
    }
  } else {
    const AxisWeights<T> a = Weights<T>(mode, in.width, out.width);
    const bool last = in.height == out.height;
    if (!last) mid.resize(static_cast<size_t>(in.channels) * in.height * out.width);
    RowPass<T>(in, last ? out.data : mid.data(), out.width, a);
    if (last) return;
  }
  const T* src = mid.data();
  // The height pass row by row (each output row a weighted sum of source rows, in
  // ATen's order), so that it runs along memory.
  const AxisWeights<T> a = Weights<T>(mode, in.height, out.height);
  const size_t plane_in = static_cast<size_t>(in.height) * out.width;
  const int w = out.width;
  for (int c = 0; c < out.channels; ++c) {
    const T* plane = src + plane_in * c;
    for (int i = 0; i < out.height; ++i) {
      const T* wt = &a.w[static_cast<size_t>(i) * a.span];
      T* dst = out.Row(c, i);
      if (a.count[i] == 0) {
        std::fill(dst, dst + w, T(0));
        continue;
      }
      const T* s0 = plane + static_cast<size_t>(a.first[i]) * w;
      for (int x = 0; x < w; ++x) dst[x] = s0[x] * wt[0];
      for (int j = 1; j < a.count[i]; ++j) {
        const T* sj = s0 + static_cast<size_t>(j) * w;
        for (int x = 0; x < w; ++x) dst[x] += sj[x] * wt[j];
      }
    }
  }
}

template void ResizeAntialias<float>(const Chw<const float>&, const Chw<float>&, Mode);
template void ResizeAntialias<double>(const Chw<const double>&, const Chw<double>&, Mode);

}  // namespace flowloader::augment::floats
