// rle.cc: COCO RLE coding and polygon rasterisation, following cocoapi's maskApi.c
// (rleFrString, rleToString, rleFrPoly, rleToBbox) step for step, so masks are the
// ones the COCO tools compute.
#include "stages/detection/rle.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace flowloader::detection {

absl::StatusOr<Rle> RleFromString(const std::string& text, int h, int w) {
  Rle rle{h, w, {}};
  rle.counts.reserve(text.size());
  size_t p = 0;
  while (p < text.size()) {
    int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p >= text.size()) {
        return absl::InvalidArgumentError("RLE string ends inside a number");
      }
      const int c = static_cast<unsigned char>(text[p]) - 48;
      if (c < 0 || c > 63 || k > 12) {
        return absl::InvalidArgumentError(
            absl::StrCat("RLE string has a bad character at offset ", p));
      }
      x |= static_cast<int64_t>(c & 0x1f) << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10) != 0) x |= -(int64_t{1} << (5 * k));  // Sign-extend.
    }
    const size_t m = rle.counts.size();
    if (m > 2) x += rle.counts[m - 2];  // Stored as the difference with two runs before.
    if (x < 0 || x > UINT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("RLE run ", m, " is ", x));
    }
    rle.counts.push_back(static_cast<uint32_t>(x));
  }
  return rle;
}

std::string RleToString(const Rle& rle) {
  std::string s;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    int64_t x = rle.counts[i];
    if (i > 2) x -= rle.counts[i - 2];
    bool more = true;
    while (more) {
      int c = static_cast<int>(x & 0x1f);
      x >>= 5;  // Arithmetic shift: negative differences stay negative.
      more = (c & 0x10) != 0 ? x != -1 : x != 0;
      if (more) c |= 0x20;
      s.push_back(static_cast<char>(c + 48));
    }
  }
  return s;
}

Rle RleFromPolygon(const std::vector<double>& xy, int h, int w) {
  // Upsample (×5) and list integer points densely along the whole boundary.
  constexpr double kScale = 5;
  const size_t k = xy.size() / 2;
  std::vector<int> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) x[j] = static_cast<int>(kScale * xy[2 * j] + .5);
  for (size_t j = 0; j < k; ++j) y[j] = static_cast<int>(kScale * xy[2 * j + 1] + .5);
  x[k] = x[0];
  y[k] = y[0];
  std::vector<int> u, v;
  for (size_t j = 0; j < k; ++j) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    // A repeated point (dx = dy = 0) divides 0 by 0 in cocoapi; the NaN it makes is never
    // read (the point's column equals its neighbours', so it marks no crossing), and 0
    // keeps the cast below defined.
    const double s = dx == 0 && dy == 0 ? 0.0
                     : dx >= dy         ? static_cast<double>(ye - ys) / dx
                                        : static_cast<double>(xe - xs) / dy;
    if (dx >= dy) {
      for (int d = 0; d <= dx; ++d) {
        const int t = flip ? dx - d : d;
        u.push_back(t + xs);
        v.push_back(static_cast<int>(ys + s * t + .5));
      }
    } else {
      for (int d = 0; d <= dy; ++d) {
        const int t = flip ? dy - d : d;
        v.push_back(t + ys);
        u.push_back(static_cast<int>(xs + s * t + .5));
      }
    }
  }
  // The points where the boundary crosses a column centre, downsampled: the first pixel
  // of that column below the crossing.
  std::vector<uint32_t> a;
  for (size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    double xd = u[j] < u[j - 1] ? u[j] : u[j] - 1;
    xd = (xd + .5) / kScale - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > w - 1) continue;
    double yd = v[j] < v[j - 1] ? v[j] : v[j - 1];
    yd = (yd + .5) / kScale - .5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > h) {
      yd = h;
    }
    yd = std::ceil(yd);
    a.push_back(static_cast<uint32_t>(static_cast<int>(xd) * h + static_cast<int>(yd)));
  }
  // Sorted crossings toggle inside/outside: their differences are the runs.
  a.push_back(static_cast<uint32_t>(h) * static_cast<uint32_t>(w));
  std::sort(a.begin(), a.end());
  uint32_t prev = 0;
  for (uint32_t& t : a) {
    const uint32_t here = t;
    t -= prev;
    prev = here;
  }
  Rle rle{h, w, {}};
  size_t j = 0;
  rle.counts.push_back(a[j++]);
  while (j < a.size()) {
    if (a[j] > 0) {
      rle.counts.push_back(a[j++]);
    } else {  // An empty run: the next one continues the run before it.
      ++j;
      if (j < a.size()) rle.counts.back() += a[j++];
    }
  }
  return rle;
}

Rle RleFromMask(const uint8_t* mask, int h, int w) {
  Rle rle{h, w, {}};
  uint8_t current = 0;
  uint32_t run = 0;
  for (int x = 0; x < w; ++x) {
    for (int y = 0; y < h; ++y) {
      const uint8_t bit = mask[static_cast<size_t>(y) * w + x] != 0;
      if (bit != current) {
        rle.counts.push_back(run);
        run = 0;
        current = bit;
      }
      ++run;
    }
  }
  rle.counts.push_back(run);
  return rle;
}

absl::Status CheckRle(const Rle& rle) {
  uint64_t sum = 0;
  for (uint32_t c : rle.counts) sum += c;
  const uint64_t pixels = static_cast<uint64_t>(rle.h) * static_cast<uint64_t>(rle.w);
  if (sum != pixels) {
    return absl::InvalidArgumentError(absl::StrCat("RLE counts sum to ", sum, ", the mask has ",
                                                   rle.h, "×", rle.w, " = ", pixels,
                                                   " pixels"));
  }
  return absl::OkStatus();
}

void DecodeRleInto(const Rle& rle, uint8_t* mask) {
  uint64_t pos = 0;
  const uint64_t h = static_cast<uint64_t>(rle.h);
  const uint64_t w = static_cast<uint64_t>(rle.w);
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    const uint64_t end = pos + rle.counts[i];
    if (i % 2 == 1 && end > pos) {
      // Column-major runs: one division per run, then step down the column (a division
      // per pixel was most of the rasterising cost).
      uint64_t col = pos / h, row = pos % h;
      for (uint64_t t = pos; t < end; ++t) {
        mask[row * w + col] = 1;
        if (++row == h) {
          row = 0;
          ++col;
        }
      }
    }
    pos = end;
  }
}

void DecodeRleIntoWindow(const Rle& rle, int x, int y, int width, int height,
                         uint8_t* window) {
  uint64_t pos = 0;
  const uint64_t h = static_cast<uint64_t>(rle.h);
  const int64_t y0 = y, y1 = int64_t{y} + height;  // The window's rows [y0, y1).
  const int64_t x0 = x, x1 = int64_t{x} + width;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    const uint64_t end = pos + rle.counts[i];
    if (i % 2 == 1 && end > pos) {
      // Column by column: the part of each column inside the window is one stride walk.
      for (uint64_t p = pos; p < end;) {
        const int64_t col = static_cast<int64_t>(p / h), row = static_cast<int64_t>(p % h);
        const uint64_t col_end = std::min<uint64_t>(end, (p / h + 1) * h);
        const int64_t last = row + static_cast<int64_t>(col_end - p);  // Rows [row, last).
        if (col >= x0 && col < x1) {
          uint8_t* out = window + (col - x0);
          for (int64_t r = std::max(row, y0); r < std::min(last, y1); ++r) {
            out[(r - y0) * width] = 1;
          }
        }
        p = col_end;
      }
    }
    pos = end;
  }
}

int64_t RleArea(const Rle& rle) {
  int64_t area = 0;
  for (size_t i = 1; i < rle.counts.size(); i += 2) area += rle.counts[i];
  return area;
}

void RleBox(const Rle& rle, double box[4]) {
  box[0] = box[1] = box[2] = box[3] = 0;
  if (rle.h <= 0 || rle.w <= 0) return;
  const uint64_t h = static_cast<uint64_t>(rle.h);
  uint64_t xs = UINT64_MAX, xe = 0, ys = UINT64_MAX, ye = 0, pos = 0;
  bool any = false;
  for (size_t i = 0; i < rle.counts.size(); ++i) {
    const uint64_t start = pos, count = rle.counts[i];
    pos += count;
    if (i % 2 == 0 || count == 0) continue;
    const uint64_t last = pos - 1;
    any = true;
    xs = std::min(xs, start / h);
    xe = std::max(xe, last / h);
    if (start / h != last / h) {  // The run wraps a column: every row is covered.
      ys = 0;
      ye = h - 1;
    } else {
      ys = std::min(ys, start % h);
      ye = std::max(ye, last % h);
    }
  }
  if (!any) return;
  box[0] = static_cast<double>(xs);
  box[1] = static_cast<double>(ys);
  box[2] = static_cast<double>(xe - xs + 1);
  box[3] = static_cast<double>(ye - ys + 1);
}

}  // namespace flowloader::detection
