// mixup.cc: timm's Mixup draws and in-place kernels (see mixup.h).
#include "stages/mix/mixup.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stages/mix/beta.h"
#include "stages/mix/internal/blend.h"

namespace flowloader {
namespace mix {
namespace {

// RandInt is np.random.randint(lo, hi): [lo, hi); lo when the range is empty (numpy
// raises there; see mixup.h).
int RandInt(int lo, int hi, SampleRng& rng) {
  return hi > lo ? static_cast<int>(rng.UniformInt(lo, hi)) : lo;
}

// ToF32 rounds λ as timm's per-element draws are (np.float32 arrays).
double ToF32(double v) { return static_cast<double>(static_cast<float>(v)); }

bool Idle(const RowMix& m) { return !m.cutmix && m.lam == 1.0; }

// LineOp is what one row does on one scanline: keep, blend with the partner, or take the
// partner's pixels in [xl, xh).
struct LineOp {
  enum Kind { kKeep, kBlend, kCut } kind = kKeep;
  float lf = 1.0f, of = 0.0f;  // float(λ), float(1 - λ): torch's float32 arithmetic.
  int xl = 0, xh = 0;
};

LineOp OpFor(const RowMix& m, const Box& box, int y) {
  LineOp op;
  if (Idle(m)) return op;
  if (m.cutmix) {
    if (y >= box.yl && y < box.yh && box.xh > box.xl) {
      op.kind = LineOp::kCut;
      op.xl = box.xl;
      op.xh = box.xh;
    }
    return op;
  }
  op.kind = LineOp::kBlend;
  op.lf = static_cast<float>(m.lam);
  op.of = static_cast<float>(1.0 - m.lam);
  return op;
}

inline float Apply(const LineOp& op, int x, float self, float other) {
  switch (op.kind) {
    case LineOp::kBlend:
      return self * op.lf + other * op.of;
    case LineOp::kCut:
      return x >= op.xl && x < op.xh ? other : self;
    case LineOp::kKeep:
      break;
  }
  return self;
}

// Span is the columns an op touches: the whole line for a blend, the box for a cut.
void Span(const LineOp& op, int w, int* lo, int* hi) {
  if (op.kind == LineOp::kBlend) {
    *lo = 0;
    *hi = w;
  } else if (op.kind == LineOp::kCut) {
    *lo = std::min(*lo, op.xl);
    *hi = std::max(*hi, op.xh);
  }
}

// MixLine rewrites one scanline of rows i and j (distinct) from both originals, where at
// least one of them cuts (whole-row blends go to internal::BlendPair).
void MixLine(float* pi, float* pj, int w, const LineOp& oi, const LineOp& oj) {
  // CutMix's usual lines only move bytes: one box on both rows (batch and pair mode)
  // swaps the span, a box on one row only copies the partner's span.
  if (oi.kind == LineOp::kCut && oj.kind == LineOp::kCut && oi.xl == oj.xl && oi.xh == oj.xh) {
    internal::SwapSpan(pi + oi.xl, pj + oi.xl, static_cast<size_t>(oi.xh - oi.xl));
    return;
  }
  if (oi.kind == LineOp::kCut && oj.kind == LineOp::kKeep) {
    std::memcpy(pi + oi.xl, pj + oi.xl, sizeof(float) * static_cast<size_t>(oi.xh - oi.xl));
    return;
  }
  if (oi.kind == LineOp::kKeep && oj.kind == LineOp::kCut) {
    std::memcpy(pj + oj.xl, pi + oj.xl, sizeof(float) * static_cast<size_t>(oj.xh - oj.xl));
    return;
  }
  int lo = w, hi = 0;
  Span(oi, w, &lo, &hi);
  Span(oj, w, &lo, &hi);
  for (int x = lo; x < hi; ++x) {
    const float a = pi[x], b = pj[x];
    pi[x] = Apply(oi, x, a, b);
    pj[x] = Apply(oj, x, b, a);
  }
}

}  // namespace

bool ParseMode(const std::string& text, MixMode* mode) {
  if (text == "batch") *mode = MixMode::kBatch;
  else if (text == "pair") *mode = MixMode::kPair;
  else if (text == "elem") *mode = MixMode::kElem;
  else return false;
  return true;
}

RowMix DrawLam(const MixupOptions& o, SampleRng& rng) {
  RowMix r;
  if (!(rng.Uniform(0.0, 1.0) < o.prob)) return r;
  const double cutmix_alpha = o.effective_cutmix_alpha();
  if (o.mixup_alpha > 0.0 && cutmix_alpha > 0.0) {
    r.cutmix = rng.Uniform(0.0, 1.0) < o.switch_prob;
    r.lam = Beta(r.cutmix ? cutmix_alpha : o.mixup_alpha, r.cutmix ? cutmix_alpha : o.mixup_alpha,
                 rng);
  } else if (o.mixup_alpha > 0.0) {
    r.lam = Beta(o.mixup_alpha, o.mixup_alpha, rng);
  } else if (cutmix_alpha > 0.0) {
    r.cutmix = true;
    r.lam = Beta(cutmix_alpha, cutmix_alpha, rng);
  }
  return r;
}

void CutmixBox(const MixupOptions& o, int h, int w, SampleRng& rng, RowMix* row) {
  Box& b = row->box;
  if (o.has_minmax) {  // timm's rand_bbox_minmax.
    const int cut_h = RandInt(static_cast<int>(h * o.minmax_lo), static_cast<int>(h * o.minmax_hi), rng);
    const int cut_w = RandInt(static_cast<int>(w * o.minmax_lo), static_cast<int>(w * o.minmax_hi), rng);
    b.yl = RandInt(0, h - cut_h, rng);
    b.xl = RandInt(0, w - cut_w, rng);
    b.yh = b.yl + cut_h;
    b.xh = b.xl + cut_w;
  } else {  // timm's rand_bbox, margin 0.
    const double ratio = std::sqrt(1.0 - row->lam);
    const int cut_h = static_cast<int>(h * ratio);
    const int cut_w = static_cast<int>(w * ratio);
    const int cy = RandInt(0, h, rng);
    const int cx = RandInt(0, w, rng);
    b.yl = std::clamp(cy - cut_h / 2, 0, h);
    b.yh = std::clamp(cy + cut_h / 2, 0, h);
    b.xl = std::clamp(cx - cut_w / 2, 0, w);
    b.xh = std::clamp(cx + cut_w / 2, 0, w);
  }
  if (o.correct_lam || o.has_minmax) {
    row->lam = 1.0 - static_cast<double>(b.area()) / static_cast<double>(int64_t{h} * w);
  }
}

std::vector<RowMix> DrawMix(const MixupOptions& o, int64_t rows, int h, int w, SampleRng& rng) {
  std::vector<RowMix> mix(static_cast<size_t>(rows));
  if (rows == 0) return mix;
  // One draw as timm makes it: λ == 1 means unchanged (timm's `if lam != 1.`).
  auto draw = [&](bool f32) {
    RowMix r = DrawLam(o, rng);
    if (f32) r.lam = ToF32(r.lam);
    if (r.lam == 1.0) return RowMix{};
    if (r.cutmix) CutmixBox(o, h, w, rng, &r);
    if (f32) r.lam = ToF32(r.lam);
    return r;
  };
  switch (o.mode) {
    case MixMode::kBatch:
      std::fill(mix.begin(), mix.end(), draw(false));
      break;
    case MixMode::kPair:
      for (int64_t i = 0; i < rows / 2; ++i) {
        mix[static_cast<size_t>(i)] = draw(true);
        mix[static_cast<size_t>(rows - 1 - i)] = mix[static_cast<size_t>(i)];
      }
      break;  // An odd batch's middle row stays RowMix{} (unchanged).
    case MixMode::kElem:
      for (RowMix& m : mix) m = draw(true);
      break;
  }
  return mix;
}

Box ScaleBox(const Box& box, int ref_h, int ref_w, int h, int w) {
  if (h == ref_h && w == ref_w) return box;
  auto scale = [](int v, int to, int from) {
    return static_cast<int>(int64_t{v} * to / from);
  };
  return Box{scale(box.yl, h, ref_h), scale(box.yh, h, ref_h), scale(box.xl, w, ref_w),
             scale(box.xh, w, ref_w)};
}

void MixImages(const std::vector<RowMix>& mix, int ref_h, int ref_w, float* x, int64_t n,
               int c, int h, int w) {
  const size_t plane = static_cast<size_t>(h) * static_cast<size_t>(w);
  const size_t row_elems = static_cast<size_t>(c) * plane;
  for (int64_t i = 0; i < (n + 1) / 2; ++i) {
    const int64_t j = n - 1 - i;
    const RowMix& mi = mix[static_cast<size_t>(i)];
    const RowMix& mj = mix[static_cast<size_t>(j)];
    if (Idle(mi) && Idle(mj)) continue;
    float* xi = x + static_cast<size_t>(i) * row_elems;
    float* xj = x + static_cast<size_t>(j) * row_elems;
    if (i != j && !mi.cutmix && !mj.cutmix && !Idle(mi) && !Idle(mj)) {
      // Mixup on both rows (every pair in batch mode): one pass over the whole rows, every
      // channel and line, in the vector kernel; the factors are LineOp's.
      internal::BlendPair(xi, xj, row_elems, static_cast<float>(mi.lam),
                          static_cast<float>(1.0 - mi.lam), static_cast<float>(mj.lam),
                          static_cast<float>(1.0 - mj.lam));
      continue;
    }
    const Box bi = ScaleBox(mi.box, ref_h, ref_w, h, w);
    const Box bj = ScaleBox(mj.box, ref_h, ref_w, h, w);
    for (int ch = 0; ch < c; ++ch) {
      for (int y = 0; y < h; ++y) {
        const size_t at = static_cast<size_t>(ch) * plane + static_cast<size_t>(y) * w;
        const LineOp oi = OpFor(mi, bi, y);
        if (i == j) {  // The middle row of an odd batch: its own partner.
          for (int xx = 0; xx < w; ++xx) xi[at + xx] = Apply(oi, xx, xi[at + xx], xi[at + xx]);
          continue;
        }
        const LineOp oj = OpFor(mj, bj, y);
        if (oi.kind == LineOp::kKeep && oj.kind == LineOp::kKeep) continue;
        MixLine(xi + at, xj + at, w, oi, oj);
      }
    }
  }
}

void MixTargets(const std::vector<RowMix>& mix, const int64_t* labels, int64_t n, int classes,
                double smoothing, float* targets) {
  // timm's one_hot fills float32 tensors with Python floats: on and off as float32.
  const double off_d = smoothing / classes;
  const float off = static_cast<float>(off_d);
  const float on = static_cast<float>(1.0 - smoothing + off_d);
  for (int64_t i = 0; i < n; ++i) {
    const double lam = mix[static_cast<size_t>(i)].lam;
    const float lf = static_cast<float>(lam);
    const float of = static_cast<float>(1.0 - lam);
    const int64_t a = labels[i];
    const int64_t b = labels[n - 1 - i];
    float* row = targets + static_cast<size_t>(i) * static_cast<size_t>(classes);
    std::fill(row, row + classes, off * lf + off * of);
    row[a] = on * lf + (a == b ? on : off) * of;
    if (a != b) row[b] = off * lf + on * of;
  }
}

}  // namespace mix
}  // namespace flowloader
