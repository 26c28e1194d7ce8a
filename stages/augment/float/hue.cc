// hue.cc: AdjustHue (float_ops.h), torchvision's _rgb2hsv, the hue shift
// `(h + hue_factor) % 1.0` (torch's remainder) and _hsv2rgb, per pixel, each step in T
// as the tensor code rounds it.
#include <algorithm>
#include <cmath>

#include "stages/augment/float/float_ops.h"

namespace flowloader::augment::floats {
namespace {

// Hsv is _rgb2hsv of one pixel: (h, s, v).
template <typename T>
void ToHsv(T r, T g, T b, T* h, T* s, T* v) {
  const T maxc = std::max(r, std::max(g, b));
  const T minc = std::min(r, std::min(g, b));
  const bool eqc = maxc == minc;
  const T cr = maxc - minc;
  *s = cr / (eqc ? T(1) : maxc);
  const T divisor = eqc ? T(1) : cr;
  const T rc = (maxc - r) / divisor;
  const T gc = (maxc - g) / divisor;
  const T bc = (maxc - b) / divisor;
  const T hr = maxc == r ? T(bc - gc) : T(0);
  const T hg = (maxc == g && maxc != r) ? T(T(T(2) + rc) - bc) : T(0);
  const T hb = (maxc != g && maxc != r) ? T(T(T(4) + gc) - rc) : T(0);
  const T sum = T(hr + hg) + hb;
  *h = std::fmod(T(T(sum / T(6)) + T(1)), T(1));
  *v = maxc;
}

// Remainder1 is torch.remainder(a, 1.0): fmod, moved into [0, 1) when negative.
template <typename T>
T Remainder1(T a) {
  T m = std::fmod(a, T(1));
  if (m != T(0) && m < T(0)) m += T(1);
  return m;
}

// ToRgb is _hsv2rgb of one pixel (its sector's (v, t, p) choice, as the mask picks it).
template <typename T>
void ToRgb(T h, T s, T v, T* r, T* g, T* b) {
  const T h6 = h * T(6);
  const T fi = std::floor(h6);
  const T f = h6 - fi;
  const int i = static_cast<int>(fi) % 6;
  const T p = Clamp01(T(v * T(T(1) - s)));
  const T q = Clamp01(T(v * T(T(1) - T(s * f))));
  const T t = Clamp01(T(v * T(T(1) - T(s * T(T(1) - f)))));
  switch (i < 0 ? i + 6 : i) {
    case 0: *r = v, *g = t, *b = p; break;
    case 1: *r = q, *g = v, *b = p; break;
    case 2: *r = p, *g = v, *b = t; break;
    case 3: *r = p, *g = q, *b = v; break;
    case 4: *r = t, *g = p, *b = v; break;
    default: *r = v, *g = p, *b = q; break;
  }
}

}  // namespace

template <typename T>
void AdjustHue(const Chw<const T>& in, const Chw<T>& out, double hue_factor) {
  const T shift = static_cast<T>(hue_factor);
  const T *r = in.Channel(0), *g = in.Channel(1), *b = in.Channel(2);
  T *ro = out.Channel(0), *go = out.Channel(1), *bo = out.Channel(2);
  const size_t n = in.Plane();
  for (size_t i = 0; i < n; ++i) {
    T h, s, v;
    ToHsv(r[i], g[i], b[i], &h, &s, &v);
    ToRgb(Remainder1(T(h + shift)), s, v, &ro[i], &go[i], &bo[i]);
  }
}

template void AdjustHue<float>(const Chw<const float>&, const Chw<float>&, double);
template void AdjustHue<double>(const Chw<const double>&, const Chw<double>&, double);

}  // namespace flowloader::augment::floats
