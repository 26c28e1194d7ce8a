// libjpeg_private.h: the few libjpeg-turbo 2.x private structs flowloader reaches into,
// mirrored here because jpegint.h and jdsample.h are not installed, and the guard that
// says whether this build may use them.
//
// libjpeg keeps its decompression modules behind public pointers to structs that only
// its private headers define (cinfo->entropy, ->upsample, ->cconvert). fast_entropy.h
// puts flowloader's Huffman decoder in the entropy slot; planar_ycc.h swaps two methods
// of the upsampler and the colour deconverter. Their 2.x layouts are below; 3.x added
// members, so everything here is used only when FLOWLOADER_LIBJPEG_TURBO_2 is 1, and
// the callers fall back to plain libjpeg otherwise.
//
// Thread-safety: type definitions only.
#ifndef FLOWLOADER_STAGES_DECODE_INTERNAL_LIBJPEG_PRIVATE_H_
#define FLOWLOADER_STAGES_DECODE_INTERNAL_LIBJPEG_PRIVATE_H_

#include <cstdio>  // jpeglib.h needs FILE.

#include "jpeglib.h"

#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2000000 && \
    LIBJPEG_TURBO_VERSION_NUMBER < 3000000
#define FLOWLOADER_LIBJPEG_TURBO_2 1
#else
#define FLOWLOADER_LIBJPEG_TURBO_2 0
#endif

namespace flowloader::decode::internal {

#if FLOWLOADER_LIBJPEG_TURBO_2

// EntropyDecoderV2 is struct jpeg_entropy_decoder (jpegint.h).
struct EntropyDecoderV2 {
  void (*start_pass)(j_decompress_ptr cinfo);
  boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW* MCU_data);
  boolean insufficient_data;
};

// UpsamplerV2 is struct jpeg_upsampler (jpegint.h).
struct UpsamplerV2 {
  void (*start_pass)(j_decompress_ptr cinfo);
  void (*upsample)(j_decompress_ptr cinfo, JSAMPIMAGE input_buf,
                   JDIMENSION* in_row_group_ctr, JDIMENSION in_row_groups_avail,
                   JSAMPARRAY output_buf, JDIMENSION* out_row_ctr, JDIMENSION out_rows_avail);
  boolean need_context_rows;
};

// SeparateUpsamplerV2 is jdsample.c's my_upsampler (jdsample.h), which extends it.
using UpsampleOneV2 = void (*)(j_decompress_ptr cinfo, jpeg_component_info* compptr,
                               JSAMPARRAY input_data, JSAMPARRAY* output_data_ptr);
struct SeparateUpsamplerV2 {
  UpsamplerV2 pub;
  JSAMPARRAY color_buf[MAX_COMPONENTS];
  UpsampleOneV2 methods[MAX_COMPONENTS];
  int next_row_out;
  JDIMENSION rows_to_go;
  int rowgroup_height[MAX_COMPONENTS];
  UINT8 h_expand[MAX_COMPONENTS];
  UINT8 v_expand[MAX_COMPONENTS];
};

// ColorDeconverterV2 is struct jpeg_color_deconverter (jpegint.h).
struct ColorDeconverterV2 {
  void (*start_pass)(j_decompress_ptr cinfo);
  void (*color_convert)(j_decompress_ptr cinfo, JSAMPIMAGE input_buf, JDIMENSION input_row,
                        JSAMPARRAY output_buf, int num_rows);
};

#endif  // FLOWLOADER_LIBJPEG_TURBO_2

}  // namespace flowloader::decode::internal

#endif  // FLOWLOADER_STAGES_DECODE_INTERNAL_LIBJPEG_PRIVATE_H_
