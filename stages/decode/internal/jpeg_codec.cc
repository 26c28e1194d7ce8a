// jpeg_codec.cc: libjpeg-turbo glue for ReadJpegInfo and DecodeJpeg.
//
// libjpeg reports errors by calling error_exit, which must not return; we longjmp back.
// Each setjmp lives in a small C-style function (ReadHeaderJob, DecodeJob) whose frame
// holds only trivially destructible objects, so the longjmp skips no destructor; Status
// objects are built by the callers after it returns.
//
// Warnings are errors here: libjpeg "recovers" from a truncated or corrupt stream by
// padding with grey, which would hand a silently broken image to training.
//
// Thread-safety: no shared state except the thread_local CMYK scratch row.
#include "stages/decode/internal/jpeg_codec.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE.
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jerror.h"
#include "jpeglib.h"
#include "stages/core/sample_error.h"
#include "stages/decode/internal/common.h"
#include "stages/decode/internal/fast_entropy.h"
#include "stages/decode/internal/planar_ycc.h"

namespace flowloader::decode::internal {
namespace {

// A progressive file may declare any number of scans, each a full pass over the
// coefficients: libjpeg-turbo's TurboJPEG caps them (TJFLAG_LIMITSCANS, 500) against
// CPU-exhaustion files. Real encoders write about 10.
constexpr int kMaxScans = 1000;

// kRowBatch is how many output rows one jpeg_read_scanlines call may return.
constexpr int kRowBatch = 8;

struct ErrorMgr {
  jpeg_error_mgr pub;  // First, so cinfo->err casts to ErrorMgr*.
  jmp_buf jump;
  absl::string_view reason;  // A reason:: constant; empty means a bad RegionRequest.
  char message[JMSG_LENGTH_MAX];
};

absl::string_view ReasonForError(int code) {
  switch (code) {
    case JERR_INPUT_EOF:
    case JERR_INPUT_EMPTY:
      return reason::kTruncated;
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
      return reason::kTooManyPixels;
    case JERR_ARITH_NOTIMPL:
    case JERR_BAD_PRECISION:
    case JERR_CONVERSION_NOTIMPL:
    case JERR_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_SOF_UNSUPPORTED:
      return reason::kUnsupported;
    default:
      return reason::kCorrupt;
  }
}

[[noreturn]] void Fail(j_common_ptr cinfo, absl::string_view why) {
  auto* err = reinterpret_cast<ErrorMgr*>(cinfo->err);
  err->reason = why;
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

[[noreturn]] void FailWith(j_common_ptr cinfo, absl::string_view why, const char* text) {
  auto* err = reinterpret_cast<ErrorMgr*>(cinfo->err);
  err->reason = why;
  std::snprintf(err->message, sizeof(err->message), "%s", text);
  longjmp(err->jump, 1);
}

void ErrorExit(j_common_ptr cinfo) { Fail(cinfo, ReasonForError(cinfo->err->msg_code)); }

// EmitMessage turns data warnings into errors (level -1); trace messages are dropped.
void EmitMessage(j_common_ptr cinfo, int msg_level) {
  if (msg_level >= 0) return;
  switch (cinfo->err->msg_code) {
    case JWRN_ADOBE_XFORM:  // Unknown transform code: libjpeg guesses as PIL does.
    case JWRN_JFIF_MAJOR:   // Unknown JFIF version: harmless.
    case JWRN_BOGUS_ICC:    // Only when reading ICC profiles, which we don't.
      return;
    case JWRN_JPEG_EOF:
      Fail(cinfo, reason::kTruncated);
    default:
      Fail(cinfo, reason::kCorrupt);
  }
}

void OutputMessage(j_common_ptr /*cinfo*/) {}  // Never print to stderr.

void ProgressMonitor(j_common_ptr cinfo) {
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxScans) {
    FailWith(cinfo, reason::kCorrupt, "too many progressive scans");
  }
}

// Session bundles what every libjpeg call needs; it is trivially destructible, so it
// may live in a frame that is longjmp'd to.
struct Session {
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  jpeg_progress_mgr progress;
};

void InitErrors(Session* s) {
  s->cinfo.err = jpeg_std_error(&s->err.pub);
  s->err.pub.error_exit = ErrorExit;
  s->err.pub.emit_message = EmitMessage;
  s->err.pub.output_message = OutputMessage;
  s->err.reason = reason::kCorrupt;
  s->err.message[0] = '\0';
  s->progress.progress_monitor = ProgressMonitor;
}

void StartSession(Session* s, absl::string_view bytes) {
  jpeg_create_decompress(&s->cinfo);
  s->cinfo.progress = &s->progress;
  jpeg_mem_src(&s->cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&s->cinfo, TRUE);
}

// CheckHeader fails the session, before any pixel memory exists, unless the declared
// size is within limits.
void CheckHeader(Session* s, const DecoderOptions& options) {
  char text[JMSG_LENGTH_MAX];
  const absl::string_view why = SizeProblem(s->cinfo.image_width, s->cinfo.image_height,
                                            options, text, sizeof(text));
  if (!why.empty()) FailWith(reinterpret_cast<j_common_ptr>(&s->cinfo), why, text);
  // A progressive file, or a sequential one whose first scan lacks a component (more
  // scans follow), is decoded through a coefficient image of the whole file (libjpeg's
  // jdinput.c has_multiple_scans, jdcoefct.c: per component, its blocks rounded up to its
  // sampling factors, 128 B each); jpeg_read_header has sized every component.
  if (!s->cinfo.progressive_mode && s->cinfo.comps_in_scan >= s->cinfo.num_components) return;
  int64_t need = 0;
  for (int c = 0; c < s->cinfo.num_components; ++c) {
    const jpeg_component_info& comp = s->cinfo.comp_info[c];
    const int64_t w = (int64_t{comp.width_in_blocks} + comp.h_samp_factor - 1) /
                      comp.h_samp_factor * comp.h_samp_factor;
    const int64_t h = (int64_t{comp.height_in_blocks} + comp.v_samp_factor - 1) /
                      comp.v_samp_factor * comp.v_samp_factor;
    need += w * h * static_cast<int64_t>(sizeof(JBLOCK));
  }
  const absl::string_view over =
      MemoryProblem(need, s->cinfo.progressive_mode ? "progressive JPEG" : "multi-scan JPEG",
                    s->cinfo.image_width, s->cinfo.image_height, options, text, sizeof(text));
  if (!over.empty()) FailWith(reinterpret_cast<j_common_ptr>(&s->cinfo), over, text);
}

uint8_t MulDiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

// CmykToRgb converts one row exactly as PIL does: JpegImagePlugin reads every 4-channel
// JPEG as Adobe-inverted ("CMYK;I", so ink = 255 - stored) and convert('RGB') computes
// R = (255 - K) - (C·(255 - K))/255 with rounding; in stored values, K' - (255 - C')·K'/255.
void CmykToRgb(const uint8_t* in, int width, uint8_t* out) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];
    out[0] = static_cast<uint8_t>(nk - MulDiv255(255 - in[0], nk));
    out[1] = static_cast<uint8_t>(nk - MulDiv255(255 - in[1], nk));
    out[2] = static_cast<uint8_t>(nk - MulDiv255(255 - in[2], nk));
  }
}

struct InfoJob {
  absl::string_view bytes;
  const DecoderOptions* options;
  Session s;
  ImageInfo info;  // Trivially destructible.
};

bool RunInfoJob(InfoJob* job) {
  Session* s = &job->s;
  InitErrors(s);
  if (setjmp(s->err.jump)) {
    jpeg_destroy_decompress(&s->cinfo);
    return false;
  }
  StartSession(s, job->bytes);
  CheckHeader(s, *job->options);
  job->info.format = Format::kJpeg;
  job->info.width = static_cast<int>(s->cinfo.image_width);
  job->info.height = static_cast<int>(s->cinfo.image_height);
  job->info.channels = s->cinfo.num_components;
  jpeg_destroy_decompress(&s->cinfo);
  return true;
}

// Span is a half-open range of output (scaled) rows or columns.
struct Span {
  int begin;
  int end;
};

// ScaledSpan maps original pixels [lo, hi) to scaled pixels at k/8, plus `margin` scaled
// pixels each side, widened so that both ends fall on whole original pixels (multiples
// of q scaled pixels) or the image edge.
Span ScaledSpan(int lo, int hi, int k, int scaled_size, int margin) {
  const int q = k / std::gcd(k, 8);
  int begin = std::max(0, lo * k / 8 - margin);
  begin -= begin % q;
  int end = (hi * k + 7) / 8 + margin;
  end = std::min(scaled_size, (end + q - 1) / q * q);
  return Span{begin, end};
}

struct DecodeJob {
  absl::string_view bytes;
  const DecoderOptions* options;
  const RegionRequest* request;
  SeekIndexCache* index_cache;  // May be null.
  DecodedImage* out;
  Session s;
  PlanarYcc ycc;  // Used when the decode hands over planes.
};

bool RunDecodeJob(DecodeJob* job) {
  Session* s = &job->s;
  jpeg_decompress_struct* c = &s->cinfo;
  InitErrors(s);
  if (setjmp(s->err.jump)) {
    jpeg_destroy_decompress(c);
    return false;
  }
  StartSession(s, job->bytes);
  CheckHeader(s, *job->options);
  const int width = static_cast<int>(c->image_width);
  const int height = static_cast<int>(c->image_height);

  bool cmyk = false;
  switch (c->jpeg_color_space) {
    case JCS_GRAYSCALE:  // libjpeg-turbo expands gray to RGB itself.
    case JCS_YCbCr:
    case JCS_RGB:
      c->out_color_space = JCS_RGB;
      break;
    case JCS_CMYK:  // libjpeg converts YCCK to CMYK, not to RGB; we do the rest.
    case JCS_YCCK:
      c->out_color_space = JCS_CMYK;
      cmyk = true;
      break;
    default:
      FailWith(reinterpret_cast<j_common_ptr>(c), reason::kUnsupported,
               "unsupported JPEG colour space");
  }
  c->dct_method = job->options->fast_idct ? JDCT_IFAST : JDCT_ISLOW;
  // Without fancy upsampling libjpeg-turbo uses its merged upsample+colour-convert SIMD
  // path for 4:2:0/4:2:2 (nearest-neighbour chroma instead of triangle-filtered).
  c->do_fancy_upsampling = job->options->fancy_upsampling ? TRUE : FALSE;

  // Plan: DCT scale k/8 and the original-pixel box to decode.
  int k = 8;
  int x0 = 0, x1 = width, y0 = 0, y1 = height;
  if (const RegionRequest* r = job->request) {
    if (!(std::isfinite(r->region.x) && std::isfinite(r->region.y) &&
          std::isfinite(r->region.w) && std::isfinite(r->region.h))) {
      FailWith(reinterpret_cast<j_common_ptr>(c), absl::string_view(),
               "region request is not finite");
    }
    const double rx0 = std::max(0.0, r->region.x);
    const double ry0 = std::max(0.0, r->region.y);
    const double rx1 = std::min<double>(width, r->region.x + r->region.w);
    const double ry1 = std::min<double>(height, r->region.y + r->region.h);
    if (!(rx1 > rx0 && ry1 > ry0)) {
      FailWith(reinterpret_cast<j_common_ptr>(c), absl::string_view(),
               "region request is empty after clamping to the image");
    }
    if (job->options->dct_scaling) {
      k = ChooseDctScale(rx1 - rx0, ry1 - ry0, r->target_width, r->target_height);
    }
    x0 = static_cast<int>(std::floor(rx0));
    y0 = static_cast<int>(std::floor(ry0));
    x1 = static_cast<int>(std::ceil(rx1));
    y1 = static_cast<int>(std::ceil(ry1));
  }
  c->scale_num = static_cast<unsigned int>(k);
  c->scale_denom = 8;
  jpeg_calc_output_dimensions(c);
  // One spare column each side: libjpeg-turbo's fancy (h2) upsampler treats the crop's
  // edges as image edges, so the outermost cropped columns differ from a full decode.
  // With the margin only covered-but-unrequested pixels do. Rows need none:
  // jpeg_skip_scanlines keeps the upsampler's context rows.
  Span cols = ScaledSpan(x0, x1, k, static_cast<int>(c->output_width), 1);
  const Span rows = ScaledSpan(y0, y1, k, static_cast<int>(c->output_height), 0);

  jpeg_start_decompress(c);
  if (cols.end - cols.begin < static_cast<int>(c->output_width)) {
    // Must follow jpeg_start_decompress. It moves the left edge down to an iMCU boundary
    // (a multiple of k scaled pixels, hence a whole original pixel) and keeps the right.
    JDIMENSION xoffset = static_cast<JDIMENSION>(cols.begin);
    JDIMENSION crop_width = static_cast<JDIMENSION>(cols.end - cols.begin);
    jpeg_crop_scanline(c, &xoffset, &crop_width);
    cols.begin = static_cast<int>(xoffset);
  }
  ChromaPlanes chroma;
  const bool planar = job->request != nullptr && job->request->accept_ycc &&
                      job->options->planar_ycc && !cmyk && PlanForPlanarYcc(c, &chroma);
  bool fast_entropy = false;
  if (job->options->fast_huffman) {
    // Before any row is read or skipped: the seek index needs to know which are.
    const IndexUse use{job->index_cache, job->bytes, cols.begin, cols.end, rows.begin};
    fast_entropy = InstallFastEntropyDecoder(c, FailWith, job->request ? &use : nullptr);
  }
  const int out_w = static_cast<int>(c->output_width);  // The cropped width now.
  DecodedImage* out = job->out;
  if (planar) {
    StartPlanarYcc(c, chroma, rows.begin, rows.end, out, &job->ycc);
  } else {
    out->format = PixelFormat::kRgb;
    out->image.Resize(out_w, rows.end - rows.begin, 3);
  }
  if (rows.begin > 0 &&
      jpeg_skip_scanlines(c, static_cast<JDIMENSION>(rows.begin)) !=
          static_cast<JDIMENSION>(rows.begin)) {
    FailWith(reinterpret_cast<j_common_ptr>(c), reason::kCorrupt, "could not skip rows");
  }

  uint8_t* scratch = nullptr;
  if (cmyk) {
    thread_local std::vector<uint8_t> cmyk_rows;
    const size_t need = static_cast<size_t>(out_w) * 4 * kRowBatch;
    if (cmyk_rows.size() < need) cmyk_rows.resize(need);
    scratch = cmyk_rows.data();
  }
  JSAMPROW row_ptrs[kRowBatch];
  while (static_cast<int>(c->output_scanline) < rows.end) {
    const int y = static_cast<int>(c->output_scanline) - rows.begin;
    const int n = std::min(kRowBatch, rows.end - static_cast<int>(c->output_scanline));
    for (int i = 0; i < n; ++i) {
      row_ptrs[i] = cmyk ? scratch + static_cast<size_t>(i) * out_w * 4
                         : out->image.Row(y + i);
    }
    const int got = static_cast<int>(
        jpeg_read_scanlines(c, row_ptrs, static_cast<JDIMENSION>(n)));
    if (got <= 0) {
      FailWith(reinterpret_cast<j_common_ptr>(c), reason::kTruncated, "no rows returned");
    }
    if (cmyk) {
      for (int i = 0; i < got; ++i) CmykToRgb(row_ptrs[i], out_w, out->image.Row(y + i));
    }
  }

  // Integer original-pixel edges (ScaledSpan, crop alignment); the far edges are
  // clamped because the last scaled row/column may also cover edge padding.
  const double inv = 8.0 / k;
  out->covered.x = cols.begin * inv;
  out->covered.y = rows.begin * inv;
  out->covered.w = std::min<double>(width, cols.end * inv) - out->covered.x;
  out->covered.h = std::min<double>(height, rows.end * inv) - out->covered.y;
  out->scale_x = out->scale_y = k / 8.0;
  if (fast_entropy) FinishFastEntropyDecoder(c);
  // Rows below the region are never decoded: destroy aborts the decompression.
  jpeg_destroy_decompress(c);
  return true;
}

absl::Status JobError(const ErrorMgr& err) {
  if (err.reason.empty()) return absl::InvalidArgumentError(err.message);
  return DecodeError(err.reason, absl::StrCat("JPEG: ", err.message));
}

}  // namespace

int ChooseDctScale(double region_w, double region_h, int target_w, int target_h) {
  if (target_w <= 0 || target_h <= 0) return 8;
  // libjpeg-turbo has SIMD IDCTs only for 8×8, 4×4 and 2×2 (and 1×1 is trivial); the
  // other sizes are plain C. Measured here on a 450×380 4:2:0 q90 photo: k = 5, 6, 7
  // decode at 630–800 img/s against 1460 at k = 8 (k = 3 about equal to k = 8), which
  // no saving in the downstream resize makes up. So k is a power of two.
  for (int k = 1; k < 8; k *= 2) {
    if (region_w * k / 8 >= target_w && region_h * k / 8 >= target_h) return k;
  }
  return 8;
}

absl::StatusOr<ImageInfo> ReadJpegInfo(absl::string_view bytes,
                                       const DecoderOptions& options) {
  InfoJob job{bytes, &options, {}, {}};
  if (!RunInfoJob(&job)) return JobError(job.s.err);
  return job.info;
}

absl::Status DecodeJpeg(absl::string_view bytes, const DecoderOptions& options,
                        const RegionRequest* request, SeekIndexCache* index_cache,
                        DecodedImage* out) {
  DecodeJob job{bytes, &options, request, index_cache, out, {}};
  if (!RunDecodeJob(&job)) return JobError(job.s.err);
  return absl::OkStatus();
}

}  // namespace flowloader::decode::internal
