// normalize.cc: torchvision's ToTensor + Normalize(mean, std): uint8 RGB pixels become
// the float32 [3, H, W] tensor (q / 255 - mean) / std, written into the batch slot.
#include <array>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "stages/augment/ops/internal/geometry_args.h"
#include "stages/augment/ops/kernels/colour_internal.h"
#include "stages/augment/ops/op.h"

namespace flowloader::augment {
namespace {

// NormalizePlain writes planes[c][i] = float(src[3i + c]) * scale[c] + offset[c]: a float
// multiply, then a float add (the baseline has no FMA to contract them into).
void NormalizePlain(const uint8_t* src, size_t n, const float* scale, const float* offset,
                    float* chw, size_t plane) {
  for (int c = 0; c < 3; ++c) {
    float* out = chw + c * plane;
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(src[3 * i + c]) * scale[c] + offset[c];
  }
}

#if defined(FLOWLOADER_COLOUR_AVX2)
// StoreFloats8 writes 8 floats at p: a non-temporal store when kStream (p 32-byte
// aligned), so that the tensor, which this thread does not read again and which
// outgrows the caches across a batch, is not first read into them.
template <bool kStream>
__attribute__((target("avx2"))) inline void StoreFloats8(float* p, __m256 v) {
  if (kStream) {
    _mm256_stream_ps(p, v);
  } else {
    _mm256_storeu_ps(p, v);
  }
}

// NormalizeAvx2 is NormalizePlain on 8 pixels at a time (n a multiple of 8): the same
// float multiply and add per value (target avx2 alone: no FMA), one pass over the pixels
// instead of one per channel. DINO's 10 views: Normalize 0.33 -> 0.11 ms of CPU per
// sample (perf, 2000 images).
template <bool kStream>
__attribute__((target("avx2"))) void NormalizeAvx2(const uint8_t* src, size_t n,
                                                   const float* scale, const float* offset,
                                                   float* chw, size_t plane) {
  const __m256 s0 = _mm256_set1_ps(scale[0]), s1 = _mm256_set1_ps(scale[1]),
               s2 = _mm256_set1_ps(scale[2]);
  const __m256 o0 = _mm256_set1_ps(offset[0]), o1 = _mm256_set1_ps(offset[1]),
               o2 = _mm256_set1_ps(offset[2]);
  float* r_out = chw;
  float* g_out = chw + plane;
  float* b_out = chw + 2 * plane;
  for (size_t i = 0; i < n; i += 8, src += 24) {
    __m256i r, g, b;
    kernels::internal::LoadRgb8(src, &r, &g, &b);
    StoreFloats8<kStream>(r_out + i, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(r), s0), o0));
    StoreFloats8<kStream>(g_out + i, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(g), s1), o1));
    StoreFloats8<kStream>(b_out + i, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(b), s2), o2));
  }
  // Non-temporal stores are weakly ordered: fence them before whatever tells another
  // thread the sample is written.
  if (kStream) _mm_sfence();
}

// kDwordLanes picks pixel k's red byte (3k) of 16 interleaved pixels into dword k's low
// byte (the other three zeroed by the mask); +1 and +2 pick green and blue.
alignas(64) constexpr uint8_t kDwordLanes[64] = {
    0,  0, 0, 0, 3,  0, 0, 0, 6,  0, 0, 0, 9,  0, 0, 0, 12, 0, 0, 0, 15, 0, 0, 0,
    18, 0, 0, 0, 21, 0, 0, 0, 24, 0, 0, 0, 27, 0, 0, 0, 30, 0, 0, 0, 33, 0, 0, 0,
    36, 0, 0, 0, 39, 0, 0, 0, 42, 0, 0, 0, 45, 0, 0, 0};

// StoreFloats16 is StoreFloats8 on 16 floats (p 64-byte aligned when kStream).
template <bool kStream>
__attribute__((target("avx512f"))) inline void StoreFloats16(float* p, __m512 v) {
  if (kStream) {
    _mm512_stream_ps(p, v);
  } else {
    _mm512_storeu_ps(p, v);
  }
}

// NormalizeVbmi is NormalizePlain on 16 pixels at a time (n a multiple of 16): one
// 48-byte load, one zero-masked vpermb per channel straight to 16 dwords, then the same
// float multiply and add per value (fp-contract=off: AVX-512F brings FMA into the
// target, and a fused multiply-add would round once instead of twice). 16 instructions
// per 16 pixels instead of NormalizeAvx2's 54, but the kernel is bound by its writes to
// memory (372 KB per 176² sample), so the gain is smaller: policies_bench (into four
// 64-sample batches, medians of 6 runs) 96² 4.45 -> 4.25 us, 176² 15.2 -> 15.1 us, 224²
// 25.6 -> 23.0 us; perf of the v2 recipe (176², 6 epochs, medians of 8 alternating runs)
// 0.315 -> 0.261 s of CPU in normalize per 12000 samples. Regular stores instead of
// streaming ones were no faster (224² 31 us) and left mixup_cutmix's blend of the batch
// as slow (a stand-alone batch loop).
template <bool kStream>
__attribute__((target("avx512f,avx512bw,avx512vbmi"), optimize("fp-contract=off"))) void
NormalizeVbmi(const uint8_t* src, size_t n, const float* scale, const float* offset, float* chw,
              size_t plane) {
  const __m512 s0 = _mm512_set1_ps(scale[0]), s1 = _mm512_set1_ps(scale[1]),
               s2 = _mm512_set1_ps(scale[2]);
  const __m512 o0 = _mm512_set1_ps(offset[0]), o1 = _mm512_set1_ps(offset[1]),
               o2 = _mm512_set1_ps(offset[2]);
  const __m512i r_lanes = _mm512_load_si512(kDwordLanes);
  const __m512i g_lanes = _mm512_add_epi32(r_lanes, _mm512_set1_epi32(1));
  const __m512i b_lanes = _mm512_add_epi32(r_lanes, _mm512_set1_epi32(2));
  const __mmask64 low_bytes = 0x1111111111111111ull;
  const __mmask64 pixels16 = 0xFFFFFFFFFFFFull;
  float* r_out = chw;
  float* g_out = chw + plane;
  float* b_out = chw + 2 * plane;
  for (size_t i = 0; i < n; i += 16, src += 48) {
    const __m512i x = _mm512_maskz_loadu_epi8(pixels16, src);
    const __m512i r = _mm512_maskz_permutexvar_epi8(low_bytes, r_lanes, x);
    const __m512i g = _mm512_maskz_permutexvar_epi8(low_bytes, g_lanes, x);
    const __m512i b = _mm512_maskz_permutexvar_epi8(low_bytes, b_lanes, x);
    StoreFloats16<kStream>(r_out + i, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(r), s0), o0));
    StoreFloats16<kStream>(g_out + i, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(g), s1), o1));
    StoreFloats16<kStream>(b_out + i, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(b), s2), o2));
  }
  if (kStream) _mm_sfence();
}

// NormalizeFast runs the widest kernel this CPU has on the first plane & ~15 (VBMI) or
// plane & ~7 (AVX2) pixels, streaming where every plane starts aligned to the store
// width, and returns how many it did.
size_t NormalizeFast(const uint8_t* src, size_t plane, const float* scale, const float* offset,
                     float* chw) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(chw);
  if (kernels::internal::HasVbmi()) {
    const size_t n = plane & ~static_cast<size_t>(15);
    if (at % 64 == 0 && plane % 16 == 0) {
      NormalizeVbmi<true>(src, n, scale, offset, chw, plane);
    } else {
      NormalizeVbmi<false>(src, n, scale, offset, chw, plane);
    }
    return n;
  }
  const size_t n = plane & ~static_cast<size_t>(7);
  if (at % 32 == 0 && plane % 8 == 0) {
    NormalizeAvx2<true>(src, n, scale, offset, chw, plane);
  } else {
    NormalizeAvx2<false>(src, n, scale, offset, chw, plane);
  }
  return n;
}
#endif

class Normalize : public Op {
 public:
  Normalize(const std::array<float, 3>& mean, const std::array<float, 3>& std)
      : mean_(mean), std_(std) {
    for (int c = 0; c < 3; ++c) {
      // As the fused head computes it (transform.cc): one multiply-add per value.
      scale_[c] = static_cast<float>(1.0 / (255.0 * std[c]));
      offset_[c] = static_cast<float>(-static_cast<double>(mean[c]) / std[c]);
    }
  }
  PixelForm Output() const override { return PixelForm::kFloatCHW; }
  bool Normalization(std::array<float, 3>* mean, std::array<float, 3>* std) const override {
    *mean = mean_;
    *std = std_;
    return true;
  }
  absl::Status Apply(const OpParams&, OpImage& image) const override {
    const Image& img = *image.rgb;
    if (img.width != image.width || img.height != image.height) {
      return absl::InternalError(absl::StrCat("normalize: pixels are ", img.width, "x",
                                              img.height, ", the slot ", image.width, "x",
                                              image.height));
    }
    const size_t plane = static_cast<size_t>(img.width) * img.height;
    const uint8_t* src = img.pixels.data();
    size_t done = 0;
#if defined(FLOWLOADER_COLOUR_AVX2)
    if (kernels::internal::HasAvx2()) done = NormalizeFast(src, plane, scale_, offset_, image.chw);
#endif
    NormalizePlain(src + 3 * done, plane - done, scale_, offset_, image.chw + done, plane);
    return absl::OkStatus();
  }

 private:
  std::array<float, 3> mean_;
  std::array<float, 3> std_;
  float scale_[3];
  float offset_[3];
};

absl::StatusOr<std::array<float, 3>> ReadTriple(const OpArgs& args, const std::string& arg,
                                                bool nonzero) {
  const OpValue& v = args.Get(arg);
  std::array<float, 3> out{};
  if (v.numbers.size() != 1 && v.numbers.size() != 3) {
    return ArgError("normalize", arg, "a number or [r, g, b]", v);
  }
  for (int c = 0; c < 3; ++c) {
    out[c] = static_cast<float>(v.numbers[v.numbers.size() == 1 ? 0 : c]);
    // torchvision refuses only a std of 0 (a division by zero); a negative one negates.
    if (nonzero && !(out[c] != 0)) {
      return ArgError("normalize", arg, "non-zero in every channel", v);
    }
  }
  return out;
}

FLOWLOADER_REGISTER_OP(
    (OpSchema{"normalize",
              "ToTensor + Normalize: uint8 pixels to float32 [3, H, W], (x / 255 - mean) / std; "
              "pixel ops come before it, tensor ops (random_erasing) after",
              {{"mean", "[0.485, 0.456, 0.406]", "[r, g, b] or a number",
                "per-channel mean on the 0..1 scale (torchvision requires it; the default is "
                "ImageNet's)"},
               {"std", "[0.229, 0.224, 0.225]", "[r, g, b] or a number, not 0",
                "per-channel standard deviation (default ImageNet's)"},
               {"inplace", "false", "true or false", "accepted for torchvision's signature; "
                                                     "flowloader always writes the slot"}}}),
    [](const OpArgs& args) -> absl::StatusOr<std::unique_ptr<Op>> {
      absl::StatusOr<std::array<float, 3>> mean = ReadTriple(args, "mean", false);
      if (!mean.ok()) return mean.status();
      absl::StatusOr<std::array<float, 3>> std = ReadTriple(args, "std", true);
      if (!std.ok()) return std.status();
      // inplace changes nothing here, but must be a bool (torchvision's signature).
      bool inplace = false;
      if (absl::Status s = internal::ReadBool("normalize", args, "inplace", &inplace); !s.ok()) {
        return s;
      }
      return std::unique_ptr<Op>(new Normalize(*mean, *std));
    });

}  // namespace
}  // namespace flowloader::augment
