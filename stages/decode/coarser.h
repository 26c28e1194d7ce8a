// coarser.h: a decoded image at half its scale, for a view that needs fewer pixels than
// the decode it shares with other views.
//
// With several views a sample is decoded once, at the finest scale any of them needs
// (graph/builtin_stages.cc, UnionRequest). A view whose own request would have been
// decoded at half that scale or less (DINO's 96² local crops beside its 224² global
// ones) would then resample 2–4× more pixels per side than when decoded alone. For
// such a view the image is halved first, each pixel the mean of a 2×2 block (what a JPEG
// decoded at half the DCT scale approximates, and what PNG decoding already does for a
// small target: internal/region_rows.h), so its resize reads what it would have read
// alone, and the halved image serves every such view of the sample.
//
// Thread-safety: pure functions.
#ifndef FLOWLOADER_STAGES_DECODE_COARSER_H_
#define FLOWLOADER_STAGES_DECODE_COARSER_H_

#include "stages/decode/decoder.h"

namespace flowloader::decode {

// The most halvings HalvingsFor proposes (a quarter of the scale per side).
inline constexpr int kMaxHalvings = 2;

// HalvingsFor is how many times `decoded` may be halved while `request`'s region keeps at
// least its target's pixels per side (the decoder's own rule for its DCT scale): 0 when
// it may not, or when `decoded` is not an RGB image; at most kMaxHalvings.
int HalvingsFor(const DecodedImage& decoded, const RegionRequest& request);

// HalveDecoded writes `in` (RGB) at half scale into `out`: each pixel the rounded mean of
// a 2×2 block, an odd last row or column paired with itself (so `covered` still spans
// `in`'s, half a pixel more there); the scale halves. `out`'s buffer is reused.
void HalveDecoded(const DecodedImage& in, DecodedImage* out);

}  // namespace flowloader::decode

#endif  // FLOWLOADER_STAGES_DECODE_COARSER_H_
