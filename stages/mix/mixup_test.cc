// mixup_test.cc: the in-place kernels against timm's Mixup (timm/data/mixup.py:
// mixup_target, rand_bbox, cutmix_bbox_and_lam, Mixup._mix_batch/_mix_pair/_mix_elem),
// transcribed below as plain reference code that works on a cloned batch the way timm
// does, on a fixed λ and box; torchvision's references/classification/transforms.py
// (RandomMixup, RandomCutmix: partner = roll(1), which equals flip for two rows); and the
// draws: λ ~ Beta(α, α) over 10 000 batches, CutMix boxes inside the image with λ from
// their area. The mixup kernel's SSE and AVX2 forms against its scalar formula, byte for
// byte.
#include "stages/mix/mixup.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "stages/core/rng.h"
#include "stages/mix/internal/blend.h"

namespace flowloader {
namespace mix {
namespace {

constexpr int kC = 3, kH = 8, kW = 10;

std::vector<float> RandomImages(int64_t n, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(n) * kC * kH * kW);
  SampleRng rng(seed, 0, 0);
  for (float& v : x) v = static_cast<float>(rng.Uniform(-2.0, 2.0));
  return x;
}

float& At(std::vector<float>& x, int64_t i, int c, int y, int xx) {
  return x[((static_cast<size_t>(i) * kC + c) * kH + y) * kW + xx];
}

// TimmImages is timm's _mix_elem / _mix_pair / _mix_batch on explicit per-row params:
// x_orig = x.clone(); row i (when its λ != 1) is x_orig[i]·λ + x_orig[j]·(1-λ), or takes
// x_orig[j][:, yl:yh, xl:xh] (j = N-1-i). With `pair`, rows past N/2 take their pair's
// params, as _mix_pair writes x[j] from the same draw.
std::vector<float> TimmImages(std::vector<float> x, const std::vector<RowMix>& mix) {
  const std::vector<float> orig = x;
  const int64_t n = static_cast<int64_t>(mix.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = n - 1 - i;
    const RowMix& m = mix[static_cast<size_t>(i)];
    if (m.lam == 1.0 && !m.cutmix) continue;
    for (int c = 0; c < kC; ++c) {
      for (int y = 0; y < kH; ++y) {
        for (int xx = 0; xx < kW; ++xx) {
          const size_t a = ((static_cast<size_t>(i) * kC + c) * kH + y) * kW + xx;
          const size_t b = ((static_cast<size_t>(j) * kC + c) * kH + y) * kW + xx;
          if (m.cutmix) {
            if (y >= m.box.yl && y < m.box.yh && xx >= m.box.xl && xx < m.box.xh) x[a] = orig[b];
          } else {
            x[a] = orig[a] * static_cast<float>(m.lam) + orig[b] * static_cast<float>(1.0 - m.lam);
          }
        }
      }
    }
  }
  return x;
}

// TimmTargets is mixup_target: y1 = one_hot(target, on, off), y2 = one_hot(target.flip(0)),
// y1·λ + y2·(1-λ), off = s/C, on = 1 - s + off.
std::vector<float> TimmTargets(const std::vector<int64_t>& labels, const std::vector<RowMix>& mix,
                               int classes, double smoothing) {
  const int64_t n = static_cast<int64_t>(labels.size());
  const double off_d = smoothing / classes;
  const float off = static_cast<float>(off_d), on = static_cast<float>(1.0 - smoothing + off_d);
  std::vector<float> out(static_cast<size_t>(n) * classes);
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < classes; ++k) {
      const float y1 = labels[static_cast<size_t>(i)] == k ? on : off;
      const float y2 = labels[static_cast<size_t>(n - 1 - i)] == k ? on : off;
      const double lam = mix[static_cast<size_t>(i)].lam;
      out[static_cast<size_t>(i) * classes + k] =
          y1 * static_cast<float>(lam) + y2 * static_cast<float>(1.0 - lam);
    }
  }
  return out;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_NEAR(got[k], want[k], 1e-6f * (1.0f + std::fabs(want[k]))) << "element " << k;
  }
}

RowMix Blend(double lam) { return RowMix{lam, false, {}}; }
RowMix Cut(double lam, Box box) { return RowMix{lam, true, box}; }

struct KernelCase {
  const char* name;
  std::vector<RowMix> mix;
};

class TimmKernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(TimmKernelTest, InPlaceImagesAndTargetsEqualTimmOnAClonedBatch) {
  const std::vector<RowMix>& mix = GetParam().mix;
  const int64_t n = static_cast<int64_t>(mix.size());
  std::vector<float> x = RandomImages(n, 7);
  const std::vector<float> want = TimmImages(x, mix);
  MixImages(mix, kH, kW, x.data(), n, kC, kH, kW);  // One buffer: in place.
  ExpectClose(x, want);
  // The same float operations in the same order: the same bytes, whichever kernel ran.
  EXPECT_EQ(0, std::memcmp(x.data(), want.data(), x.size() * sizeof(float)));

  std::vector<int64_t> labels;
  for (int64_t i = 0; i < n; ++i) labels.push_back((i * 7 + 3) % 5);
  labels[0] = labels[static_cast<size_t>(n - 1)];  // A pair with the same class.
  std::vector<float> targets(static_cast<size_t>(n) * 5);
  MixTargets(mix, labels.data(), n, 5, 0.1, targets.data());
  ExpectClose(targets, TimmTargets(labels, mix, 5, 0.1));
  for (int64_t i = 0; i < n; ++i) {  // Every soft target sums to 1.
    double sum = 0;
    for (int k = 0; k < 5; ++k) sum += targets[static_cast<size_t>(i) * 5 + k];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

const Box kBox{2, 6, 3, 9};
const Box kOther{0, 3, 5, 10};

INSTANTIATE_TEST_SUITE_P(
    Modes, TimmKernelTest,
    ::testing::Values(
        // batch: one λ for all rows (timm's _mix_batch).
        KernelCase{"batch_mixup", std::vector<RowMix>(6, Blend(0.3))},
        KernelCase{"batch_cutmix", std::vector<RowMix>(6, Cut(0.7, kBox))},
        KernelCase{"batch_unmixed", std::vector<RowMix>(4, RowMix{})},
        // pair: rows i and N-1-i share a draw (_mix_pair).
        KernelCase{"pair", {Blend(0.25), Cut(0.4, kBox), RowMix{}, RowMix{}, Cut(0.4, kBox),
                            Blend(0.25)}},
        // elem: each row its own draw, partners with different kinds (_mix_elem).
        KernelCase{"elem", {Blend(0.25), Cut(0.4, kBox), Blend(0.9), Cut(0.55, kOther),
                            RowMix{}, Cut(0.8, kOther)}},
        // An odd batch: the middle row is its own partner.
        KernelCase{"odd", {Blend(0.6), Cut(0.5, kBox), Blend(0.1), Cut(0.3, kOther),
                           Blend(0.6)}}),
    [](const ::testing::TestParamInfo<KernelCase>& info) { return info.param.name; });

// The blend kernel's vector forms round every element as the scalar formula does, over
// lengths that leave every possible tail, and every swap kernel exchanges whole spans.
TEST(BlendKernelTest, EveryIsaGivesTheScalarKernelsBytes) {
  for (size_t n : {0, 1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 1027, 3 * 176 * 176}) {
    SCOPED_TRACE(n);
    SampleRng rng(n, 1, 2);
    std::vector<float> a(n), b(n);
    for (size_t k = 0; k < n; ++k) {
      a[k] = static_cast<float>(rng.Uniform(-2.5, 2.7));
      b[k] = static_cast<float>(rng.Uniform(-2.5, 2.7));
    }
    const float la = 0.8173f, oa = static_cast<float>(1.0 - 0.8173), lb = 0.31f, ob = 0.69f;
    std::vector<float> want_a = a, want_b = b;
    internal::BlendPairScalar(want_a.data(), want_b.data(), n, la, oa, lb, ob);
    using Kernel = void (*)(float*, float*, size_t, float, float, float, float);
    std::vector<std::pair<const char*, Kernel>> kernels = {{"sse", internal::BlendPairSse},
                                                           {"dispatch", internal::BlendPair}};
    if (internal::HasAvx2()) kernels.push_back({"avx2", internal::BlendPairAvx2});
    for (const auto& [name, kernel] : kernels) {
      std::vector<float> got_a = a, got_b = b;
      kernel(got_a.data(), got_b.data(), n, la, oa, lb, ob);
      if (n == 0) continue;  // memcmp may not be given an empty vector's null data().
      EXPECT_EQ(0, std::memcmp(got_a.data(), want_a.data(), n * sizeof(float))) << name;
      EXPECT_EQ(0, std::memcmp(got_b.data(), want_b.data(), n * sizeof(float))) << name;
    }
    if (n > 0) {  // And the scalar kernel is the formula.
      EXPECT_EQ(want_a[n - 1], a[n - 1] * la + b[n - 1] * oa);
      EXPECT_EQ(want_b[0], b[0] * lb + a[0] * ob);
    }
  }
}

TEST(BlendKernelTest, SwapSpanExchangesTheSpans) {
  for (size_t n : {0, 5, 8, 17, 2500}) {
    std::vector<float> a(n), b(n);
    for (size_t k = 0; k < n; ++k) {
      a[k] = static_cast<float>(k);
      b[k] = -static_cast<float>(k) - 0.5f;
    }
    const std::vector<float> a0 = a, b0 = b;
    using Kernel = void (*)(float*, float*, size_t);
    std::vector<Kernel> kernels = {internal::SwapSpan, internal::SwapSpanSse};
    if (internal::HasAvx2()) kernels.push_back(internal::SwapSpanAvx2);
    for (Kernel kernel : kernels) {
      std::vector<float> x = a, y = b;
      kernel(x.data(), y.data(), n);
      EXPECT_EQ(x, b0);
      EXPECT_EQ(y, a0);
    }
  }
}

// A wide image (vector bodies and tails on every line and row): MixImages gives the
// reference's bytes in each mode's mix of kinds, and another view's scaled box.
TEST(TimmKernelWideTest, WideRowsGiveTimmsBytes) {
  constexpr int kWc = 3, kWh = 11, kWw = 37;
  const Box box{3, 9, 5, 30};
  const std::vector<std::vector<RowMix>> cases = {
      std::vector<RowMix>(6, Blend(0.3)),
      std::vector<RowMix>(6, Cut(0.5, box)),
      {Blend(0.25), Cut(0.4, box), RowMix{}, Cut(0.7, Box{0, 4, 0, 37}), Blend(0.9)},
  };
  for (const std::vector<RowMix>& mix : cases) {
    const int64_t n = static_cast<int64_t>(mix.size());
    std::vector<float> x(static_cast<size_t>(n) * kWc * kWh * kWw);
    SampleRng rng(9, 0, 0);
    for (float& v : x) v = static_cast<float>(rng.Uniform(-2.0, 2.0));
    std::vector<float> want = x;
    const size_t row = static_cast<size_t>(kWc) * kWh * kWw;
    for (int64_t i = 0; i < n; ++i) {
      const RowMix& m = mix[static_cast<size_t>(i)];
      const size_t a0 = static_cast<size_t>(i) * row, b0 = static_cast<size_t>(n - 1 - i) * row;
      for (int c = 0; c < kWc; ++c)
        for (int y = 0; y < kWh; ++y)
          for (int xx = 0; xx < kWw; ++xx) {
            const size_t off = (static_cast<size_t>(c) * kWh + y) * kWw + xx;
            if (m.cutmix) {
              if (y >= m.box.yl && y < m.box.yh && xx >= m.box.xl && xx < m.box.xh)
                want[a0 + off] = x[b0 + off];
            } else if (m.lam != 1.0) {
              want[a0 + off] = x[a0 + off] * static_cast<float>(m.lam) +
                               x[b0 + off] * static_cast<float>(1.0 - m.lam);
            }
          }
    }
    MixImages(mix, kWh, kWw, x.data(), n, kWc, kWh, kWw);
    EXPECT_EQ(0, std::memcmp(x.data(), want.data(), x.size() * sizeof(float)));
  }
}

TEST(TorchvisionReferenceTest, TwoRowsMatchRandomMixupAndRandomCutmix) {
  // torchvision rolls the batch by one: for two rows roll(1) is flip, so its RandomMixup
  // is batch·λ + rolled·(1-λ) and its RandomCutmix copies the rolled box; its box is
  // [r_y - int(0.5·√(1-λ)·H), r_y + ...) clamped, λ corrected from the area.
  const double lam = 0.62;
  std::vector<float> x = RandomImages(2, 11);
  std::vector<float> want = x;
  for (int c = 0; c < kC; ++c)
    for (int y = 0; y < kH; ++y)
      for (int xx = 0; xx < kW; ++xx) {
        At(want, 0, c, y, xx) = At(x, 0, c, y, xx) * 0.62f + At(x, 1, c, y, xx) * (1.0f - 0.62f);
        At(want, 1, c, y, xx) = At(x, 1, c, y, xx) * 0.62f + At(x, 0, c, y, xx) * (1.0f - 0.62f);
      }
  std::vector<float> got = x;
  MixImages({Blend(lam), Blend(lam)}, kH, kW, got.data(), 2, kC, kH, kW);
  ExpectClose(got, want);

  const int r_x = 7, r_y = 1;
  const double r = 0.5 * std::sqrt(1.0 - lam);
  const int w_half = static_cast<int>(r * kW), h_half = static_cast<int>(r * kH);
  const Box tv{std::max(r_y - h_half, 0), std::min(r_y + h_half, kH), std::max(r_x - w_half, 0),
               std::min(r_x + w_half, kW)};
  const double tv_lam = 1.0 - static_cast<double>(tv.area()) / (kW * kH);
  want = x;
  for (int c = 0; c < kC; ++c)
    for (int y = tv.yl; y < tv.yh; ++y)
      for (int xx = tv.xl; xx < tv.xh; ++xx) {
        At(want, 0, c, y, xx) = At(x, 1, c, y, xx);
        At(want, 1, c, y, xx) = At(x, 0, c, y, xx);
      }
  got = x;
  const std::vector<RowMix> cut = {Cut(tv_lam, tv), Cut(tv_lam, tv)};
  MixImages(cut, kH, kW, got.data(), 2, kC, kH, kW);
  ExpectClose(got, want);
  // Its targets: one_hot·λ + rolled one_hot·(1-λ), no smoothing.
  const int64_t labels[2] = {1, 3};
  float targets[8];
  MixTargets(cut, labels, 2, 4, 0.0, targets);
  const float l = static_cast<float>(tv_lam), o = static_cast<float>(1.0 - tv_lam);
  const float expected[8] = {0, l, 0, o, 0, o, 0, l};
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(targets[k], expected[k], 1e-7f) << k;
}

TEST(LabelSmoothingTest, UnmixedRowsAreSmoothedOneHots) {
  const int64_t labels[3] = {0, 2, 1};
  float targets[9];
  MixTargets(std::vector<RowMix>(3), labels, 3, 3, 0.3, targets);
  // off = 0.1, on = 0.8 (timm: off = s/C, on = 1 - s + off).
  const float expected[9] = {0.8f, 0.1f, 0.1f, 0.1f, 0.1f, 0.8f, 0.1f, 0.8f, 0.1f};
  for (int k = 0; k < 9; ++k) EXPECT_NEAR(targets[k], expected[k], 1e-7f) << k;
}

// BetaCdfBetween is P(lo < X < hi) for X ~ Beta(a, a), by Simpson's rule on the density
// (lo > 0 and hi < 1: no singularity inside).
double BetaMass(double a, double lo, double hi) {
  const double norm = std::tgamma(2 * a) / (std::tgamma(a) * std::tgamma(a));
  const int steps = 2000;
  const double h = (hi - lo) / steps;
  double sum = 0;
  for (int k = 0; k <= steps; ++k) {
    const double x = lo + k * h;
    const double f = norm * std::pow(x, a - 1) * std::pow(1 - x, a - 1);
    sum += f * (k == 0 || k == steps ? 1 : (k % 2 == 1 ? 4 : 2));
  }
  return sum * h / 3;
}

// ChiSquareOverDeciles tests 10 000 λ draws (one per batch, keyed by the batch number as
// the stage keys them) against Beta(α, α) in ten equal-width bins.
void ExpectBeta(const MixupOptions& o, double alpha, bool want_cutmix) {
  constexpr int kBatches = 10000;
  std::vector<int> counts(10, 0);
  for (int b = 0; b < kBatches; ++b) {
    SampleRng rng(42, 0, static_cast<uint64_t>(b), 99);
    const RowMix m = DrawLam(o, rng);
    EXPECT_EQ(m.cutmix, want_cutmix);
    ASSERT_GE(m.lam, 0.0);
    ASSERT_LE(m.lam, 1.0);
    counts[std::min(9, static_cast<int>(m.lam * 10))]++;
  }
  double inner = 0, chi2 = 0;
  std::vector<double> p(10);
  for (int k = 1; k < 9; ++k) inner += (p[k] = BetaMass(alpha, k / 10.0, (k + 1) / 10.0));
  p[0] = p[9] = (1 - inner) / 2;  // Symmetric tails.
  for (int k = 0; k < 10; ++k) {
    const double e = p[k] * kBatches;
    chi2 += (counts[k] - e) * (counts[k] - e) / e;
  }
  // 9 degrees of freedom: P(χ² > 27.88) = 0.001.
  EXPECT_LT(chi2, 27.88) << "alpha " << alpha;
}

TEST(DrawTest, LambdaFollowsBetaAlphaAlphaOver10000Batches) {
  MixupOptions mixup;
  mixup.mixup_alpha = 0.2;  // torchvision v2's mixup.
  ExpectBeta(mixup, 0.2, false);
  MixupOptions deit;
  deit.mixup_alpha = 0.8;  // DeiT's mixup.
  ExpectBeta(deit, 0.8, false);
  MixupOptions cutmix;
  cutmix.mixup_alpha = 0.0;
  cutmix.cutmix_alpha = 1.0;  // Uniform.
  ExpectBeta(cutmix, 1.0, true);
}

TEST(DrawTest, SwitchProbAndProbPickCutmixAndSkipAtTheirRates) {
  MixupOptions o;
  o.mixup_alpha = 0.8;
  o.cutmix_alpha = 1.0;
  o.switch_prob = 0.5;
  o.prob = 0.25;
  int mixed = 0, cut = 0;
  for (int b = 0; b < 10000; ++b) {
    SampleRng rng(1, 2, static_cast<uint64_t>(b), 5);
    const RowMix m = DrawLam(o, rng);
    mixed += m.lam != 1.0;
    cut += m.cutmix;
  }
  EXPECT_NEAR(mixed / 10000.0, 0.25, 0.02);
  EXPECT_NEAR(cut / static_cast<double>(mixed), 0.5, 0.04);
}

TEST(DrawTest, CutmixBoxesLieInTheImageAndTheirAreaGivesLambda) {
  MixupOptions o;
  o.mixup_alpha = 0.0;
  o.cutmix_alpha = 1.0;
  for (bool minmax : {false, true}) {
    o.has_minmax = minmax;
    o.minmax_lo = 0.2;
    o.minmax_hi = 0.8;
    for (int b = 0; b < 2000; ++b) {
      SampleRng rng(3, 0, static_cast<uint64_t>(b));
      const std::vector<RowMix> mix = DrawMix(o, 4, 224, 160, rng);
      const RowMix& m = mix[0];
      if (m.lam == 1.0 && !m.cutmix) continue;  // λ drawn as exactly 1: unmixed.
      ASSERT_TRUE(m.cutmix);
      EXPECT_LE(0, m.box.yl);
      EXPECT_LE(m.box.yl, m.box.yh);
      EXPECT_LE(m.box.yh, 224);
      EXPECT_LE(0, m.box.xl);
      EXPECT_LE(m.box.xl, m.box.xh);
      EXPECT_LE(m.box.xh, 160);
      EXPECT_DOUBLE_EQ(m.lam, 1.0 - m.box.area() / (224.0 * 160.0));  // correct_lam.
      if (minmax) {
        EXPECT_GE(m.box.yh - m.box.yl, static_cast<int>(224 * 0.2));
        EXPECT_LT(m.box.yh - m.box.yl, static_cast<int>(224 * 0.8));
      }
      for (const RowMix& r : mix) EXPECT_EQ(r.box.area(), m.box.area());  // Batch mode.
    }
  }
}

TEST(DrawTest, WithoutCorrectLamAnUnclippedBoxHasTimmsSide) {
  // rand_bbox: cut = int(side·√(1-λ)), the box [c - cut//2, c + cut//2).
  MixupOptions o;
  o.mixup_alpha = 0.0;
  o.cutmix_alpha = 1.0;
  o.correct_lam = false;
  int checked = 0;
  for (int b = 0; b < 500; ++b) {
    SampleRng rng(4, 0, static_cast<uint64_t>(b));
    const RowMix m = DrawMix(o, 2, 100, 60, rng)[0];
    if (!m.cutmix || m.box.yl == 0 || m.box.yh == 100 || m.box.xl == 0 || m.box.xh == 60) continue;
    const double ratio = std::sqrt(1.0 - m.lam);
    EXPECT_EQ(m.box.yh - m.box.yl, static_cast<int>(100 * ratio) / 2 * 2);
    EXPECT_EQ(m.box.xh - m.box.xl, static_cast<int>(60 * ratio) / 2 * 2);
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

TEST(DrawTest, PairModeSharesADrawAndElemModeDrawsPerRow) {
  MixupOptions o;
  o.mixup_alpha = 1.0;
  o.mode = MixMode::kPair;
  SampleRng rng(5, 0, 0);
  const std::vector<RowMix> pair = DrawMix(o, 7, 8, 8, rng);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pair[i].lam, pair[6 - i].lam);
  EXPECT_EQ(pair[3].lam, 1.0);  // The odd batch's middle row is left alone.
  EXPECT_NE(pair[0].lam, pair[1].lam);
  o.mode = MixMode::kElem;
  const std::vector<RowMix> elem = DrawMix(o, 6, 8, 8, rng);
  EXPECT_NE(elem[0].lam, elem[5].lam);
  for (const RowMix& m : elem) EXPECT_EQ(m.lam, static_cast<double>(static_cast<float>(m.lam)));
}

TEST(ScaleBoxTest, AnotherViewsBoxCutsTheSameShare) {
  const Box b = ScaleBox(Box{56, 168, 0, 112}, 224, 224, 96, 96);
  EXPECT_EQ(b.yl, 24);
  EXPECT_EQ(b.yh, 72);
  EXPECT_EQ(b.xl, 0);
  EXPECT_EQ(b.xh, 48);
}

}  // namespace
}  // namespace mix
}  // namespace flowloader
