// resize.cc: Resize (float_ops.h), ATen 1.13's CPU upsample kernels for
// interpolate(align_corners=False): per axis, each output index has source indices and
// weights (from a source index in double, rounded to T, as ATen's), and the output is
// the height weights over the width interpolations, summed in that order, in T.
#include <pmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

// Taps is one axis: for output index i, taps n indices idx[i * n + k] and weights.
template <typename T>
struct Taps {
  int n = 1;
  std::vector<int> idx;
  std::vector<T> w;
};

// NearestTaps: ATen's nearest_idx (legacy "nearest").
template <typename T>
Taps<T> NearestTaps(int in, int out) {
  Taps<T> t;
  t.idx.resize(out);
  t.w.assign(out, T(1));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int i = 0; i < out; ++i) {
    if (out == in) {
      t.idx[i] = i;
    } else if (out == 2 * in) {
      t.idx[i] = i >> 1;
    } else {
      const int64_t s = static_cast<int64_t>(std::floor(static_cast<float>(i) * scale));
      t.idx[i] = static_cast<int>(std::min<int64_t>(s, in - 1));
    }
  }
  return t;
}

// SourceIndex: area_pixel_compute_source_index, align_corners=False, of T's scale but
// in double, as ATen 1.13's CPU kernels have it (`dst_index + 0.5` is a double, and its
// linear weights are `real - index0` of that double, rounded to T once): in float, an
// index near 900 is an ulp (6e-5) coarse, which put a bilinear 900 -> 224 resize 4e-5 from
// torch's; this way it is within an ulp of the output (torch fuses multiply-adds).
template <typename T>
double SourceIndex(T scale, int i, bool cubic) {
  const double src = static_cast<double>(scale) * (i + 0.5) - 0.5;
  return (!cubic && src < 0) ? 0.0 : src;
}

// LinearTaps: compute_source_index_and_lambda (guard_index_and_lambda).
template <typename T>
Taps<T> LinearTaps(int in, int out) {
  Taps<T> t;
  t.n = 2;
  t.idx.resize(2 * out);
  t.w.resize(2 * out);
  const T scale = static_cast<T>(in) / static_cast<T>(out);
  for (int i = 0; i < out; ++i) {
    int i0 = i;
    T l1 = T(0);
    if (in != out) {
      const double real = SourceIndex(scale, i, false);
      i0 = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(std::floor(real)), in - 1));
      l1 = static_cast<T>(std::min(std::max(real - i0, 0.0), 1.0));
    }
    t.idx[2 * i] = i0;
    t.idx[2 * i + 1] = i0 + (i0 < in - 1 ? 1 : 0);
    t.w[2 * i] = T(1) - l1;
    t.w[2 * i + 1] = l1;
  }
  return t;
}

template <typename T>
T CubicConvolution1(T x, T a) {
  return ((a + T(2)) * x - (a + T(3))) * x * x + T(1);
}

template <typename T>
T CubicConvolution2(T x, T a) {
  return ((a * x - T(5) * a) * x + T(8) * a) * x - T(4) * a;
}

// CubicTaps: HelperInterpCubic (A = -0.75, indices clamped to the image).
template <typename T>
Taps<T> CubicTaps(int in, int out) {
  Taps<T> t;
  t.n = 4;
  t.idx.resize(4 * out);
  t.w.resize(4 * out);
  const T scale = static_cast<T>(in) / static_cast<T>(out);
  const T a = static_cast<T>(-0.75);
  for (int i = 0; i < out; ++i) {
    const double real = SourceIndex(scale, i, true);
    const int64_t i0 = static_cast<int64_t>(std::floor(real));
    const T f = static_cast<T>(real - static_cast<double>(i0));
    const T x2 = T(1) - f;
    T* w = &t.w[4 * i];
    w[0] = CubicConvolution2(static_cast<T>(f + T(1)), a);
    w[1] = CubicConvolution1(f, a);
    w[2] = CubicConvolution1(x2, a);
    w[3] = CubicConvolution2(static_cast<T>(x2 + T(1)), a);
    for (int k = 0; k < 4; ++k) {
      t.idx[4 * i + k] = static_cast<int>(std::min<int64_t>(std::max<int64_t>(i0 - 1 + k, 0), in - 1));
    }
  }
  return t;
}

template <typename T>
Taps<T> MakeTaps(Mode mode, int in, int out) {
  switch (mode) {
    case Mode::kNearest:
      return NearestTaps<T>(in, out);
    case Mode::kBilinear:
      return LinearTaps<T>(in, out);
    default:
      return CubicTaps<T>(in, out);
  }
}

// WidthPassOf is the width interpolation of source row `row` at every output column (the
// inner sums of ATen's kernel: row[idx[0]] * w[0] + row[idx[1]] * w[1] + ...), N taps.
template <typename T, int N>
void WidthPassOf(const T* row, const Taps<T>& xt, int out_w, T* dst) {
  const int* idx = xt.idx.data();
  const T* w = xt.w.data();
  for (int x = 0; x < out_w; ++x, idx += N, w += N) {
    T v = row[idx[0]] * w[0];
    for (int k = 1; k < N; ++k) v += row[idx[k]] * w[k];
    dst[x] = v;
  }
}


// FusedRowOf is one output row straight from its N source rows r[k] (height weights wy):
// at each output column the width taps' indices and weights are read once for all N
// rows, and the sums are WidthPass's and Resize's, in the same order (the same bits).
// Columns [from, out_w) (the vector path below does the ones before).
template <typename T, int N>
void FusedRowOf(const T* const* r, const T* wy, const Taps<T>& xt, int from, int out_w,
                T* dst) {
  const int* idx = xt.idx.data() + static_cast<size_t>(from) * N;
  const T* w = xt.w.data() + static_cast<size_t>(from) * N;
  for (int x = from; x < out_w; ++x, idx += N, w += N) {
    T acc = T(0);
    for (int k = 0; k < N; ++k) {
      const T* row = r[k];
      T v = row[idx[0]] * w[0];
      for (int j = 1; j < N; ++j) v += row[idx[j]] * w[j];
      acc = k == 0 ? v * wy[0] : acc + v * wy[k];
    }
    dst[x] = acc;
  }
}

// PairedColumns is how many leading output columns (a multiple of 4) read two adjacent
// source columns (idx[1] = idx[0] + 1, as all but the last few of a bilinear axis do).
int PairedColumns(const Taps<float>& xt, int out_w) {
  int x = 0;
  while (x < out_w && xt.idx[2 * x + 1] == xt.idx[2 * x] + 1) ++x;
  return x & ~3;
}

// FusedRowsBilinear is FusedRowOf<float, 2> for the first `paired` columns, four at a
// time with SSE3: each column's two adjacent source values are one 8-byte load, times
// the interleaved weights (w0, w1) in one multiply, and haddps adds the pair: the same
// products and sums, in the same order, as the scalar code (the same bits).
void FusedRowsBilinear(const float* const* r, const float* wy, const Taps<float>& xt,
                       int paired, float* dst) {
  const int* idx = xt.idx.data();
  const float* w = xt.w.data();
  const __m128 wy0 = _mm_set1_ps(wy[0]), wy1 = _mm_set1_ps(wy[1]);
  for (int x = 0; x < paired; x += 4) {
    const int* i = idx + 2 * x;
    const __m128 w_ab = _mm_loadu_ps(w + 2 * x), w_cd = _mm_loadu_ps(w + 2 * x + 4);
    __m128 v[2];
    for (int k = 0; k < 2; ++k) {
      const float* row = r[k];
      __m128 ab = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(row + i[0]));
      ab = _mm_loadh_pi(ab, reinterpret_cast<const __m64*>(row + i[2]));
      __m128 cd = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(row + i[4]));
      cd = _mm_loadh_pi(cd, reinterpret_cast<const __m64*>(row + i[6]));
      v[k] = _mm_hadd_ps(_mm_mul_ps(ab, w_ab), _mm_mul_ps(cd, w_cd));
    }
    _mm_storeu_ps(dst + x, _mm_add_ps(_mm_mul_ps(v[0], wy0), _mm_mul_ps(v[1], wy1)));
  }
}

// WidthPass interpolates source row `row` at every output column: the first `paired`
// columns four at a time as FusedRowsBilinear does (float, bilinear), the rest scalar.
template <typename T>
void WidthPass(const T* row, const Taps<T>& xt, int paired, int out_w, T* dst) {
  if (xt.n == 4) return WidthPassOf<T, 4>(row, xt, out_w, dst);
  if constexpr (std::is_same_v<T, float>) {
    const int* i = xt.idx.data();
    const float* w = xt.w.data();
    for (int x = 0; x < paired; x += 4, i += 8, w += 8) {
      __m128 ab = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(row + i[0]));
      ab = _mm_loadh_pi(ab, reinterpret_cast<const __m64*>(row + i[2]));
      __m128 cd = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(row + i[4]));
      cd = _mm_loadh_pi(cd, reinterpret_cast<const __m64*>(row + i[6]));
      _mm_storeu_ps(dst + x, _mm_hadd_ps(_mm_mul_ps(ab, _mm_loadu_ps(w)),
                                         _mm_mul_ps(cd, _mm_loadu_ps(w + 4))));
    }
    const int* idx = xt.idx.data() + 2 * paired;
    const float* wt = xt.w.data() + 2 * paired;
    for (int x = paired; x < out_w; ++x, idx += 2, wt += 2) {
      float v = row[idx[0]] * wt[0];
      v += row[idx[1]] * wt[1];
      dst[x] = v;
    }
  } else {
    WidthPassOf<T, 2>(row, xt, out_w, dst);
  }
}

// FusedRows is FusedRowOf over the whole row: the vector path where it applies.
template <typename T>
void FusedRows(const T* const* r, const T* wy, const Taps<T>& xt, int n, int paired,
               int out_w, T* dst) {
  if (n == 2) {
    int from = 0;
    if constexpr (std::is_same_v<T, float>) {
      FusedRowsBilinear(r, wy, xt, paired, dst);
      from = paired;
    }
    FusedRowOf<T, 2>(r, wy, xt, from, out_w, dst);
  } else {
    FusedRowOf<T, 4>(r, wy, xt, 0, out_w, dst);
  }
}

}  // namespace

// Each source row a height tap reads is interpolated along the width once (into
// `rows`); each output row is then its taps' rows times their weights, summed in ATen's
// order: the same arithmetic as ATen's per-pixel loop, done row by row.
template <typename T>
void Resize(const Chw<const T>& in, const Chw<T>& out, Mode mode) {
  const Taps<T> xt = MakeTaps<T>(mode, in.width, out.width);
  const Taps<T> yt = MakeTaps<T>(mode, in.height, out.height);
  const int w = out.width;
  if (mode == Mode::kNearest) {  // One tap: the value itself.
    for (int c = 0; c < out.channels; ++c) {
      for (int y = 0; y < out.height; ++y) {
        const T* row = in.Row(c, yt.idx[y]);
        T* dst = out.Row(c, y);
        for (int x = 0; x < w; ++x) dst[x] = row[xt.idx[x]];
      }
    }
    return;
  }
  // Shrinking the height by the taps' count or more, no two output rows share a source
  // row: each output row is made from its source rows in one pass (FusedRowOf), without
  // the interpolated rows' stores and loads; float bilinear columns go four at a time
  // (FusedRowsBilinear). Measured 1024² -> 256² bilinear float32, one core, CPU time,
  // load ~7: 290 µs before (rows one by one, scalar), 225 fused, 108 with the vector
  // columns; torch 1.13 250. 800x900 -> 224²: 224, 173, 90; torch 188.
  int paired = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (xt.n == 2) paired = PairedColumns(xt, w);
  }
  if (static_cast<int64_t>(yt.n) * out.height <= in.height) {
    for (int c = 0; c < out.channels; ++c) {
      for (int y = 0; y < out.height; ++y) {
        const int* ys = &yt.idx[static_cast<size_t>(y) * yt.n];
        const T* r[4];
        for (int k = 0; k < yt.n; ++k) r[k] = in.Row(c, ys[k]);
        FusedRows(r, &yt.w[static_cast<size_t>(y) * yt.n], xt, yt.n, paired, w,
                  out.Row(c, y));
      }
    }
    return;
  }
  // A ring of interpolated rows: an output row's taps lie within yt.n consecutive source
  // rows, which never move back, so a row leaves the ring after its last use.
  const int ring = yt.n;
  std::vector<T> rows(static_cast<size_t>(ring) * w);
  std::vector<int> held(ring);
  for (int c = 0; c < out.channels; ++c) {
    std::fill(held.begin(), held.end(), -1);
    for (int y = 0; y < out.height; ++y) {
      const int* ys = &yt.idx[static_cast<size_t>(y) * yt.n];
      const T* wy = &yt.w[static_cast<size_t>(y) * yt.n];
      const T* r[4];
      for (int k = 0; k < yt.n; ++k) {
        const int slot = ys[k] % ring;
        T* buffer = &rows[static_cast<size_t>(slot) * w];
        if (held[slot] != ys[k]) {
          WidthPass(in.Row(c, ys[k]), xt, paired, w, buffer);
          held[slot] = ys[k];
        }
        r[k] = buffer;
      }
      T* dst = out.Row(c, y);
      for (int x = 0; x < w; ++x) dst[x] = r[0][x] * wy[0];
      for (int k = 1; k < yt.n; ++k) {
        const T* rk = r[k];
        const T wk = wy[k];
        for (int x = 0; x < w; ++x) dst[x] += rk[x] * wk;
      }
    }
  }
}

template void Resize<float>(const Chw<const float>&, const Chw<float>&, Mode);
template void Resize<double>(const Chw<const double>&, const Chw<double>&, Mode);

}  // namespace flowloader::augment::floats
