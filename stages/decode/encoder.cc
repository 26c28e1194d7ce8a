// encoder.cc: EncodeJpeg and EncodePng (see encoder.h).
//
// Both libraries report errors by longjmp. Each setjmp frame below holds only objects
// constructed before setjmp (so no destructor is skipped) and libjpeg/libpng C frames lie
// between it and the longjmp.
//
// Thread-safety: no shared state.
#include "stages/decode/encoder.h"

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE.
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jpeglib.h"
#include "png.h"

namespace flowloader::decode {
namespace {

// ---- JPEG -------------------------------------------------------------------------

struct JpegErrorMgr {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorMgr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Compression warnings are not interesting here; keep stderr clean.
void JpegSilence(j_common_ptr /*cinfo*/) {}

// StringDest is a libjpeg destination manager appending to a std::string, so the
// output needs no malloc'd buffer to free on the error path.
struct StringDest {
  jpeg_destination_mgr pub;
  std::string* out;
};

void StringDestInit(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDest*>(cinfo->dest);
  dest->out->resize(1 << 16);
  dest->pub.next_output_byte = reinterpret_cast<JOCTET*>(&(*dest->out)[0]);
  dest->pub.free_in_buffer = dest->out->size();
}

boolean StringDestEmpty(j_compress_ptr cinfo) {
  // Called only when the whole buffer is full (free_in_buffer == 0).
  auto* dest = reinterpret_cast<StringDest*>(cinfo->dest);
  const size_t used = dest->out->size();
  dest->out->resize(used * 2);
  dest->pub.next_output_byte = reinterpret_cast<JOCTET*>(&(*dest->out)[used]);
  dest->pub.free_in_buffer = dest->out->size() - used;
  return TRUE;
}

void StringDestTerm(j_compress_ptr cinfo) {
  auto* dest = reinterpret_cast<StringDest*>(cinfo->dest);
  dest->out->resize(dest->out->size() - dest->pub.free_in_buffer);
}

void LumaFactors(ChromaSubsampling s, int* h, int* v) {
  switch (s) {
    case ChromaSubsampling::k444: *h = 1; *v = 1; return;
    case ChromaSubsampling::k422: *h = 2; *v = 1; return;
    case ChromaSubsampling::k420: *h = 2; *v = 2; return;
    case ChromaSubsampling::k440: *h = 1; *v = 2; return;
    case ChromaSubsampling::k411: *h = 4; *v = 1; return;
  }
  *h = 2;
  *v = 2;
}

// ToInvertedCmyk writes Adobe-inverted CMYK for one row: K' = max(R, G, B) and
// C' = R·255/K', so that C'·K'/255 == R (what PIL and djpeg compute back).
void ToInvertedCmyk(const uint8_t* src, int width, int channels, uint8_t* dst) {
  for (int x = 0; x < width; ++x) {
    const int r = src[0];
    const int g = channels == 3 ? src[1] : r;
    const int b = channels == 3 ? src[2] : r;
    src += channels;
    const int k = std::max(r, std::max(g, b));
    if (k == 0) {
      dst[0] = dst[1] = dst[2] = dst[3] = 0;
    } else {
      dst[0] = static_cast<uint8_t>((r * 255 + k / 2) / k);
      dst[1] = static_cast<uint8_t>((g * 255 + k / 2) / k);
      dst[2] = static_cast<uint8_t>((b * 255 + k / 2) / k);
      dst[3] = static_cast<uint8_t>(k);
    }
    dst += 4;
  }
}

absl::Status ValidateView(const ImageView& image, int max_side) {
  if (image.data == nullptr) return absl::InvalidArgumentError("image has no data");
  if (image.width <= 0 || image.height <= 0 || image.width > max_side ||
      image.height > max_side) {
    return absl::InvalidArgumentError(absl::StrCat("image size ", image.width, "x",
                                                   image.height, " out of range"));
  }
  if (image.stride < static_cast<size_t>(image.width) * image.channels) {
    return absl::InvalidArgumentError("image stride is smaller than a row");
  }
  return absl::OkStatus();
}

// ---- PNG --------------------------------------------------------------------------

struct PngErrorState {
  char message[256] = "";
};

void PngError(png_structp png, png_const_charp msg) {
  auto* state = static_cast<PngErrorState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", msg);
  png_longjmp(png, 1);
}

void PngWarning(png_structp /*png*/, png_const_charp /*msg*/) {}

void PngWrite(png_structp png, png_bytep data, size_t length) {
  static_cast<std::string*>(png_get_io_ptr(png))
      ->append(reinterpret_cast<const char*>(data), length);
}

void PngFlush(png_structp /*png*/) {}

// Rgba reads pixel x of `row` as RGBA, whatever the channel count.
uint32_t Rgba(const uint8_t* row, int x, int channels) {
  const uint8_t* p = row + static_cast<size_t>(x) * channels;
  uint8_t r = p[0], g = p[0], b = p[0], a = 255;
  if (channels == 2) a = p[1];
  if (channels >= 3) g = p[1], b = p[2];
  if (channels == 4) a = p[3];
  return (uint32_t{r} << 24) | (uint32_t{g} << 16) | (uint32_t{b} << 8) | a;
}

}  // namespace

absl::StatusOr<std::string> EncodeJpeg(const ImageView& image,
                                       const JpegEncodeOptions& options) {
  if (absl::Status s = ValidateView(image, JPEG_MAX_DIMENSION); !s.ok()) return s;
  if (image.channels != 1 && image.channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("JPEG input must have 1 or 3 channels, got ", image.channels));
  }
  if (options.quality < 1 || options.quality > 100) {
    return absl::InvalidArgumentError(absl::StrCat("quality ", options.quality,
                                                   " outside 1..100"));
  }
  if (options.restart_interval < 0 || options.restart_interval > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "restart_interval ", options.restart_interval, " outside 0..65535"));
  }
  const bool cmyk = options.color != JpegColor::kDefault;
  int h = 1, v = 1;
  LumaFactors(options.subsampling, &h, &v);

  std::string out;
  std::vector<uint8_t> cmyk_row(cmyk ? static_cast<size_t>(image.width) * 4 : 0);
  jpeg_compress_struct cinfo;
  jpeg_scan_info scans[MAX_COMPONENTS];  // options.multi_scan's script.
  JpegErrorMgr err;
  StringDest dest;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = JpegErrorExit;
  err.pub.output_message = JpegSilence;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return absl::InternalError(absl::StrCat("libjpeg: ", err.message));
  }
  jpeg_create_compress(&cinfo);
  dest.out = &out;
  dest.pub.init_destination = StringDestInit;
  dest.pub.empty_output_buffer = StringDestEmpty;
  dest.pub.term_destination = StringDestTerm;
  cinfo.dest = &dest.pub;

  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = cmyk ? 4 : image.channels;
  cinfo.in_color_space = cmyk ? JCS_CMYK : (image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB);
  jpeg_set_defaults(&cinfo);  // Picks CMYK (+ Adobe marker), gray or YCbCr.
  if (options.color == JpegColor::kYcck) jpeg_set_colorspace(&cinfo, JCS_YCCK);
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (cinfo.jpeg_color_space == JCS_YCbCr || cinfo.jpeg_color_space == JCS_YCCK) {
    for (int c = 0; c < cinfo.num_components; ++c) {
      const bool luma_like = c == 0 || c == 3;  // Y, and K in YCCK.
      cinfo.comp_info[c].h_samp_factor = luma_like ? h : 1;
      cinfo.comp_info[c].v_samp_factor = luma_like ? v : 1;
    }
  }
  if (options.progressive) {
    jpeg_simple_progression(&cinfo);
  } else if (options.multi_scan) {
    for (int c = 0; c < cinfo.num_components; ++c) {
      scans[c] = jpeg_scan_info{1, {c, 0, 0, 0}, 0, 63, 0, 0};
    }
    cinfo.scan_info = scans;
    cinfo.num_scans = cinfo.num_components;
  }
  cinfo.optimize_coding = options.optimize_coding ? TRUE : FALSE;
  cinfo.restart_interval = static_cast<unsigned int>(options.restart_interval);

  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    const uint8_t* src = image.Row(static_cast<int>(cinfo.next_scanline));
    JSAMPROW row;
    if (cmyk) {
      ToInvertedCmyk(src, image.width, image.channels, cmyk_row.data());
      row = cmyk_row.data();
    } else {
      row = const_cast<JSAMPROW>(src);  // libjpeg only reads input rows.
    }
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return out;
}

absl::StatusOr<std::string> EncodePng(const ImageView& image,
                                      const PngEncodeOptions& options) {
  if (absl::Status s = ValidateView(image, 1 << 24); !s.ok()) return s;
  const int channels = image.channels;
  if (channels < 1 || channels > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("PNG input must have 1..4 channels, got ", channels));
  }
  const int depth = options.bit_depth;
  if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16) {
    return absl::InvalidArgumentError(absl::StrCat("bit_depth ", depth, " invalid"));
  }
  if (depth < 8 && !options.palette && channels != 1) {
    return absl::InvalidArgumentError("bit depths below 8 need gray or a palette");
  }
  if (depth == 16 && options.palette) {
    return absl::InvalidArgumentError("a palette PNG cannot be 16-bit");
  }
  if (options.compression_level < 0 || options.compression_level > 9) {
    return absl::InvalidArgumentError("compression_level outside 0..9");
  }

  // Palette: distinct colours in first-seen order.
  std::unordered_map<uint32_t, uint8_t> index_of;
  std::vector<png_color> palette;
  std::vector<png_byte> alpha;
  bool any_alpha = false;
  if (options.palette) {
    const size_t max_colors = std::min<size_t>(256, size_t{1} << depth);
    for (int y = 0; y < image.height; ++y) {
      for (int x = 0; x < image.width; ++x) {
        const uint32_t c = Rgba(image.Row(y), x, channels);
        if (index_of.count(c)) continue;
        if (palette.size() == max_colors) {
          return absl::InvalidArgumentError(absl::StrCat(
              "more than ", max_colors, " colours for a ", depth, "-bit palette"));
        }
        index_of.emplace(c, static_cast<uint8_t>(palette.size()));
        palette.push_back(png_color{static_cast<png_byte>(c >> 24),
                                    static_cast<png_byte>(c >> 16),
                                    static_cast<png_byte>(c >> 8)});
        alpha.push_back(static_cast<png_byte>(c));
        any_alpha |= (c & 0xff) != 0xff;
      }
    }
  }
  int color_type = PNG_COLOR_TYPE_PALETTE;
  int out_channels = 1;
  if (!options.palette) {
    static constexpr int kTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                     PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    color_type = kTypes[channels - 1];
    out_channels = channels;
  }
  // One byte per sample below 8 bits (png_set_packing packs them), two at 16 bits.
  const size_t bytes_per_sample = depth == 16 ? 2 : 1;
  std::vector<uint8_t> row(static_cast<size_t>(image.width) * out_channels *
                           bytes_per_sample);

  std::string out;
  PngErrorState err;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, PngError, PngWarning);
  if (png == nullptr) return absl::ResourceExhaustedError("png_create_write_struct");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return absl::ResourceExhaustedError("png_create_info_struct");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return absl::InternalError(absl::StrCat("libpng: ", err.message));
  }
  png_set_write_fn(png, &out, PngWrite, PngFlush);
  png_set_compression_level(png, options.compression_level);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width),
               static_cast<png_uint_32>(image.height), depth, color_type,
               options.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (options.palette) {
    png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
    if (any_alpha) {
      png_set_tRNS(png, info, alpha.data(), static_cast<int>(alpha.size()), nullptr);
    }
  }
  png_write_info(png, info);
  if (depth < 8) png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  for (int pass = 0; pass < passes; ++pass) {
    for (int y = 0; y < image.height; ++y) {
      const uint8_t* src = image.Row(y);
      if (options.palette) {
        for (int x = 0; x < image.width; ++x) row[x] = index_of[Rgba(src, x, channels)];
      } else if (depth == 16) {
        const size_t n = static_cast<size_t>(image.width) * channels;
        for (size_t i = 0; i < n; ++i) row[2 * i] = row[2 * i + 1] = src[i];
      } else if (depth < 8) {
        for (int x = 0; x < image.width; ++x) row[x] = src[x] >> (8 - depth);
      } else {
        std::memcpy(row.data(), src, row.size());
      }
      png_write_row(png, row.data());
    }
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

}  // namespace flowloader::decode
