// planar_ycc.cc: see planar_ycc.h.
#include "stages/decode/internal/planar_ycc.h"

#include <cstring>

#include "jerror.h"
#include "stages/decode/internal/libjpeg_private.h"

namespace flowloader::decode::internal {
namespace {

#if FLOWLOADER_LIBJPEG_TURBO_2

#if JPEG_LIB_VERSION >= 70
int ScaledSize(const jpeg_component_info& c, bool vertical) {
  return vertical ? c.DCT_v_scaled_size : c.DCT_h_scaled_size;
}
int MinScaledSize(const jpeg_decompress_struct& d, bool vertical) {
  return vertical ? d.min_DCT_v_scaled_size : d.min_DCT_h_scaled_size;
}
#else
int ScaledSize(const jpeg_component_info& c, bool) { return c.DCT_scaled_size; }
int MinScaledSize(const jpeg_decompress_struct& d, bool) { return d.min_DCT_scaled_size; }
#endif

// Step is how many output pixels one of `c`'s samples covers along an axis, as
// libjpeg's jinit_upsampler computes it (an input row group against max_samp_factor
// output rows), or 0 if not a whole 1 or 2.
int Step(const jpeg_decompress_struct& d, const jpeg_component_info& c, bool vertical) {
  const int samp = vertical ? c.v_samp_factor : c.h_samp_factor;
  const int max = vertical ? d.max_v_samp_factor : d.max_h_samp_factor;
  const int in = samp * ScaledSize(c, vertical) / MinScaledSize(d, vertical);
  if (in <= 0 || max % in != 0) return 0;
  const int step = max / in;
  return step <= 2 ? step : 0;
}

// UseRowsAsTheyAre is libjpeg's fullsize_upsample: the "upsampled" rows are the input.
void UseRowsAsTheyAre(j_decompress_ptr, jpeg_component_info*, JSAMPARRAY input_data,
                      JSAMPARRAY* output_data_ptr) {
  *output_data_ptr = input_data;
}

// CaptureRows is the color_convert method: input_buf holds one row group (Y rows at
// output resolution, Cb/Cr rows at theirs), output_buf the caller's row pointers, which
// point into the Y plane, so their position says which output row each is.
void CaptureRows(j_decompress_ptr cinfo, JSAMPIMAGE input_buf, JDIMENSION input_row,
                 JSAMPARRAY output_buf, int num_rows) {
  const PlanarYcc* s = static_cast<const PlanarYcc*>(cinfo->client_data);
  for (int i = 0; i < num_rows; ++i) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(output_buf[i]) -
                         reinterpret_cast<uintptr_t>(s->y_base);
    if (at >= s->y_bytes || at % static_cast<uintptr_t>(s->width) != 0) {
      ERREXIT(cinfo, JERR_BAD_BUFFER_MODE);  // Not a row of our Y plane: never expected.
    }
    const int group_row = static_cast<int>(input_row) + i;
    std::memcpy(output_buf[i], input_buf[0][group_row], static_cast<size_t>(s->width));
    const int row = s->rows_begin + static_cast<int>(at / static_cast<uintptr_t>(s->width));
    // A chroma row once, from the first of its luma rows that is decoded.
    if (row % s->step_y != 0 && row != s->rows_begin) continue;
    const size_t c =
        static_cast<size_t>(row / s->step_y - s->chroma_row0) * s->chroma_width;
    const int chroma_row = group_row / s->step_y;
    std::memcpy(s->cb_base + c, input_buf[1][chroma_row], static_cast<size_t>(s->chroma_width));
    std::memcpy(s->cr_base + c, input_buf[2][chroma_row], static_cast<size_t>(s->chroma_width));
  }
}

#endif  // FLOWLOADER_LIBJPEG_TURBO_2

}  // namespace

bool PlanForPlanarYcc(jpeg_decompress_struct* cinfo, ChromaPlanes* chroma) {
#if FLOWLOADER_LIBJPEG_TURBO_2
  const jpeg_decompress_struct& d = *cinfo;
  if (d.num_components != 3 || d.jpeg_color_space != JCS_YCbCr ||
      d.out_color_space != JCS_RGB || !d.do_fancy_upsampling || d.raw_data_out ||
      d.quantize_colors) {
    return false;
  }
  const jpeg_component_info* c = d.comp_info;
  if (Step(d, c[0], false) != 1 || Step(d, c[0], true) != 1) return false;
  const int step_x = Step(d, c[1], false);
  const int step_y = Step(d, c[1], true);
  if (step_x == 0 || step_y == 0 || Step(d, c[2], false) != step_x ||
      Step(d, c[2], true) != step_y) {
    return false;
  }
  chroma->step_x = step_x;
  chroma->step_y = step_y;
  return true;
#else
  (void)cinfo;
  (void)chroma;
  return false;
#endif
}

void StartPlanarYcc(jpeg_decompress_struct* cinfo, const ChromaPlanes& chroma,
                    int rows_begin, int rows_end, DecodedImage* out, PlanarYcc* state) {
  const int width = static_cast<int>(cinfo->output_width);
  const int height = rows_end - rows_begin;
  out->format = PixelFormat::kYcc;
  out->chroma = chroma;
  out->chroma.width = (width + chroma.step_x - 1) / chroma.step_x;
  const int first = rows_begin / chroma.step_y;
  out->chroma.height = (rows_end - 1) / chroma.step_y - first + 1;
  out->chroma.phase_y = rows_begin - first * chroma.step_y;
  Image& image = out->image;
  image.width = width;
  image.height = height;
  image.channels = 1;
  const size_t luma = static_cast<size_t>(width) * height;
  const size_t plane = static_cast<size_t>(out->chroma.width) * out->chroma.height;
  image.pixels.resize(luma + 2 * plane);

  state->y_base = image.pixels.data();
  state->y_bytes = luma;
  state->width = width;
  state->rows_begin = rows_begin;
  state->chroma_row0 = first;
  state->chroma_width = out->chroma.width;
  state->step_y = chroma.step_y;
  state->cb_base = image.pixels.data() + luma;
  state->cr_base = state->cb_base + plane;
#if FLOWLOADER_LIBJPEG_TURBO_2
  cinfo->client_data = state;
  auto* upsampler = reinterpret_cast<SeparateUpsamplerV2*>(cinfo->upsample);
  upsampler->methods[1] = UseRowsAsTheyAre;
  upsampler->methods[2] = UseRowsAsTheyAre;
  reinterpret_cast<ColorDeconverterV2*>(cinfo->cconvert)->color_convert = CaptureRows;
#endif
}

}  // namespace flowloader::decode::internal
