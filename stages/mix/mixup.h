// mixup.h: MixUp, CutMix and label smoothing over a collated batch, in place, with timm's
// `Mixup` semantics (timm/data/mixup.py, which DeiT and timm's recipes use).
//
// Row i is mixed with its partner N-1-i (timm flips the batch). Drawing (DrawMix) is
// separate from applying (MixImages, MixTargets), so the kernels can be checked against
// timm's formulas on a fixed λ and box, and λ's distribution on its own.
//
// In place without a second batch buffer: rows i and N-1-i are rewritten together, each
// element of both computed from both originals (timm clones the batch for this).
//
// Where this differs from timm, and why:
// - Random draws come from a SampleRng keyed by (seed, epoch, batch number), not numpy's
//   global stream: same distributions, reproducible for any num_workers and on resume.
// - timm asserts an even batch. Here an odd batch's middle row is its own partner: in
//   batch and elem mode it is mixed with itself (no change beyond float rounding), in
//   pair mode it is left alone. (The mixup_cutmix stage refuses an odd batch_size in pair
//   mode; a last partial batch or skipped samples can still make one odd.)
// - rand_bbox_minmax calls np.random.randint(lo, hi), which raises when lo == hi (a tiny
//   image); here the cut is then lo.
// - torchvision's reference RandomMixup/RandomCutmix pair row i with i-1 (roll) instead
//   of N-1-i (flip), and CutMix's half-side is int(0.5·√(1-λ)·W) instead of
//   int(√(1-λ)·W) // 2; over a shuffled batch the pairing has the same distribution.
//   With two rows roll and flip agree (the tests check that case exactly).
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_MIX_MIXUP_H_
#define FLOWLOADER_STAGES_MIX_MIXUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stages/core/rng.h"

namespace flowloader {
namespace mix {

enum class MixMode {
  kBatch,  // One λ (and box) for the whole batch.
  kPair,   // One per pair (i, N-1-i): both rows of a pair share it.
  kElem,   // One per row.
};

// MixupOptions are timm's Mixup arguments, with its defaults.
struct MixupOptions {
  double mixup_alpha = 1.0;   // Beta(α, α) for mixup; mixup is on when > 0.
  double cutmix_alpha = 0.0;  // Beta(α, α) for cutmix; on when > 0 (1.0 with minmax).
  // cutmix_minmax: the box's side as a fraction of the image's, drawn in [lo, hi);
  // replaces the α-derived box and forces cutmix on (timm sets cutmix_alpha = 1).
  bool has_minmax = false;
  double minmax_lo = 0.0;
  double minmax_hi = 0.0;
  double prob = 1.0;          // Probability a batch (or pair, or row) is mixed at all.
  double switch_prob = 0.5;   // With both on, probability of cutmix instead of mixup.
  MixMode mode = MixMode::kBatch;
  bool correct_lam = true;    // λ from the clipped box's area (always with minmax).
  double label_smoothing = 0.0;
  int num_classes = 0;        // Columns of the targets; > 0.

  double effective_cutmix_alpha() const { return has_minmax ? 1.0 : cutmix_alpha; }
};

// Box is a CutMix box [yl, yh) × [xl, xh) in an image's pixels.
struct Box {
  int yl = 0, yh = 0, xl = 0, xh = 0;
  int64_t area() const { return int64_t{yh - yl} * (xh - xl); }
};

// RowMix is what one row becomes: lam × itself + (1 - lam) × its partner (mixup), or its
// partner's pixels inside `box` (cutmix; lam is then the share it keeps). lam == 1 and
// no cutmix: unchanged.
struct RowMix {
  double lam = 1.0;
  bool cutmix = false;
  Box box;
};

// DrawLam is timm's _params_per_batch: (λ, use_cutmix) for one batch, pair or row.
RowMix DrawLam(const MixupOptions& o, SampleRng& rng);
// CutmixBox is timm's cutmix_bbox_and_lam on an h × w image: draws `row`'s box from its
// λ (or from minmax) and corrects λ to the box's area when correct_lam (or minmax).
void CutmixBox(const MixupOptions& o, int h, int w, SampleRng& rng, RowMix* row);
// DrawMix is every row's mix for a batch of `rows` rows of h × w images in o.mode.
std::vector<RowMix> DrawMix(const MixupOptions& o, int64_t rows, int h, int w, SampleRng& rng);

// ScaleBox maps a box drawn on an ref_h × ref_w image to an h × w one (another view's
// size): each edge scaled and floored, so the same share of the image is cut.
Box ScaleBox(const Box& box, int ref_h, int ref_w, int h, int w);

// MixImages applies `mix` (drawn on ref_h × ref_w) to float32 [n, c, h, w] images at `x`,
// in place. A pair that both blend is one vector pass over the two whole rows (SSE, or
// AVX2 where the CPU has it; internal/blend.h); CutMix lines are span swaps and copies.
// Every path gives the scalar formula's bytes.
void MixImages(const std::vector<RowMix>& mix, int ref_h, int ref_w, float* x, int64_t n,
               int c, int h, int w);

// MixTargets writes float32 [n, classes] targets: timm's mixup_target, row i being
// lam_i × smooth(one_hot(labels[i])) + (1 - lam_i) × smooth(one_hot(labels[n-1-i])),
// where smooth puts 1 - s + s/classes on the class and s/classes elsewhere. Every label
// is in [0, classes).
void MixTargets(const std::vector<RowMix>& mix, const int64_t* labels, int64_t n, int classes,
                double smoothing, float* targets);

// ParseMode reads "batch", "pair" or "elem"; false for anything else.
bool ParseMode(const std::string& text, MixMode* mode);

}  // namespace mix
}  // namespace flowloader

#endif  // FLOWLOADER_STAGES_MIX_MIXUP_H_
