// resample_ycc.cc: see resample_ycc.h.
//
// Thread-safety: all mutable state is in the thread_local YccScratch below.
#include "stages/augment/internal/resample_ycc.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

// Compiled here for the SSE4.1 baseline (ColourFloat<Sse41>); VerticalRow and the
// vertical kernels come from resample.cc through ActiveKernels().
#include "stages/augment/internal/colour_kernels.h"
#include "stages/augment/internal/plane_kernels.h"
#include "stages/augment/internal/resample_kernels.h"

namespace flowloader::augment::internal {
namespace {

// PlaneFilter is one plane's filters and tap tables (Cb and Cr share one: same geometry).
struct PlaneFilter {
  AxisFilter fx, fy;
  FilterKey key_x, key_y;
  bool have_x = false;
  bool have_y = false;
  std::vector<int32_t> wy_pairs;  // QuantizeVerticalPairs of fy.
  int pairs_y = 0;
  // Horizontal taps (plane_kernels.h): first relative to fx.lo, weights scaled by
  // 2^-kVerticalBits to undo the vertical pass's fixed point.
  std::vector<int> first;
  std::vector<float> weights;
  std::vector<uint8_t> fits;
  std::vector<int> base;
  std::vector<int32_t> lanes;
  std::vector<float> group_weights;
  PlaneTaps taps;
};

struct YccScratch {
  PlaneFilter filter[3];
  std::vector<float> row[3];  // One vertically filtered row, plus the kernel's overread.
  std::vector<float> out[3];  // One horizontally filtered row (out_size values).
  std::vector<const uint8_t*> rows;
};

YccScratch& ThreadYccScratch() {
  thread_local YccScratch scratch;
  return scratch;
}

// LayoutPlaneTaps fills the horizontal tables from p->fx.
void LayoutPlaneTaps(PlaneFilter* p) {
  const AxisFilter& f = p->fx;
  const int n = f.out_size;
  const int taps = f.taps;
  const float unscale = 1.0f / (1 << kVerticalBits);
  p->first.resize(n);
  for (int x = 0; x < n; ++x) p->first[x] = f.first[x] - f.lo;
  p->weights.resize(f.weights.size());
  for (size_t i = 0; i < f.weights.size(); ++i) p->weights[i] = f.weights[i] * unscale;
  const int groups = n / kPlaneGroup;
  p->fits.assign(groups, 0);
  p->base.assign(groups, 0);
  p->lanes.assign(static_cast<size_t>(groups) * kPlaneGroup, 0);
  p->group_weights.assign(static_cast<size_t>(groups) * taps * kPlaneGroup, 0.0f);
  for (int g = 0; g < groups; ++g) {
    const int* first = &p->first[static_cast<size_t>(g) * kPlaneGroup];
    int lo = first[0];
    int hi = first[0] + taps;
    for (int l = 1; l < kPlaneGroup; ++l) {
      lo = std::min(lo, first[l]);
      hi = std::max(hi, first[l] + taps);
    }
    p->fits[g] = hi - lo <= 32 ? 1 : hi - lo <= kPlaneGroupSpan ? 2 : 0;
    p->base[g] = lo;
    for (int l = 0; l < kPlaneGroup; ++l) {
      const int x = g * kPlaneGroup + l;
      p->lanes[x] = first[l] - lo;
      for (int k = 0; k < taps; ++k) {
        p->group_weights[(static_cast<size_t>(g) * taps + k) * kPlaneGroup + l] =
            p->weights[static_cast<size_t>(x) * taps + k];
      }
    }
  }
  PlaneTaps& t = p->taps;
  t.n = n;
  t.taps = taps;
  t.first = p->first.data();
  t.weights = p->weights.data();
  t.fits = p->fits.data();
  t.base = p->base.data();
  t.lanes = p->lanes.data();
  t.group_weights = p->group_weights.data();
}

// Prepare builds (or keeps) one plane's filters.
void Prepare(const PlaneSpec& spec, int n, PlaneFilter* p) {
  const FilterKey key_x{spec.box.x, spec.box.w, n, spec.win_x0, spec.win_x1};
  if (!p->have_x || !(p->key_x == key_x)) {
    BuildAxisFilter(spec.box.x, spec.box.w, n, spec.win_x0, spec.win_x1, &p->fx);
    LayoutPlaneTaps(p);
    p->key_x = key_x;
    p->have_x = true;
  }
  const FilterKey key_y{spec.box.y, spec.box.h, n, spec.win_y0, spec.win_y1};
  if (!p->have_y || !(p->key_y == key_y)) {
    BuildAxisFilter(spec.box.y, spec.box.h, n, spec.win_y0, spec.win_y1, &p->fy);
    QuantizeVerticalPairs(p->fy, &p->wy_pairs, &p->pairs_y);
    p->key_y = key_y;
    p->have_y = true;
  }
}

bool SameGeometry(const PlaneSpec& a, const PlaneSpec& b) {
  return a.box.x == b.box.x && a.box.y == b.box.y && a.box.w == b.box.w &&
         a.box.h == b.box.h && a.win_x0 == b.win_x0 && a.win_x1 == b.win_x1 &&
         a.win_y0 == b.win_y0 && a.win_y1 == b.win_y1;
}

// HorizontalScalar filters outputs [x0, x1) of one plane row, one at a time.
void HorizontalScalar(const float* row, const PlaneTaps& t, int x0, int x1, float* out) {
  for (int x = x0; x < x1; ++x) {
    const float* r = row + t.first[x];
    const float* w = t.weights + static_cast<size_t>(x) * t.taps;
    float acc = r[0] * w[0];
    for (int k = 1; k < t.taps; ++k) acc = acc + r[k] * w[k];
    out[x] = acc;
  }
}

// Horizontal filters `count` (1 or 2) plane rows with the same taps (2: Cb and Cr of a
// 4:2:0 or 4:2:2 image, which share one filter): the AVX-512 kernel's groups where it
// runs, HorizontalScalar (the same multiplies and adds in the same order) for the groups
// whose span it does not take and the last outputs. Group by group: a per-output scan
// for the groups the kernel wrote was a third of ResampleYcc's own time.
void Horizontal(const float* const* rows, float* const* outs, int count, const PlaneTaps& t,
                bool avx512) {
  int x = 0;
  if (avx512) {
    if (count == 2) {
      HorizontalPlanesAvx512(rows[0], rows[1], t, outs[0], outs[1]);
    } else {
      HorizontalPlaneAvx512(rows[0], t, outs[0]);
    }
    const int groups = t.n / kPlaneGroup;
    for (int g = 0; g < groups; ++g) {
      if (t.fits[g] != 0) continue;
      for (int r = 0; r < count; ++r) {
        HorizontalScalar(rows[r], t, g * kPlaneGroup, (g + 1) * kPlaneGroup, outs[r]);
      }
    }
    x = groups * kPlaneGroup;
  }
  for (int r = 0; r < count; ++r) HorizontalScalar(rows[r], t, x, t.n, outs[r]);
}

// ToRgbOne is ColourFloat's arithmetic (colour_kernels.h) for one pixel: 8-bit R, G, B
// as floats.
inline void ToRgbOne(float y, float cb, float cr, float rgb[3]) {
  const auto quantize = [](float v) {
    return std::min(std::max(std::floor(v + 0.5f), 0.0f), 255.0f);
  };
  const float b = cb + -128.0f;
  const float r = cr + -128.0f;
  rgb[0] = quantize(y + r * kCrToR);
  rgb[1] = quantize((y + b * kCbToG) + r * kCrToG);
  rgb[2] = quantize(y + b * kCbToB);
}

// ColourToFloat writes one output row as 3 normalized float plane rows: whole registers
// with the widest set in use, the last pixels one at a time.
void ColourToFloat(const ColourJob& j, bool avx512) {
  int x = avx512 ? ColourFloatAvx512(j) : ColourFloat<Sse41>(j);
  float* d[3] = {j.d0, j.d1, j.d2};
  for (; x < j.n; ++x) {
    float rgb[3];
    ToRgbOne(j.y[x], j.cb[x], j.cr[x], rgb);
    const int xo = j.flip ? j.n - 1 - x : x;
    for (int c = 0; c < 3; ++c) d[c][xo] = rgb[c] * j.scale[c] + j.offset[c];
  }
}

// QuantizeToInt is Quantize<Sse41> (colour_kernels.h) as 32-bit integers: exact, the
// values being whole numbers in [0, 255].
inline __m128i QuantizeToInt(__m128 v) { return _mm_cvttps_epi32(Quantize<Sse41>(v)); }

}  // namespace

void ColourRowToUint8(const float* y, const float* cb, const float* cr, int n, bool flip,
                      bool avx512, uint8_t* d) {
  int x = 0;
  if (avx512) {
    x = ColourUint8Avx512(ColourJob{y, cb, cr, n, flip, nullptr, nullptr, nullptr, nullptr,
                                    nullptr},
                          d);
  }
  const __m128 minus128 = _mm_set1_ps(-128.0f);
  for (; x + 16 <= n; x += 16) {
    __m128i ri[4], gi[4], bi[4];
    for (int q = 0; q < 4; ++q) {  // ToRgbOne's operations, 4 pixels at a time.
      const __m128 yv = _mm_loadu_ps(y + x + 4 * q);
      const __m128 b = _mm_add_ps(_mm_loadu_ps(cb + x + 4 * q), minus128);
      const __m128 r = _mm_add_ps(_mm_loadu_ps(cr + x + 4 * q), minus128);
      ri[q] = QuantizeToInt(_mm_add_ps(yv, _mm_mul_ps(r, _mm_set1_ps(kCrToR))));
      gi[q] = QuantizeToInt(_mm_add_ps(_mm_add_ps(yv, _mm_mul_ps(b, _mm_set1_ps(kCbToG))),
                                       _mm_mul_ps(r, _mm_set1_ps(kCrToG))));
      bi[q] = QuantizeToInt(_mm_add_ps(yv, _mm_mul_ps(b, _mm_set1_ps(kCbToB))));
    }
    const auto pack = [](const __m128i* v) {
      return _mm_packus_epi16(_mm_packs_epi32(v[0], v[1]), _mm_packs_epi32(v[2], v[3]));
    };
    StoreRgb16(pack(ri), pack(gi), pack(bi), x, n, flip, d);
  }
  for (; x < n; ++x) {
    float rgb[3];
    ToRgbOne(y[x], cb[x], cr[x], rgb);
    uint8_t* o = d + 3 * (flip ? n - 1 - x : x);
    for (int c = 0; c < 3; ++c) o[c] = static_cast<uint8_t>(rgb[c]);
  }
}

bool YccResampleIsFast() { return ActiveResampleIsa() == ResampleIsa::kAvx512; }

void ResampleYcc(const YccSpec& spec, const OutputSpec& out) {
  YccScratch& s = ThreadYccScratch();
  const int n = spec.out_size;
  const Kernels& kernels = ActiveKernels();
  const bool avx512 = ActiveResampleIsa() == ResampleIsa::kAvx512;
  const PlaneFilter* filter[3];
  VerticalFn vertical[3];
  int max_pairs = 0;
  for (int p = 0; p < 3; ++p) {
    if (p == 2 && SameGeometry(spec.planes[2], spec.planes[1])) {
      filter[2] = filter[1];
    } else {
      Prepare(spec.planes[p], n, &s.filter[p]);
      filter[p] = &s.filter[p];
    }
    vertical[p] = kernels.vertical(filter[p]->pairs_y);
    max_pairs = std::max(max_pairs, filter[p]->pairs_y);
    const size_t values = static_cast<size_t>(filter[p]->fx.hi - filter[p]->fx.lo);
    if (s.row[p].size() < values + kPlaneGroupSpan) s.row[p].resize(values + kPlaneGroupSpan);
    if (s.out[p].size() < static_cast<size_t>(n)) s.out[p].resize(n);
  }
  if (s.rows.size() < static_cast<size_t>(2 * max_pairs)) s.rows.resize(2 * max_pairs);

  const size_t plane_size = static_cast<size_t>(n) * n;
  float* const fdst = static_cast<float*>(out.dst);
  const bool float_out = out.kind == OutputSpec::Kind::kFloatCHW;
  for (int y = 0; y < n; ++y) {
    for (int p = 0; p < 3; ++p) {
      const PlaneFilter& f = *filter[p];
      const ImageView& src = spec.planes[p].src;
      VerticalRow(vertical[p], src.data + f.fx.lo, src.stride, f.fy.first[y], f.fy.taps,
                  &f.wy_pairs[static_cast<size_t>(y) * f.pairs_y], f.pairs_y,
                  f.fx.hi - f.fx.lo, s.rows.data(), s.row[p].data());
      if (p == 1 && filter[2] == filter[1]) continue;  // With Cr, below.
      const int first = p == 2 && filter[2] == filter[1] ? 1 : p;
      const float* rows[2] = {s.row[first].data(), s.row[2].data()};
      float* outs[2] = {s.out[first].data(), s.out[2].data()};
      Horizontal(rows, outs, p - first + 1, f.taps, avx512);
    }
    const float* yr = s.out[0].data();
    const float* cb = s.out[1].data();
    const float* cr = s.out[2].data();
    if (float_out) {
      float* d0 = fdst + static_cast<size_t>(y) * n;
      ColourToFloat(ColourJob{yr, cb, cr, n, spec.flip, out.scale, out.offset, d0,
                              d0 + plane_size, d0 + 2 * plane_size},
                    avx512);
    } else {
      ColourRowToUint8(yr, cb, cr, n, spec.flip, avx512,
                    static_cast<uint8_t*>(out.dst) + static_cast<size_t>(y) * n * 3);
    }
  }
  // Non-temporal stores are weakly ordered: fence them before whatever tells another
  // thread the sample is written.
  _mm_sfence();
}

}  // namespace flowloader::augment::internal
