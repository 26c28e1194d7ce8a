// region_rows.cc: KeptBox planning and the RegionWriter (see region_rows.h).
//
// Thread-safety: no shared state.
#include "stages/decode/internal/region_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace flowloader::decode::internal {

int BoxShift(double extent, int target) {
  int s = 0;
  while (s < kMaxBoxShift && extent / static_cast<double>(2 << s) >= target) ++s;
  return s;
}

namespace {

// BlocksEnd is where whole blocks of 2^shift starting at `begin` first reach `end`,
// clamped to `limit` (the image edge).
int BlocksEnd(int begin, int end, int shift, int limit) {
  const int64_t blocks = ((int64_t{end} - begin) + (int64_t{1} << shift) - 1) >> shift;
  return static_cast<int>(std::min<int64_t>(limit, begin + (blocks << shift)));
}

// FirstSpanColumnAt is the index of the first pixel of `s` at image column >= x.
int FirstSpanColumnAt(const RowSpan& s, int x) {
  if (x <= s.first_col) return 0;
  return std::min(s.cols, (x - s.first_col + s.col_step - 1) / s.col_step);
}

// GrowToRows makes the first `rows` rows of `image` addressable. Its buffer's capacity
// is reserved up front; growing it row by row touches only the pages decoded so far.
void GrowToRows(Image* image, int rows) {
  const size_t need = image->stride() * static_cast<size_t>(rows);
  if (image->pixels.size() < need) image->pixels.resize(need);
}

// AverageBlockRow writes output row `oy` from its blocks' sums: each block's mean,
// rounded to nearest, over the pixels it has (fewer on the image's right/bottom edge).
void AverageBlockRow(const KeptBox& b, int oy, const uint32_t* sums, Image* image) {
  GrowToRows(image, oy + 1);
  const int rows = std::min(1 << b.shift_y, b.y1 - (b.y0 + (oy << b.shift_y)));
  uint8_t* dst = image->Row(oy);
  for (int ox = 0; ox < image->width; ++ox, sums += 3, dst += 3) {
    const int cols = std::min(1 << b.shift_x, b.x1 - (b.x0 + (ox << b.shift_x)));
    const uint32_t n = static_cast<uint32_t>(rows) * static_cast<uint32_t>(cols);
    for (int c = 0; c < 3; ++c) dst[c] = static_cast<uint8_t>((sums[c] + n / 2) / n);
  }
}

}  // namespace

bool PlanKeptBox(const DecoderOptions& options, const RegionRequest* request, int width, int height,
                 KeptBox* box, char* message, size_t capacity) {
  *box = KeptBox{0, 0, width, height, 0, 0};
  if (request == nullptr) return true;
  const RectF& g = request->region;
  if (!(std::isfinite(g.x) && std::isfinite(g.y) && std::isfinite(g.w) && std::isfinite(g.h))) {
    std::snprintf(message, capacity, "region request is not finite");
    return false;
  }
  const double rx0 = std::max(0.0, g.x);
  const double ry0 = std::max(0.0, g.y);
  const double rx1 = std::min<double>(width, g.x + g.w);
  const double ry1 = std::min<double>(height, g.y + g.h);
  if (!(rx1 > rx0 && ry1 > ry0)) {
    std::snprintf(message, capacity, "region request is empty after clamping to the image");
    return false;
  }
  if (options.png_box_scaling && request->target_width > 0 && request->target_height > 0) {
    box->shift_x = BoxShift(rx1 - rx0, request->target_width);
    box->shift_y = BoxShift(ry1 - ry0, request->target_height);
  }
  box->x0 = static_cast<int>(std::floor(rx0));
  box->y0 = static_cast<int>(std::floor(ry0));
  box->x1 = BlocksEnd(box->x0, static_cast<int>(std::ceil(rx1)), box->shift_x, width);
  box->y1 = BlocksEnd(box->y0, static_cast<int>(std::ceil(ry1)), box->shift_y, height);
  return true;
}

RegionWriter StartOutput(const KeptBox& box, bool any_order, DecodedImage* out,
                         std::vector<uint32_t>* sums) {
  Image& image = out->image;
  image.width = box.out_width();
  image.height = box.out_height();
  image.channels = 3;
  const size_t total = image.stride() * static_cast<size_t>(image.height);
  image.pixels.clear();  // Nothing to copy if reserve reallocates.
  image.pixels.reserve(total);
  if (any_order && !box.averaged()) image.pixels.resize(total);
  const size_t sum_rows = any_order ? static_cast<size_t>(image.height) : 1;
  sums->assign(box.averaged() ? image.stride() * sum_rows : 0, 0);
  out->format = PixelFormat::kRgb;
  out->covered = RectF{static_cast<double>(box.x0), static_cast<double>(box.y0),
                       static_cast<double>(box.x1 - box.x0), static_cast<double>(box.y1 - box.y0)};
  out->scale_x = 1.0 / (1 << box.shift_x);
  out->scale_y = 1.0 / (1 << box.shift_y);
  return RegionWriter{box, any_order, &image, box.averaged() ? sums->data() : nullptr};
}

void KeepRow(const RegionWriter& w, const RowSpan& span, int y, const uint8_t* rgb) {
  const KeptBox& b = w.box;
  if (y < b.y0 || y >= b.y1) return;
  const int begin = FirstSpanColumnAt(span, b.x0);
  const int end = FirstSpanColumnAt(span, b.x1);
  if (begin >= end) return;
  const uint8_t* src = rgb + 3 * static_cast<size_t>(begin);
  const int x_begin = span.first_col + begin * span.col_step - b.x0;  // Box column.
  if (w.sums == nullptr) {
    GrowToRows(w.image, y - b.y0 + 1);
    uint8_t* dst = w.image->Row(y - b.y0) + 3 * static_cast<size_t>(x_begin);
    if (span.col_step == 1) {
      std::memcpy(dst, src, 3 * static_cast<size_t>(end - begin));
      return;
    }
    for (int i = begin; i < end; ++i, src += 3, dst += 3 * span.col_step) {
      std::memcpy(dst, src, 3);
    }
    return;
  }
  const size_t block_row = w.any_order ? static_cast<size_t>((y - b.y0) >> b.shift_y) : 0;
  uint32_t* row_sums = w.sums + block_row * w.image->stride();
  for (int i = begin, x = x_begin; i < end; ++i, x += span.col_step, src += 3) {
    uint32_t* s = row_sums + 3 * static_cast<size_t>(x >> b.shift_x);
    s[0] += src[0];
    s[1] += src[1];
    s[2] += src[2];
  }
}

void FinishRow(const RegionWriter& w, int y) {
  if (w.sums == nullptr || w.any_order) return;
  const KeptBox& b = w.box;
  if (y < b.y0 || y >= b.y1) return;
  const int r = y - b.y0;
  if (((r + 1) & ((1 << b.shift_y) - 1)) != 0 && y + 1 != b.y1) return;
  AverageBlockRow(b, r >> b.shift_y, w.sums, w.image);
  std::fill(w.sums, w.sums + w.image->stride(), 0u);
}

void FinishOutput(const RegionWriter& w) {
  if (w.sums == nullptr || !w.any_order) return;
  for (int oy = 0; oy < w.image->height; ++oy) {
    AverageBlockRow(w.box, oy, w.sums + static_cast<size_t>(oy) * w.image->stride(), w.image);
  }
}

absl::Status RowSink::Start(const DecoderOptions& options, const RegionRequest* request, int width,
                            int height, bool any_order, DecodedImage* out) {
  KeptBox box;
  char message[128] = "";
  if (!PlanKeptBox(options, request, width, height, &box, message, sizeof(message))) {
    return absl::InvalidArgumentError(message);
  }
  writer_ = StartOutput(box, any_order, out, &sums_);
  span_ = RowSpan{0, 1, width};
  return absl::OkStatus();
}

void RowSink::Put(int y, const uint8_t* rgb) {
  KeepRow(writer_, span_, y, rgb);
  FinishRow(writer_, y);
}

}  // namespace flowloader::decode::internal
