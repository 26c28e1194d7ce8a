// pil_rows.cc: PIL rows through gather maps (pil_rows.h).
//
// Speed: the common maps get straight loops; a row read in order is 4 pixels at a time
// (RGBX <-> RGB with pshufb, SSSE3 being in the build's x86-64-v2 baseline), a reversed
// row (a horizontal flip) 4 pixels at a time reversed with pshufd, and any other map a
// per-pixel gather.
#include "python/internal/pil_rows.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wuninitialized in their own lines (as in
// stages/augment/ops/kernels/colour_internal.h): quiet for those lines only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include "stages/core/cpu.h"

namespace flowloader::python_internal::pil_rows {
namespace {

// How a map of source indices reads its row.
enum class Order { kForward, kReversed, kOther };

bool HasFill(const std::vector<int>& map) {
  for (int v : map) {
    if (v < 0) return true;
  }
  return false;
}

// OrderOf: kForward where map[k] == map[0] + k, kReversed where map[k] == map[0] - k
// (no fill in either), else kOther.
Order OrderOf(const std::vector<int>& map) {
  if (map.empty() || map[0] < 0) return Order::kOther;
  bool forward = true, reversed = true;
  for (size_t k = 0; k < map.size() && (forward || reversed); ++k) {
    forward = forward && map[k] == map[0] + static_cast<int>(k);
    reversed = reversed && map[k] == map[0] - static_cast<int>(k);
  }
  return forward ? Order::kForward : reversed ? Order::kReversed : Order::kOther;
}

// RgbxToRgb: n pixels of 4 bytes to n of 3.
void RgbxToRgb(const uint8_t* s, uint8_t* d, int n) {
  int x = 0;
#if defined(__SSSE3__)
  const __m128i pack = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  // 16 bytes are stored for 12: stop while 6 pixels (18 bytes) of room remain.
  for (; x + 6 <= n; x += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 4 * x));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * x), _mm_shuffle_epi8(v, pack));
  }
#endif
  for (; x < n; ++x) {
    d[3 * x] = s[4 * x];
    d[3 * x + 1] = s[4 * x + 1];
    d[3 * x + 2] = s[4 * x + 2];
  }
}

// RgbToRgbx: n pixels of 3 bytes to n of 4 (the fourth 255, as Pillow writes it).
void RgbToRgbx(const uint8_t* s, uint8_t* d, int n) {
  int x = 0;
#if defined(__SSSE3__)
  const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m128i alpha = _mm_set1_epi32(static_cast<int>(0xFF000000u));
  // 16 bytes are loaded for 12: stop while 6 pixels (18 bytes) of input remain.
  for (; x + 6 <= n; x += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 3 * x));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 4 * x),
                     _mm_or_si128(_mm_shuffle_epi8(v, spread), alpha));
  }
#endif
  for (; x < n; ++x) {
    d[4 * x] = s[3 * x];
    d[4 * x + 1] = s[3 * x + 1];
    d[4 * x + 2] = s[3 * x + 2];
    d[4 * x + 3] = 255;
  }
}

// ReverseWords: d[x] = s[-x] for n 4-byte pixels (s points at the first one read).
void ReverseWords(const uint8_t* s, uint8_t* d, int n) {
  int x = 0;
#if defined(__SSSE3__)
  for (; x + 4 <= n; x += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s - 4 * (x + 3)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 4 * x), _mm_shuffle_epi32(v, 0x1B));
  }
#endif
  for (; x < n; ++x) std::memcpy(d + 4 * x, s - 4 * x, 4);
}

}  // namespace

Maps BoxMaps(int left, int top, int width, int height) {
  Maps m;
  m.g.x_src.resize(width);
  for (int x = 0; x < width; ++x) m.g.x_src[x] = left + x;
  m.g.y_src.resize(height);
  for (int y = 0; y < height; ++y) m.g.y_src[y] = top + y;
  return m;
}

Maps WholeThen(augment::GatherMaps&& next, int width, int height) {
  Maps m;
  m.g = std::move(next);
  // One pass per map: indices outside the image become the fill (branch-free, so it
  // vectorizes; a 224-wide map is a few dozen steps).
  const auto clamp = [](std::vector<int>& map, int n) {
    int outside = 0;
    for (int& v : map) {
      const int out = static_cast<int>(static_cast<unsigned>(v) >= static_cast<unsigned>(n));
      outside |= out;
      v = out ? -1 : v;
    }
    return outside != 0;
  };
  const bool fx = clamp(m.g.x_src, width);
  const bool fy = clamp(m.g.y_src, height);
  m.filled = fx || fy;
  return m;
}

bool Then(Maps& acc, const augment::GatherMaps& next) {
  const bool next_fills = HasFill(next.x_src) || HasFill(next.y_src);
  if (acc.filled && next_fills && acc.g.fill != next.fill) return false;
  auto compose = [](const std::vector<int>& inner, const std::vector<int>& outer) {
    std::vector<int> out(outer.size());
    const int n = static_cast<int>(inner.size());
    for (size_t k = 0; k < outer.size(); ++k) {
      out[k] = outer[k] < 0 || outer[k] >= n ? -1 : inner[outer[k]];
    }
    return out;
  };
  std::vector<int> x = compose(acc.g.x_src, next.x_src);
  acc.g.y_src = compose(acc.g.y_src, next.y_src);
  acc.g.x_src = std::move(x);
  if (!acc.filled) acc.g.fill = next.fill;
  acc.filled = acc.filled || next_fills;
  return true;
}

void ReadRows(const uint8_t* const* rows, bool rgb, const Maps& m, Image* dst) {
  const int width = static_cast<int>(m.g.x_src.size());
  const int height = static_cast<int>(m.g.y_src.size());
  dst->Resize(width, height, 3);
  const bool forward = OrderOf(m.g.x_src) == Order::kForward;
  for (int y = 0; y < height; ++y) {
    uint8_t* d = dst->Row(y);
    const int sy = m.g.y_src[y];
    const uint8_t* row = sy >= 0 ? rows[sy] : nullptr;
    if (row != nullptr && forward && rgb) {
      RgbxToRgb(row + 4 * static_cast<size_t>(m.g.x_src[0]), d, width);
      continue;
    }
    for (int x = 0; x < width; ++x, d += 3) {
      const int sx = m.g.x_src[x];
      if (row == nullptr || sx < 0) {
        std::memcpy(d, m.g.fill.data(), 3);
      } else if (rgb) {
        std::memcpy(d, row + 4 * static_cast<size_t>(sx), 3);
      } else {
        d[0] = d[1] = d[2] = row[sx];
      }
    }
  }
}

void WriteRows(const Image& src, const Maps& m, bool rgb, uint8_t* const* rows) {
  const int width = static_cast<int>(m.g.x_src.size());
  const int height = static_cast<int>(m.g.y_src.size());
  const bool forward = OrderOf(m.g.x_src) == Order::kForward;
  const uint8_t fill[4] = {m.g.fill[0], m.g.fill[1], m.g.fill[2], 255};
  for (int y = 0; y < height; ++y) {
    uint8_t* d = rows[y];
    const int sy = m.g.y_src[y];
    const uint8_t* row = sy >= 0 ? src.pixels.data() + static_cast<size_t>(sy) * src.stride()
                                 : nullptr;
    if (row != nullptr && forward && rgb) {
      RgbToRgbx(row + 3 * static_cast<size_t>(m.g.x_src[0]), d, width);
      continue;
    }
    for (int x = 0; x < width; ++x) {
      const int sx = m.g.x_src[x];
      const uint8_t* s = row != nullptr && sx >= 0 ? row + 3 * static_cast<size_t>(sx) : fill;
      if (rgb) {
        std::memcpy(d + 4 * x, s, 3);
        d[4 * x + 3] = 255;
      } else {
        d[x] = s[0];
      }
    }
  }
}

namespace {

// CopyRow writes row y of the PIL rows `dst` from `src` through `m` (`order`: m's x).
void CopyRow(const uint8_t* const* src, bool rgb, const Maps& m, Order order, int y,
             uint8_t* d) {
  const int width = static_cast<int>(m.g.x_src.size());
  const size_t bpp = rgb ? 4 : 1;
  const uint8_t fill[4] = {m.g.fill[0], m.g.fill[1], m.g.fill[2], 255};
  const int sy = m.g.y_src[y];
  const uint8_t* row = sy >= 0 ? src[sy] : nullptr;
  if (row != nullptr && order == Order::kForward) {
    std::memcpy(d, row + bpp * m.g.x_src[0], bpp * width);
  } else if (row != nullptr && order == Order::kReversed && rgb) {
    ReverseWords(row + 4 * static_cast<size_t>(m.g.x_src[0]), d, width);
  } else if (rgb) {
    for (int x = 0; x < width; ++x) {
      const int sx = m.g.x_src[x];
      std::memcpy(d + 4 * x, row != nullptr && sx >= 0 ? row + 4 * static_cast<size_t>(sx)
                                                       : fill, 4);
    }
  } else {
    for (int x = 0; x < width; ++x) {
      const int sx = m.g.x_src[x];
      d[x] = row != nullptr && sx >= 0 ? row[sx] : fill[0];
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// Lookup256 looks 64 bytes up in a 256-entry table held as four 64-entry quarters
// (registers): two 128-entry permutes (vpermt2b, index bits 0..6), picked by the bytes'
// top bit.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline __m512i Lookup256(
    __m512i x, const __m512i (&q)[4]) {
  const __m512i lo = _mm512_permutex2var_epi8(q[0], x, q[1]);
  const __m512i hi = _mm512_permutex2var_epi8(q[2], x, q[3]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi);
}

// LutVbmi maps the first n & ~63 bytes of s into d and returns how many: RGBX pixels
// (`rgbx`: byte j in channel j % 4, the fourth set to 255) or one channel (luts[0]).
// Measured (1024² RandomPosterize, one core, CPU time): see docs/performance.md.
// The tables are loaded into registers once, before the loop: read from `luts` in it,
// GCC reloaded all twelve quarters every 64 bytes (a store to `d` may alias them), which
// made the pass 2.8x slower: 4 MiB of RGBX, one core, 245-265 us -> 75-105 us.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) size_t LutVbmi(
    const uint8_t* s, uint8_t* d, size_t n, bool rgbx, bool same, const Luts& luts) {
  const size_t bulk = n & ~static_cast<size_t>(63);
  const __mmask64 g = 0x2222222222222222ull, b = 0x4444444444444444ull;
  const __m512i x_byte = rgbx ? _mm512_set1_epi32(static_cast<int>(0xFF000000u))
                              : _mm512_setzero_si512();
  __m512i q[3][4];
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 4; ++k) q[c][k] = _mm512_loadu_si512(luts[c] + 64 * k);
  }
  for (size_t i = 0; i < bulk; i += 64) {
    const __m512i x = _mm512_loadu_si512(s + i);
    __m512i v = Lookup256(x, q[0]);
    if (!same) {
      v = _mm512_mask_blend_epi8(g, v, Lookup256(x, q[1]));
      v = _mm512_mask_blend_epi8(b, v, Lookup256(x, q[2]));
    }
    _mm512_storeu_si512(d + i, _mm512_or_si512(v, x_byte));
  }
  return bulk;
}
#endif

// Lut maps n pixels of s into d (may be s) through the tables: RGBX (`rgb`) or one
// channel.
void Lut(const uint8_t* s, uint8_t* d, int n, bool rgb, bool same, const Luts& luts) {
  const size_t bytes = static_cast<size_t>(n) * (rgb ? 4 : 1);
  size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool vbmi = CpuHas(CpuFeature::kAvx512Vbmi) && CpuHas(CpuFeature::kAvx512Bw);
  if (vbmi) i = LutVbmi(s, d, bytes, rgb, same || !rgb, luts);
#endif
  if (!rgb) {
    for (; i < bytes; ++i) d[i] = luts[0][s[i]];
    return;
  }
  for (; i < bytes; i += 4) {
    d[i] = luts[0][s[i]];
    d[i + 1] = luts[1][s[i + 1]];
    d[i + 2] = luts[2][s[i + 2]];
    d[i + 3] = 255;
  }
}

}  // namespace

void CopyRows(const uint8_t* const* src, bool rgb, const Maps& m, uint8_t* const* dst) {
  const Order order = OrderOf(m.g.x_src);
  const int rows = static_cast<int>(m.g.y_src.size());
  if (order == Order::kForward && !m.filled) {
    // A crop or a vertical flip: one memcpy a row (PIL's crop and transpose).
    const size_t bpp = rgb ? 4 : 1;
    const size_t bytes = bpp * m.g.x_src.size();
    const size_t left = bpp * static_cast<size_t>(m.g.x_src[0]);
    for (int y = 0; y < rows; ++y) std::memcpy(dst[y], src[m.g.y_src[y]] + left, bytes);
    return;
  }
  for (int y = 0; y < rows; ++y) CopyRow(src, rgb, m, order, y, dst[y]);
}

namespace {

// CountRow adds n pixels from p (RGBX, or one byte a pixel) to sub-counts (`sub`: 4 x
// 768, channel c at 256 c): an L row into four (pixel k into sub k % 4), an RGBX row
// into sub 0, a byte load a value. On this Zen 5 (AMD EPYC, family 26) a repeated
// value's increments forward from the store at no cost: over a 1024² photo, one core,
// one table 605-615 us, two sub-counts from 4-byte loads 665-695 us, four 755-780 us,
// eight 790-815 us (a flat image: 570 / 560 us), so more tables only add work.
void CountRow(const uint8_t* p, int n, bool rgb, uint32_t* sub) {
  int x = 0;
  if (!rgb) {
    for (; x + 4 <= n; x += 4) {
      ++sub[p[x]];
      ++sub[768 + p[x + 1]];
      ++sub[1536 + p[x + 2]];
      ++sub[2304 + p[x + 3]];
    }
    for (; x < n; ++x) ++sub[p[x]];
    return;
  }
  for (; x < n; ++x, p += 4) {
    ++sub[p[0]];
    ++sub[256 + p[1]];
    ++sub[512 + p[2]];
  }
}

// The pair count: an RGBX image's counts as (R, G) pairs (rg[R + 256 G], 256 KiB, kept by
// the thread) and B values: two increments a pixel instead of three, the pair's two
// values from one 2-byte field. The count is bound by the memory operations (a byte
// load and an increment's load and store per value, about 2 cycles a pixel here), so
// fewer of them pay even with the pair table in L2: 1024² photo, one core, 565-570 us
// against the one table's 605-615 (flat: 400 against 570). Zeroing and summing the
// pair table costs ~15 us, so CountValues takes it from kPairPixels pixels up.
constexpr int64_t kPairPixels = int64_t{1} << 18;

// CountPair adds the two RGBX pixels of `a` to the pair counts `rg` and B counts `b`.
inline void CountPair(uint64_t a, uint32_t* rg, uint32_t* b) {
  ++rg[a & 0xFFFF];
  ++b[(a >> 16) & 255];
  ++rg[(a >> 32) & 0xFFFF];
  ++b[(a >> 48) & 255];
}

// CountPairsRow adds n RGBX pixels from p to the pair counts, two pixels from one 8-byte
// load, each 64-byte line after prefetching the one 2 KiB ahead: with the image evicted
// (caches flushed before each count of a 1024² photo) the pair count took 820-970 us
// against 555-565 warm, the L2's own prefetches falling behind its table traffic; with
// this 575-600 cold, warm unchanged (1 KiB ahead: 650-710 cold).
void CountPairsRow(const uint8_t* p, int n, uint32_t* rg, uint32_t* b) {
  int x = 0;
  for (; x + 16 <= n; x += 16, p += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + 2048));
    for (int k = 0; k < 8; ++k) {
      uint64_t a;
      std::memcpy(&a, p + 8 * k, 8);
      CountPair(a, rg, b);
    }
  }
  for (; x + 2 <= n; x += 2, p += 8) {
    uint64_t a;
    std::memcpy(&a, p, 8);
    CountPair(a, rg, b);
  }
  for (; x < n; ++x, p += 4) {
    ++rg[p[0] | p[1] << 8];
    ++b[p[2]];
  }
}

// AddPairs adds the pairs' marginals to h: R's over each G row, G's the row sums.
void AddPairs(const uint32_t* rg, uint32_t (&h)[3][256]) {
  for (int g = 0; g < 256; ++g) {
    const uint32_t* row = rg + 256 * g;
    uint32_t sum = 0;
    for (int r = 0; r < 256; ++r) {
      h[0][r] += row[r];
      sum += row[r];
    }
    h[1][g] += sum;
  }
}

// Span: the columns [first, first + n) that a row read forward or reversed covers.
bool Span(const Maps& m, int* first) {
  if (m.filled) return false;
  const Order order = OrderOf(m.g.x_src);
  if (order == Order::kOther) return false;
  *first = order == Order::kForward ? m.g.x_src.front() : m.g.x_src.back();
  return true;
}

}  // namespace

void CountValues(const uint8_t* const* rows, bool rgb, const Maps& m, uint32_t (&h)[3][256]) {
  const int n = static_cast<int>(m.g.x_src.size());
  int first = 0;
  const bool span = Span(m, &first);
  if (span && rgb && int64_t{n} * static_cast<int64_t>(m.g.y_src.size()) >= kPairPixels) {
    // The thread's table, its address taken once (in a shared object each use of a
    // thread_local is a __tls_get_addr call: 17% of the count, used per increment).
    thread_local std::vector<uint32_t> pairs;
    pairs.assign(65536, 0);
    uint32_t* rg = pairs.data();
    uint32_t b[256] = {};
    for (int sy : m.g.y_src) CountPairsRow(rows[sy] + 4 * static_cast<size_t>(first), n, rg, b);
    AddPairs(rg, h);
    for (int v = 0; v < 256; ++v) h[2][v] += b[v];
    return;
  }
  std::vector<uint32_t> sub(4 * 768, 0);
  for (int sy : m.g.y_src) {
    const uint8_t* row = rows[sy];
    if (span) {
      CountRow(row + (rgb ? 4 : 1) * static_cast<size_t>(first), n, rgb, sub.data());
      continue;
    }
    for (int sx : m.g.x_src) {  // Any other map: pixel by pixel, into sub 0.
      CountRow(row + (rgb ? 4 : 1) * static_cast<size_t>(sx), 1, rgb, sub.data());
    }
  }
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const int at = rgb ? 256 * c + v : v;
      h[c][v] += sub[at] + sub[768 + at] + sub[1536 + at] + sub[2304 + at];
    }
  }
}

bool Extremes(const uint8_t* const* rows, bool rgb, const Maps& m, int (&lo)[3], int (&hi)[3]) {
  int first = 0;
  if (!Span(m, &first)) return false;
  const size_t bpp = rgb ? 4 : 1;
  const size_t bytes = bpp * m.g.x_src.size();
  uint8_t mins[16], maxs[16];
  std::memset(mins, 255, sizeof(mins));
  std::memset(maxs, 0, sizeof(maxs));
#if defined(__SSE2__)
  __m128i vmin = _mm_set1_epi8(-1), vmax = _mm_setzero_si128();
#endif
  for (int sy : m.g.y_src) {
    const uint8_t* p = rows[sy] + bpp * static_cast<size_t>(first);
    size_t i = 0;
#if defined(__SSE2__)
    // 16 bytes a step: byte j in channel j % 4 (RGBX) or any (L), so the lanes keep
    // each channel apart until the end.
    for (; i + 16 <= bytes; i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      vmin = _mm_min_epu8(vmin, v);
      vmax = _mm_max_epu8(vmax, v);
    }
#endif
    for (; i < bytes; ++i) {  // The tail: whole pixels, lane i % 16 as the vector's.
      mins[i % 16] = std::min(mins[i % 16], p[i]);
      maxs[i % 16] = std::max(maxs[i % 16], p[i]);
    }
  }
#if defined(__SSE2__)
  uint8_t vmins[16], vmaxs[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(vmins), vmin);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(vmaxs), vmax);
  for (int j = 0; j < 16; ++j) {
    mins[j] = std::min(mins[j], vmins[j]);
    maxs[j] = std::max(maxs[j], vmaxs[j]);
  }
#endif
  for (int c = 0; c < 3; ++c) {
    lo[c] = 255, hi[c] = 0;
    for (int j = rgb ? c : 0; j < 16; j += rgb ? 4 : 1) {
      lo[c] = std::min<int>(lo[c], mins[j]);
      hi[c] = std::max<int>(hi[c], maxs[j]);
    }
  }
  return true;
}

void MapRows(const uint8_t* const* src, bool rgb, const Maps& m, const Luts& luts,
             uint8_t* const* dst) {
  const int width = static_cast<int>(m.g.x_src.size());
  const Order order = OrderOf(m.g.x_src);
  const bool same = std::memcmp(luts[0], luts[1], 256) == 0 &&
                    std::memcmp(luts[0], luts[2], 256) == 0;
  for (int y = 0; y < static_cast<int>(m.g.y_src.size()); ++y) {
    const int sy = m.g.y_src[y];
    if (sy >= 0 && order == Order::kForward) {  // One pass from row to row.
      Lut(src[sy] + (rgb ? 4 : 1) * static_cast<size_t>(m.g.x_src[0]), dst[y], width, rgb,
          same, luts);
      continue;
    }
    CopyRow(src, rgb, m, order, y, dst[y]);  // Then the tables, in place, in cache.
    Lut(dst[y], dst[y], width, rgb, same, luts);
  }
}

}  // namespace flowloader::python_internal::pil_rows
