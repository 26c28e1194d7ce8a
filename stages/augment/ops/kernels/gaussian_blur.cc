// gaussian_blur.cc: F.gaussian_blur on a PIL image, which torchvision 0.14 runs as a
// tensor op (functional_tensor.gaussian_blur): pil_to_tensor, float32 1D kernels
// (_get_gaussian_kernel1d: exp(-x² / 2σ²) over linspace(-(k-1)/2, (k-1)/2), normalized),
// reflect padding of k // 2, a depthwise conv2d with their outer product, round half to
// even, back to uint8.
//
// The 2D kernel is separable, so this runs two 1D float passes (rows, then columns)
// instead of the k_x × k_y conv: 2(k) instead of k² multiply-adds per value, and the
// symmetric kernel folds each pair of taps into one multiply. Float sums in another order
// than conv2d's differ in the last bits, so a value that lands within a rounding error of
// .5 may round the other way: outputs agree with torchvision within 1 level.
//
// Speed: per sample no allocation once warm (thread-local scratch that keeps its
// capacity), the kernel computed once per call from the drawn sigma, and inner loops over
// whole interleaved rows written with GCC vector types (4 floats), so they run as SIMD
// on every target.
//
// Thread-safety: pure function; its scratch is thread-local.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/kernels/geometry.h"

namespace flowloader::augment::kernels {
namespace {

// Four floats: one SSE register on the x86-64-v2 baseline (NEON on Arm).
typedef float V4 __attribute__((vector_size(16)));
typedef int32_t V4i __attribute__((vector_size(16)));
constexpr int kLanes = 4;

inline V4 Load(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void Store(float* p, V4 v) { std::memcpy(p, &v, sizeof(v)); }
inline V4 Splat(float f) { return V4{f, f, f, f}; }

// Kernel1D is _get_gaussian_kernel1d(k, sigma): the half-kernel (tap 0 is the centre),
// float32 as torchvision's tensors are. Its linspace is symmetric, so is the kernel.
// Outer taps whose weights together move no output by more than kTailLevels are dropped
// (a wide kernel with a small sigma, as DINO's 23 with sigma in [0.1, 2], is mostly
// zeros): the sums change by far less than torchvision's own float rounding matters, and
// the work shrinks to about 5 sigma each side.
constexpr double kTailLevels = 2e-4;

void Kernel1D(int k, double sigma, std::vector<float>* half) {
  const int r = k / 2;
  half->resize(r + 1);
  double sum = 0;
  std::vector<float>& h = *half;
  for (int i = 0; i <= r; ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(sigma);
    h[i] = std::exp(-0.5f * t * t);
    sum += (i == 0 ? 1.0 : 2.0) * h[i];
  }
  const float total = static_cast<float>(sum);
  for (float& v : h) v /= total;
  double tail = 0;
  int keep = r;
  while (keep > 0 && (tail + 2.0 * h[keep]) * 255.0 <= kTailLevels) tail += 2.0 * h[keep--];
  half->resize(keep + 1);
}

// Reflect is torch's reflect padding (the edge not repeated), folded again for pads
// wider than the image, where torch itself refuses.
inline int Reflect(int i, int n) {
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i >= n ? period - i : i;
}

// ConvolveRow: out[i] = Σ_t half[t] (in[i - t·step] + in[i + t·step]) (the centre once)
// for i in [0, n), over `in` padded by r·step floats on each side. Four independent
// accumulators (16 values) per step keep the adds from waiting on each other.
void ConvolveRow(const float* in, int n, int step, const std::vector<float>& half,
                 float* out) {
  const int r = static_cast<int>(half.size()) - 1;
  const float* centre = in + r * step;
  int i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const V4 w0 = Splat(half[0]);
    V4 a0 = Load(centre + i) * w0, a1 = Load(centre + i + 4) * w0;
    V4 a2 = Load(centre + i + 8) * w0, a3 = Load(centre + i + 12) * w0;
    for (int t = 1; t <= r; ++t) {
      const V4 wt = Splat(half[t]);
      const float* lo = centre + i - t * step;
      const float* hi = centre + i + t * step;
      a0 += (Load(lo) + Load(hi)) * wt;
      a1 += (Load(lo + 4) + Load(hi + 4)) * wt;
      a2 += (Load(lo + 8) + Load(hi + 8)) * wt;
      a3 += (Load(lo + 12) + Load(hi + 12)) * wt;
    }
    Store(out + i, a0);
    Store(out + i + 4, a1);
    Store(out + i + 8, a2);
    Store(out + i + 12, a3);
  }
  for (; i < n; ++i) {
    float acc = centre[i] * half[0];
    for (int t = 1; t <= r; ++t) acc += (centre[i - t * step] + centre[i + t * step]) * half[t];
    out[i] = acc;
  }
}

// ConvolveColumn: the vertical kernel for one output row, whose source rows are
// rows[0] (the centre) and up[t], down[t] for t in [1, r]; rounded half to even as
// torch.round (adding and subtracting 1.5·2^23 rounds a float in [-2^22, 2^22] to the
// nearest integer, ties to even), clamped to [0, 255].
void ConvolveColumn(const float* centre, const float* const* up, const float* const* down,
                    const std::vector<float>& half, int n, uint8_t* out) {
  const int r = static_cast<int>(half.size()) - 1;
  const V4 magic = Splat(12582912.0f), lo = Splat(0.0f), hi = Splat(255.0f);
  int i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const V4 w0 = Splat(half[0]);
    V4 a0 = Load(centre + i) * w0, a1 = Load(centre + i + 4) * w0;
    for (int t = 1; t <= r; ++t) {
      const V4 wt = Splat(half[t]);
      a0 += (Load(up[t] + i) + Load(down[t] + i)) * wt;
      a1 += (Load(up[t] + i + 4) + Load(down[t] + i + 4)) * wt;
    }
    const V4 values[2] = {a0, a1};
    for (int k = 0; k < 2; ++k) {
      V4 v = (values[k] + magic) - magic;
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      const auto q = __builtin_convertvector(v, V4i);
      for (int l = 0; l < kLanes; ++l) out[i + 4 * k + l] = static_cast<uint8_t>(q[l]);
    }
  }
  for (; i < n; ++i) {
    float acc = centre[i] * half[0];
    for (int t = 1; t <= r; ++t) acc += (up[t][i] + down[t][i]) * half[t];
    const float v = std::nearbyint(acc);
    out[i] = static_cast<uint8_t>(v <= 0.0f ? 0.0f : v >= 255.0f ? 255.0f : v);
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// ConvolveRowAvx2 and ConvolveColumnAvx2 are ConvolveRow and ConvolveColumn eight floats
// per register (target avx2 alone: no FMA), the same operations in the same order on
// each value, so the same bytes. Measured on DINO's recipe (perf, 2000 images):
// GaussianBlur 0.70 -> 0.36 ms of CPU per sample.
__attribute__((target("avx2"))) void ConvolveRowAvx2(const float* in, int n, int step,
                                                     const std::vector<float>& half,
                                                     float* out) {
  const int r = static_cast<int>(half.size()) - 1;
  const float* centre = in + r * step;
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 w0 = _mm256_set1_ps(half[0]);
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(centre + i), w0);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(centre + i + 8), w0);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(centre + i + 16), w0);
    __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps(centre + i + 24), w0);
    for (int t = 1; t <= r; ++t) {
      const __m256 wt = _mm256_set1_ps(half[t]);
      const float* lo = centre + i - t * step;
      const float* hi = centre + i + t * step;
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(lo), _mm256_loadu_ps(hi)), wt));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(lo + 8), _mm256_loadu_ps(hi + 8)), wt));
      a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(lo + 16), _mm256_loadu_ps(hi + 16)), wt));
      a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(lo + 24), _mm256_loadu_ps(hi + 24)), wt));
    }
    _mm256_storeu_ps(out + i, a0);
    _mm256_storeu_ps(out + i + 8, a1);
    _mm256_storeu_ps(out + i + 16, a2);
    _mm256_storeu_ps(out + i + 24, a3);
  }
  if (i < n) ConvolveRow(in + i, n - i, step, half, out + i);
}

__attribute__((target("avx2"))) void ConvolveColumnAvx2(const float* centre,
                                                        const float* const* up,
                                                        const float* const* down,
                                                        const std::vector<float>& half, int n,
                                                        uint8_t* out) {
  const int r = static_cast<int>(half.size()) - 1;
  const __m256 magic = _mm256_set1_ps(12582912.0f), lo = _mm256_setzero_ps(),
               hi = _mm256_set1_ps(255.0f);
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 w0 = _mm256_set1_ps(half[0]);
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(centre + i), w0);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(centre + i + 8), w0);
    for (int t = 1; t <= r; ++t) {
      const __m256 wt = _mm256_set1_ps(half[t]);
      a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(up[t] + i),
                                                         _mm256_loadu_ps(down[t] + i)), wt));
      a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_add_ps(_mm256_loadu_ps(up[t] + i + 8),
                                                         _mm256_loadu_ps(down[t] + i + 8)), wt));
    }
    a0 = _mm256_sub_ps(_mm256_add_ps(a0, magic), magic);
    a1 = _mm256_sub_ps(_mm256_add_ps(a1, magic), magic);
    a0 = _mm256_min_ps(_mm256_max_ps(a0, lo), hi);
    a1 = _mm256_min_ps(_mm256_max_ps(a1, lo), hi);
    const __m256i w = _mm256_packs_epi32(_mm256_cvttps_epi32(a0), _mm256_cvttps_epi32(a1));
    const __m256i b = _mm256_packus_epi16(w, w);
    // Lane 0: values 0..3 then 8..11; lane 1: 4..7 then 12..15.
    const __m128i l = _mm256_castsi256_si128(b), h = _mm256_extracti128_si256(b, 1);
    const __m128i v = _mm_unpacklo_epi32(l, h);  // 0..3, 4..7, 8..11, 12..15.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), v);
  }
  if (i < n) {
    thread_local std::vector<const float*> up_i, down_i;
    up_i.assign(up, up + r + 1);
    down_i.assign(down, down + r + 1);
    for (int t = 1; t <= r; ++t) up_i[t] += i, down_i[t] += i;
    ConvolveColumn(centre + i, up_i.data(), down_i.data(), half, n - i, out + i);
  }
}
#endif

// BytesToFloats widens n bytes to floats: eight per AVX2 register where the CPU has it
// (GCC's -O2 cost model leaves the plain loop scalar, measured at 7.5% of the DINO
// recipe's CPU), the rest one at a time. Exact either way.
#if defined(FLOWLOADER_COLOUR_AVX2)
__attribute__((target("avx2"))) int BytesToFloatsAvx2(const uint8_t* in, int n, float* out) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
  }
  return i;
}
#endif

void BytesToFloats(const uint8_t* in, int n, float* out) {
  int i = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
  if (internal::HasAvx2()) i = BytesToFloatsAvx2(in, n, out);
#endif
  for (; i < n; ++i) out[i] = in[i];
}

struct BlurScratch {
  std::vector<float> kx, ky;   // Half-kernels.
  std::vector<float> padded;   // One source row as floats, reflect-padded.
  std::vector<float> rows;     // The horizontally blurred image, height × width × 3.
  std::vector<const float*> up, down;  // One output row's source rows, by tap.
};

BlurScratch& Scratch() {
  thread_local BlurScratch s;
  return s;
}

}  // namespace

void GaussianBlur(const Image& src, int kernel_x, int kernel_y, double sigma_x,
                  double sigma_y, Image* dst) {
  BlurScratch& s = Scratch();
  const int w = src.width, h = src.height, row = 3 * w;
  Kernel1D(kernel_x, sigma_x, &s.kx);
  Kernel1D(kernel_y, sigma_y, &s.ky);
  // Padding as wide as the kept taps reach.
  const int rx = static_cast<int>(s.kx.size()) - 1;

  // Rows: each source row to floats with rx reflected pixels either side, then the
  // horizontal kernel over the interleaved row (a pixel's neighbours are 3 floats apart).
  s.padded.resize(static_cast<size_t>(w + 2 * rx) * 3);
  s.rows.resize(static_cast<size_t>(h) * row);
  for (int y = 0; y < h; ++y) {
    const uint8_t* in = src.pixels.data() + static_cast<size_t>(y) * src.stride();
    float* p = s.padded.data();
    BytesToFloats(in, row, p + 3 * rx);
    for (int x = 1; x <= rx; ++x) {
      const uint8_t* left = in + 3 * Reflect(-x, w);
      const uint8_t* right = in + 3 * Reflect(w - 1 + x, w);
      for (int c = 0; c < 3; ++c) {
        p[3 * (rx - x) + c] = left[c];
        p[3 * (rx + w - 1 + x) + c] = right[c];
      }
    }
    float* out = s.rows.data() + static_cast<size_t>(y) * row;
#if defined(FLOWLOADER_COLOUR_AVX2)
    if (internal::HasAvx2()) {
      ConvolveRowAvx2(s.padded.data(), row, 3, s.kx, out);
      continue;
    }
#endif
    ConvolveRow(s.padded.data(), row, 3, s.kx, out);
  }

  // Columns: the vertical kernel over whole rows (reflected row indices).
  dst->Resize(w, h, 3);
  const int ry_kept = static_cast<int>(s.ky.size()) - 1;
  s.up.resize(ry_kept + 1);
  s.down.resize(ry_kept + 1);
  for (int y = 0; y < h; ++y) {
    for (int t = 1; t <= ry_kept; ++t) {
      s.up[t] = s.rows.data() + static_cast<size_t>(Reflect(y - t, h)) * row;
      s.down[t] = s.rows.data() + static_cast<size_t>(Reflect(y + t, h)) * row;
    }
    const float* centre = s.rows.data() + static_cast<size_t>(y) * row;
#if defined(FLOWLOADER_COLOUR_AVX2)
    if (internal::HasAvx2()) {
      ConvolveColumnAvx2(centre, s.up.data(), s.down.data(), s.ky, row, dst->Row(y));
      continue;
    }
#endif
    ConvolveColumn(centre, s.up.data(), s.down.data(), s.ky, row, dst->Row(y));
  }
  // Float rows grown for one large image go back at once (the working images' rule,
  // ViewProgram::Run): a thread keeps at most 16 MiB of them for the next sample.
  if (s.rows.capacity() * sizeof(float) > (size_t{16} << 20)) s.rows = std::vector<float>();
}

}  // namespace flowloader::augment::kernels
