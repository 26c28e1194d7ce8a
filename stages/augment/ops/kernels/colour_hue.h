// colour_hue.h: the conversions behind AdjustHue (colour_hue.cc), exposed for
// the tests that check the table-driven path against the literal restatement of
// PIL's C code.
//
// Thread-safety: pure functions (the tables are built once, thread-safely).
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_HUE_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_HUE_H_

#include <cstdint>

#include "stages/core/image.h"

namespace flowloader::augment::kernels::internal {

// RgbToHsvLiteral is PIL 9.4's rgb2hsv_row (libImaging/Convert.c) line for
// line: one RGB pixel to PIL's 8-bit H, S, V.
void RgbToHsvLiteral(const uint8_t* rgb, uint8_t* hsv);
// HsvToRgbLiteral is PIL 9.4's hsv2rgb for one pixel.
void HsvToRgbLiteral(const uint8_t* hsv, uint8_t* rgb);
// RgbToHsvFast is RgbToHsvLiteral by table lookups (what AdjustHue uses).
void RgbToHsvFast(const uint8_t* rgb, uint8_t* hsv);
// AdjustHuePortable is AdjustHue without the vector paths (for the tests of every path).
void AdjustHuePortable(Image& img, double hue_factor);
// HuePath names the paths AdjustHue may take (it takes the widest this CPU runs), so
// that a test checks each one on one machine.
enum class HuePath { kPortable, kAvx2, kAvx512 };
// HuePathRuns: whether this build and CPU run `path` (kPortable always).
bool HuePathRuns(HuePath path);
// AdjustHueOn is AdjustHue by `path` (one that HuePathRuns): its whole groups of
// pixels (8 for kAvx2, 16 for kAvx512), the rest by the portable path.
void AdjustHueOn(HuePath path, Image& img, double hue_factor);
// HueShift is torchvision's np.uint8(hue_factor * 255): the value added to H,
// mod 256.
int HueShift(double hue_factor);

}  // namespace flowloader::augment::kernels::internal

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_HUE_H_
