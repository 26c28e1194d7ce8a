// planar_ycc.h: makes libjpeg-turbo hand over a YCbCr JPEG's Y, Cb and Cr planes as
// stored (chroma not upsampled, no colour conversion) while keeping everything that
// works on output rows: cropping (jpeg_crop_scanline), skipping (jpeg_skip_scanlines)
// and the entropy decoder in use.
//
// libjpeg's public API offers that only as raw-data mode, which can neither crop nor
// skip. So this swaps two methods inside the decompressor instead: the separate
// upsampler's per-component method for Cb and Cr becomes "use the input rows as they
// are" (what libjpeg itself does for full-size components), and the colour
// deconverter's color_convert copies a row's Y samples into the output row and its Cb
// and Cr samples into the chroma planes. jpeg_skip_scanlines swaps color_convert for a
// no-op around rows it discards and then restores ours. The upsampler's struct is
// private to libjpeg (jdsample.h); its 2.x layout is mirrored in libjpeg_private.h and
// used only when compiled against libjpeg-turbo 2.x, as fast_entropy.h does.
//
// Thread-safety: state lives in the caller's PlanarYcc; one decode per object.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_PLANAR_YCC_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_PLANAR_YCC_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE.

#include "jpeglib.h"
#include "stages/decode/decoder.h"

namespace flowloader::decode::internal {

// PlanarYcc is the capture's state; trivially destructible, so it may live in a frame
// that libjpeg's error handling longjmps to.
struct PlanarYcc {
  uint8_t* y_base = nullptr;   // The Y plane's first row (output row rows_begin).
  size_t y_bytes = 0;          // Its size: width * height.
  int width = 0;               // Decoded (cropped) luma width.
  int rows_begin = 0;          // First output row decoded, in the scaled image.
  int chroma_row0 = 0;         // Chroma row (of the scaled image) of chroma plane row 0.
  int chroma_width = 0;
  int step_y = 1;
  uint8_t* cb_base = nullptr;  // Chroma planes' first rows.
  uint8_t* cr_base = nullptr;
};

// PlanForPlanarYcc decides whether this decompression can be captured as planes and,
// if so, sets chroma->step_x and step_y. Call after jpeg_start_decompress and
// jpeg_crop_scanline, with out_color_space JCS_RGB. False for anything but a
// 3-component YCbCr file whose luma needs no upsampling and whose Cb and Cr are both
// upsampled 1x or 2x (the same factors), or when libjpeg would use its merged
// upsampler (no fancy upsampling), or when the library is not libjpeg-turbo 2.x.
bool PlanForPlanarYcc(jpeg_decompress_struct* cinfo, ChromaPlanes* chroma);

// StartPlanarYcc sizes `out` for output rows [rows_begin, rows_end) of the (cropped)
// output width, as format kYcc with `chroma`'s steps, and installs the methods, keeping
// their state in `state`. Call after PlanForPlanarYcc and before any row is read or
// skipped; then read rows into out->image's Y rows as usual (jpeg_read_scanlines).
void StartPlanarYcc(jpeg_decompress_struct* cinfo, const ChromaPlanes& chroma,
                    int rows_begin, int rows_end, DecodedImage* out, PlanarYcc* state);

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_PLANAR_YCC_H_
