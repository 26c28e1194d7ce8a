// label_png.h: decodes a PNG label map (semantic segmentation) to one uint8 class index
// per pixel, as PIL's Image.open(mask) gives them to torchvision's references: a palette
// PNG (VOC's, mode "P") gives each pixel's palette index, not its colour; an 8-bit (or
// 1/2/4-bit) grayscale PNG (ADE20K's, Cityscapes' *_labelIds) its value. Colour PNGs,
// 16-bit samples and alpha are refused in one line: their pixels are no class index.
//
// Thread-safety: a pure function; each call owns its libpng state.
#ifndef FLOWLOADER_STAGES_DECODE_LABEL_PNG_H_
#define FLOWLOADER_STAGES_DECODE_LABEL_PNG_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace flowloader::decode {

// DecodeLabelPng writes the map's width, height and width × height indices (row-major).
// A file that is not a PNG, is damaged, or holds more than max_pixels pixels fails with
// a SampleError naming the reason (corrupt, unsupported, too_many_pixels).
absl::Status DecodeLabelPng(absl::string_view bytes, int64_t max_pixels, int* width,
                            int* height, std::vector<uint8_t>* labels);

}  // namespace flowloader::decode

#endif  // FLOWLOADER_STAGES_DECODE_LABEL_PNG_H_
