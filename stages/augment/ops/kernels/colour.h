// colour.h: torchvision 0.14's colour functionals on PIL RGB images, restated on
// interleaved uint8 RGB (stages/core/image.h), with PIL's own arithmetic so that the
// results are PIL's bytes (or, where PIL converts through HSV, as close as stated).
//
// Shared by the colour ops (ops/color_jitter.cc, ...) and the augment policies
// (ops/trivial_augment_wide.cc, ...). Each works in place on a 3-channel image.
//
// Thread-safety: pure functions of their arguments.
#ifndef FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_H_
#define FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_H_

#include <cstdint>

#include "stages/core/image.h"

namespace flowloader::augment::kernels {

// F.adjust_brightness: ImageEnhance.Brightness, a blend with black.
void AdjustBrightness(Image& img, double factor);
// F.adjust_contrast: ImageEnhance.Contrast, a blend with the mean of the L image.
void AdjustContrast(Image& img, double factor);
// F.adjust_saturation: ImageEnhance.Color, a blend with the L image.
void AdjustSaturation(Image& img, double factor);
// F.adjust_hue: PIL's HSV conversion, hue shifted by hue_factor in [-0.5, 0.5].
void AdjustHue(Image& img, double hue_factor);
// F.adjust_sharpness: ImageEnhance.Sharpness, a blend with PIL's SMOOTH-filtered image.
void AdjustSharpness(Image& img, double factor);
// F.rgb_to_grayscale(num_output_channels=3): PIL's L conversion, in all three channels.
void Grayscale(Image& img);
// F.posterize: keeps the top `bits` bits of each value.
void Posterize(Image& img, int bits);
// F.solarize: inverts every value >= threshold.
void Solarize(Image& img, double threshold);
// F.autocontrast: ImageOps.autocontrast, each channel stretched to 0..255.
void Autocontrast(Image& img);
// F.equalize: ImageOps.equalize, each channel's histogram equalized.
void Equalize(Image& img);
// F.invert: 255 - value.
void Invert(Image& img);

// The tables of the point ops above (Op::PointTables): out = lut[value], the same bytes
// as the kernel's own pass. Brightness, Posterize, Solarize and Invert use one table for
// the three channels; Autocontrast and Equalize make one per channel from the counts of
// each channel's values (`h`, Image.histogram's; Autocontrast reads only the lowest and
// highest value counted).
void BrightnessTable(double factor, uint8_t (&lut)[256]);
void PosterizeTable(int bits, uint8_t (&lut)[256]);
void SolarizeTable(double threshold, uint8_t (&lut)[256]);
void InvertTable(uint8_t (&lut)[256]);
void AutocontrastTables(const uint32_t (&h)[3][256], uint8_t (&lut)[3][256]);
void EqualizeTables(const uint32_t (&h)[3][256], uint8_t (&lut)[3][256]);

}  // namespace flowloader::augment::kernels

#endif  // FLOWLOADER_STAGES_AUGMENT_OPS_KERNELS_COLOUR_H_
