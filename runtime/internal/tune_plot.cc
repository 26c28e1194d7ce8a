// tune_plot.cc: the tune.svg chart, written as SVG text by hand.
//
// Layout (pixels, y down): the title on top; the plot frame in the middle with images/s
// ticks on its left and peak-RSS ticks on its right (the RSS axis has as many ticks as the
// images/s axis, so one set of grid lines serves both); num_workers under it; the legend
// in a column right of the RSS axis, outside the frame, so it never covers a line. The
// chosen trial's label box goes where, of a 6 px grid of spots over the frame, it hides
// the fewest markers and least line and its leader is short and crosses no marker.
#include "runtime/internal/tune_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stages/core/utf8.h"

namespace flowloader {
namespace tune_plot_internal {
namespace {

// Appends `n` in decimal.
void AppendInt(int64_t n, std::string* out) { *out += std::to_string(n); }

// FormatFixed writes `v` rounded to `decimals` (0..3) places, without the C locale (a
// locale with a decimal comma would break SVG numbers). Trailing ".0" is kept only when
// `keep_zeros`.
std::string FormatFixed(double v, int decimals, bool keep_zeros) {
  if (!std::isfinite(v)) v = 0;
  int64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  int64_t scaled = static_cast<int64_t>(std::llround(std::fabs(v) * scale));
  std::string out = (v < 0 && scaled != 0) ? "-" : "";
  AppendInt(scaled / scale, &out);
  int64_t frac = scaled % scale;
  if (decimals > 0 && (frac != 0 || keep_zeros)) {
    std::string digits = std::to_string(frac);
    out += '.';
    out.append(static_cast<size_t>(decimals) - digits.size(), '0');
    out += digits;
    if (!keep_zeros) {
      while (out.back() == '0') out.pop_back();
    }
  }
  return out;
}

// Coordinate writes an SVG coordinate with one decimal (a tenth of a pixel is plenty).
std::string Coordinate(double v) { return FormatFixed(v, 1, false); }

// FormatRate writes images/s the way a person reads it: "12.5" under 100, "1234" above.
std::string FormatRate(double v) { return FormatFixed(v, v < 100 ? 1 : 0, false); }

// DecodeUtf8 returns the code points of `s`; an invalid sequence becomes U+FFFD, one per
// bad byte, and control characters that XML 1.0 forbids become spaces.
std::vector<uint32_t> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> points;
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t n = Utf8SequenceAt(s, i, &cp);
    if (n == 0) {
      points.push_back(0xFFFD);
      i += 1;
      continue;
    }
    // XML 1.0 allows tab, LF and CR only among C0 controls; in one line of text all three
    // read as a space anyway. U+FFFE/U+FFFF are not XML characters either.
    if (cp < 0x20 || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF) cp = ' ';
    points.push_back(cp);
    i += n;
  }
  return points;
}

// EncodeEscaped writes code points as UTF-8, escaping XML's five special characters.
std::string EncodeEscaped(const std::vector<uint32_t>& points) {
  std::string out;
  for (uint32_t cp : points) {
    switch (cp) {
      case '&':
        out += "&amp;";
        continue;
      case '<':
        out += "&lt;";
        continue;
      case '>':
        out += "&gt;";
        continue;
      case '"':
        out += "&quot;";
        continue;
      case '\'':
        out += "&apos;";
        continue;
      default:
        break;
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// NiceMantissa returns 1, 2, 5 or 10 for a normalized step in [1, 10): the nearest when
// `round_up` is false, the smallest not below it when true.
int NiceMantissa(double normalized, bool round_up) {
  if (round_up) {
    if (normalized <= 1) return 1;
    if (normalized <= 2) return 2;
    if (normalized <= 5) return 5;
    return 10;
  }
  if (normalized < 1.5) return 1;
  if (normalized < 3.5) return 2;
  if (normalized < 7.5) return 5;
  return 10;
}

// NiceStep turns a raw step (> 0) into mantissa × 10^exponent.
NiceAxis NiceStep(double raw_step, bool round_up) {
  NiceAxis axis;
  int exponent = static_cast<int>(std::floor(std::log10(raw_step)));
  double normalized = raw_step / std::pow(10.0, exponent);
  // log10 can land a hair off for exact powers of ten.
  if (normalized >= 10) {
    normalized /= 10;
    ++exponent;
  } else if (normalized < 1) {
    normalized *= 10;
    --exponent;
  }
  int mantissa = NiceMantissa(normalized, round_up);
  if (mantissa == 10) {
    mantissa = 1;
    ++exponent;
  }
  axis.mantissa = mantissa;
  axis.exponent = exponent;
  return axis;
}

// HeadroomTop is the value an axis must reach for data up to `max_value`: 5% above it
// (so the top point is not drawn on the frame), or 1 for an all-zero series.
double HeadroomTop(double max_value) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return 1;
  return max_value * 1.05;
}

}  // namespace

double NiceAxis::Step() const { return mantissa * std::pow(10.0, exponent); }

std::string NiceAxis::TickLabel(int k) const {
  if (k == 0) return "0";
  if (exponent >= 0) {
    int64_t value = static_cast<int64_t>(k) * mantissa;
    for (int i = 0; i < exponent; ++i) value *= 10;
    return std::to_string(value);
  }
  // k × mantissa with the decimal point `-exponent` places from the right.
  const std::string digits = std::to_string(static_cast<int64_t>(k) * mantissa);
  const size_t decimals = static_cast<size_t>(-exponent);
  std::string padded =
      digits.size() <= decimals ? std::string(decimals + 1 - digits.size(), '0') + digits : digits;
  return padded.substr(0, padded.size() - decimals) + "." + padded.substr(padded.size() - decimals);
}

NiceAxis NiceAxisFor(double max_value, int target_ticks) {
  const double top = HeadroomTop(max_value);
  NiceAxis axis = NiceStep(top / std::max(1, target_ticks), /*round_up=*/false);
  axis.tick_count = std::max(1, static_cast<int>(std::ceil(top / axis.Step() - 1e-9)));
  return axis;
}

NiceAxis NiceAxisWithTicks(double max_value, int tick_count) {
  tick_count = std::max(1, tick_count);
  NiceAxis axis = NiceStep(HeadroomTop(max_value) / tick_count, /*round_up=*/true);
  axis.tick_count = tick_count;
  return axis;
}

ByteUnit ByteUnitFor(int64_t max_bytes) {
  static constexpr ByteUnit kUnits[] = {
      {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}};
  for (const ByteUnit& unit : kUnits) {
    if (static_cast<double>(max_bytes) >= unit.bytes) return unit;
  }
  return {"B", 1};
}

std::string FormatBytes(int64_t bytes) {
  const ByteUnit unit = ByteUnitFor(bytes);
  const double value = static_cast<double>(bytes) / unit.bytes;
  const int decimals = (unit.bytes > 1 && value < 10) ? 1 : 0;
  return FormatFixed(value, decimals, false) + " " + unit.name;
}

std::string EscapeXmlText(const std::string& text) { return EncodeEscaped(DecodeUtf8(text)); }

namespace {

// Canvas geometry. Text widths are estimated at 0.6 em per character (generous for
// sans-serif digits and lower case), which is what keeps labels inside the canvas.
constexpr double kWidth = 960;
constexpr double kMinHeight = 540;
constexpr double kPlotLeft = 84;
constexpr double kPlotRight = 680;
constexpr double kPlotTop = 64;
constexpr double kBottomMargin = 64;  // x tick labels and the num_workers label.
constexpr double kLegendLeft = kPlotRight + 84;
constexpr double kLegendRow = 20;
constexpr double kCharWidthEm = 0.6;
constexpr double kTickFont = 12;
constexpr double kLabelFont = 13;
constexpr double kTitleFont = 17;

// Ten colours that stay apart for most readers (Tableau 10); past ten batch sizes the
// colours repeat with the next marker shape.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
enum class Shape { kCircle, kSquare, kTriangle, kDiamond };
constexpr Shape kShapes[] = {Shape::kCircle, Shape::kSquare, Shape::kTriangle, Shape::kDiamond};

double TextWidth(size_t characters, double font_px) {
  return static_cast<double>(characters) * font_px * kCharWidthEm;
}

// Sanitized clamps what a chart cannot draw to zero.
TunePlotPoint Sanitized(TunePlotPoint p) {
  if (!std::isfinite(p.images_per_second) || p.images_per_second < 0) {
    p.images_per_second = 0;
  }
  if (p.peak_rss_bytes < 0) p.peak_rss_bytes = 0;
  return p;
}

// Better says whether trial `a` should stand for its (batch_size, num_workers) pair over
// `b`: more images/s, then less RSS, then fewer prefetch batches (a total order, so the
// output does not depend on the order trials arrive in).
bool Better(const TunePlotPoint& a, const TunePlotPoint& b) {
  if (a.images_per_second != b.images_per_second) {
    return a.images_per_second > b.images_per_second;
  }
  if (a.peak_rss_bytes != b.peak_rss_bytes) return a.peak_rss_bytes < b.peak_rss_bytes;
  return a.prefetch_batches < b.prefetch_batches;
}

// Series is one batch size's line: its best trial per num_workers, in num_workers order.
struct Series {
  int batch_size = 0;
  std::vector<TunePlotPoint> points;
  const char* colour = "";
  Shape shape = Shape::kCircle;
};

std::vector<Series> BuildSeries(const std::vector<TunePlotPoint>& trials) {
  std::map<int, std::map<int, TunePlotPoint>> best;  // batch_size → num_workers → trial.
  for (const TunePlotPoint& raw : trials) {
    const TunePlotPoint trial = Sanitized(raw);
    auto& by_workers = best[trial.batch_size];
    auto it = by_workers.find(trial.num_workers);
    if (it == by_workers.end()) {
      by_workers.emplace(trial.num_workers, trial);
    } else if (Better(trial, it->second)) {
      it->second = trial;
    }
  }
  std::vector<Series> series;
  for (const auto& [batch_size, by_workers] : best) {
    Series s;
    s.batch_size = batch_size;
    for (const auto& entry : by_workers) s.points.push_back(entry.second);
    const int index = static_cast<int>(series.size());
    s.colour = kPalette[index % kPaletteSize];
    s.shape = kShapes[(index / kPaletteSize) % 4];
    series.push_back(std::move(s));
  }
  return series;
}

// Frame maps data to pixels.
struct Frame {
  double left = kPlotLeft, right = kPlotRight, top = kPlotTop, bottom = 0;
  double x_min = 0, x_max = 1;  // num_workers at the frame's left and right edges.
  NiceAxis rate_axis;           // images/s, left.
  NiceAxis rss_axis;            // peak RSS in rss_unit, right.
  ByteUnit rss_unit{"B", 1};
  int x_step = 1;  // num_workers between x ticks.

  double X(double workers) const {
    return left + (workers - x_min) / (x_max - x_min) * (right - left);
  }
  double RateY(double rate) const { return bottom - rate / rate_axis.Max() * (bottom - top); }
  double RssY(int64_t bytes) const {
    return bottom - static_cast<double>(bytes) / rss_unit.bytes / rss_axis.Max() * (bottom - top);
  }
};

// XStep returns the whole number of workers between x ticks: 1, 2, 5, 10, ... so that
// there are at most about ten ticks.
int XStep(double span) {
  if (span <= 10) return 1;
  const NiceAxis step = NiceStep(span / 8, /*round_up=*/true);
  return static_cast<int>(std::llround(step.Step()));
}

Frame BuildFrame(const std::vector<Series>& series, const TunePlotPoint& chosen, double height) {
  Frame frame;
  frame.bottom = height - kBottomMargin;
  int workers_min = chosen.num_workers, workers_max = chosen.num_workers;
  double rate_max = chosen.images_per_second;
  int64_t rss_max = chosen.peak_rss_bytes;
  for (const Series& s : series) {
    for (const TunePlotPoint& p : s.points) {
      workers_min = std::min(workers_min, p.num_workers);
      workers_max = std::max(workers_max, p.num_workers);
      rate_max = std::max(rate_max, p.images_per_second);
      rss_max = std::max(rss_max, p.peak_rss_bytes);
    }
  }
  // Pad the x range so end markers clear the frame; one worker each side when every
  // trial ran at the same num_workers (a range of zero width).
  const double span = workers_max - workers_min;
  const double pad = span == 0 ? 1 : std::max(0.5, span * 0.04);
  frame.x_min = workers_min - pad;
  frame.x_max = workers_max + pad;
  frame.x_step = XStep(span);
  frame.rate_axis = NiceAxisFor(rate_max, 5);
  frame.rss_unit = ByteUnitFor(rss_max);
  frame.rss_axis = NiceAxisWithTicks(static_cast<double>(rss_max) / frame.rss_unit.bytes,
                                     frame.rate_axis.tick_count);
  return frame;
}

// Text writes one <text> element; `escaped` must already be XML-safe.
std::string Text(double x, double y, const std::string& escaped, double font_px,
                 const std::string& extra_attributes) {
  return "<text x=\"" + Coordinate(x) + "\" y=\"" + Coordinate(y) + "\" font-size=\"" +
         Coordinate(font_px) + "\"" + extra_attributes + ">" + escaped + "</text>\n";
}

std::string Line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + Coordinate(x1) + "\" y1=\"" + Coordinate(y1) + "\" x2=\"" +
         Coordinate(x2) + "\" y2=\"" + Coordinate(y2) + "\" " + attributes + "/>\n";
}

// MarkerShape draws a marker of half-size `r` centred on (x, y); `body` holds the child
// elements (a tooltip) or is empty.
std::string MarkerShape(Shape shape, double x, double y, double r, const std::string& paint,
                        const std::string& body) {
  std::string element;
  switch (shape) {
    case Shape::kCircle:
      element = "<circle cx=\"" + Coordinate(x) + "\" cy=\"" + Coordinate(y) + "\" r=\"" +
                Coordinate(r) + "\"";
      break;
    case Shape::kSquare:
      element = "<rect x=\"" + Coordinate(x - r) + "\" y=\"" + Coordinate(y - r) + "\" width=\"" +
                Coordinate(2 * r) + "\" height=\"" + Coordinate(2 * r) + "\"";
      break;
    case Shape::kTriangle:
      element = "<polygon points=\"" + Coordinate(x) + "," + Coordinate(y - 1.2 * r) + " " +
                Coordinate(x + 1.1 * r) + "," + Coordinate(y + 0.8 * r) + " " +
                Coordinate(x - 1.1 * r) + "," + Coordinate(y + 0.8 * r) + "\"";
      break;
    case Shape::kDiamond:
      element = "<polygon points=\"" + Coordinate(x) + "," + Coordinate(y - 1.3 * r) + " " +
                Coordinate(x + 1.3 * r) + "," + Coordinate(y) + " " + Coordinate(x) + "," +
                Coordinate(y + 1.3 * r) + " " + Coordinate(x - 1.3 * r) + "," + Coordinate(y) +
                "\"";
      break;
  }
  element += " " + paint;
  if (body.empty()) return element + "/>\n";
  const std::string tag = element.substr(1, element.find(' ') - 1);
  return element + ">" + body + "</" + tag + ">\n";
}

// TrialDescription is a trial in words, for tooltips.
std::string TrialDescription(const TunePlotPoint& p) {
  return "batch_size " + std::to_string(p.batch_size) + ", num_workers " +
         std::to_string(p.num_workers) + ", prefetch_batches " +
         std::to_string(p.prefetch_batches) + ": " + FormatRate(p.images_per_second) +
         " images/s, peak RSS " + FormatBytes(p.peak_rss_bytes);
}

// Title fits `title` on one line across the canvas: the font shrinks to 10 px, then the
// text is cut with an ellipsis (the full title stays in the document's <title>).
std::string Title(const std::string& title) {
  std::vector<uint32_t> points = DecodeUtf8(title);
  const double available = kWidth - 40;
  double font = kTitleFont;
  if (TextWidth(points.size(), font) > available) {
    font = std::max(10.0, available / (static_cast<double>(points.size()) * kCharWidthEm));
  }
  const size_t fits = static_cast<size_t>(available / (font * kCharWidthEm));
  if (points.size() > fits) {
    points.resize(fits - 1);
    points.push_back(0x2026);  // …
  }
  return Text(kWidth / 2, 32, EncodeEscaped(points), font,
              " text-anchor=\"middle\" font-weight=\"bold\" id=\"title\"");
}

std::string Axes(const Frame& f) {
  std::string out = "<g id=\"axes\" fill=\"#333\">\n";
  // Grid lines and ticks shared by both y axes (they have the same tick count).
  for (int k = 0; k <= f.rate_axis.tick_count; ++k) {
    const double y = f.bottom - (f.bottom - f.top) * k / f.rate_axis.tick_count;
    if (k > 0) out += Line(f.left, y, f.right, y, "stroke=\"#e4e4e4\" stroke-width=\"1\"");
    out += Line(f.left - 5, y, f.left, y, "stroke=\"#333\"");
    out += Line(f.right, y, f.right + 5, y, "stroke=\"#333\"");
    out += Text(f.left - 8, y + 4, f.rate_axis.TickLabel(k), kTickFont,
                " text-anchor=\"end\" class=\"rate-tick\"");
    out += Text(f.right + 8, y + 4, f.rss_axis.TickLabel(k), kTickFont,
                " text-anchor=\"start\" class=\"rss-tick\"");
  }
  const int first_tick =
      std::max(0, static_cast<int>(std::ceil(f.x_min / f.x_step - 1e-9)) * f.x_step);
  for (int w = first_tick; w <= f.x_max + 1e-9; w += f.x_step) {
    const double x = f.X(w);
    out += Line(x, f.bottom, x, f.bottom + 5, "stroke=\"#333\"");
    out += Text(x, f.bottom + 19, std::to_string(w), kTickFont,
                " text-anchor=\"middle\" class=\"x-tick\"");
  }
  out += "<rect x=\"" + Coordinate(f.left) + "\" y=\"" + Coordinate(f.top) + "\" width=\"" +
         Coordinate(f.right - f.left) + "\" height=\"" + Coordinate(f.bottom - f.top) +
         "\" fill=\"none\" stroke=\"#333\" stroke-width=\"1\"/>\n";
  const double middle_y = (f.top + f.bottom) / 2;
  out += Text((f.left + f.right) / 2, f.bottom + 46, "num_workers", kLabelFont,
              " text-anchor=\"middle\" id=\"x-label\"");
  out += Text(24, middle_y, "images/s", kLabelFont,
              " text-anchor=\"middle\" id=\"rate-label\" transform=\"rotate(-90 24 " +
                  Coordinate(middle_y) + ")\"");
  const double rss_label_x = f.right + 64;
  out += Text(rss_label_x, middle_y, std::string("peak RSS (") + f.rss_unit.name + ")", kLabelFont,
              " text-anchor=\"middle\" id=\"rss-label\" transform=\"rotate(90 " +
                  Coordinate(rss_label_x) + " " + Coordinate(middle_y) + ")\"");
  return out + "</g>\n";
}

using Polyline = std::vector<std::pair<double, double>>;

Polyline RatePolyline(const Frame& f, const Series& s) {
  Polyline line;
  for (const TunePlotPoint& p : s.points) {
    line.emplace_back(f.X(p.num_workers), f.RateY(p.images_per_second));
  }
  return line;
}

Polyline RssPolyline(const Frame& f, const Series& s) {
  Polyline line;
  for (const TunePlotPoint& p : s.points) {
    line.emplace_back(f.X(p.num_workers), f.RssY(p.peak_rss_bytes));
  }
  return line;
}

std::string PolylineElement(const Polyline& line, const std::string& attributes) {
  std::string points;
  for (const auto& [x, y] : line) {
    if (!points.empty()) points += ' ';
    points += Coordinate(x) + "," + Coordinate(y);
  }
  return "<polyline points=\"" + points + "\" fill=\"none\" " + attributes + "/>\n";
}

// Lines draws every series: RSS lines first (behind), then images/s lines, then the
// markers, so a marker is never hidden by another batch size's line.
std::string Lines(const Frame& f, const std::vector<Series>& series) {
  std::string rss = "<g id=\"rss-lines\">\n";
  std::string rate = "<g id=\"rate-lines\">\n";
  std::string markers = "<g id=\"markers\">\n";
  for (const Series& s : series) {
    const std::string id = std::to_string(s.batch_size);
    const std::string colour = s.colour;
    rss += PolylineElement(RssPolyline(f, s), "id=\"rss-b" + id + "\" class=\"rss\" stroke=\"" +
                                                  colour +
                                                  "\" stroke-width=\"1.5\" "
                                                  "stroke-dasharray=\"6 4\"");
    rate += PolylineElement(RatePolyline(f, s), "id=\"rate-b" + id + "\" class=\"rate\" stroke=\"" +
                                                    colour + "\" stroke-width=\"2.2\"");
    for (const TunePlotPoint& p : s.points) {
      const std::string tooltip = "<title>" + EscapeXmlText(TrialDescription(p)) + "</title>";
      markers += MarkerShape(
          s.shape, f.X(p.num_workers), f.RssY(p.peak_rss_bytes), 3,
          "class=\"rss-marker\" fill=\"#fff\" stroke=\"" + colour + "\" stroke-width=\"1.5\"",
          tooltip);
      markers += MarkerShape(
          s.shape, f.X(p.num_workers), f.RateY(p.images_per_second), 4.5,
          "class=\"rate-marker\" fill=\"" + colour + "\" stroke=\"#fff\" stroke-width=\"1\"",
          tooltip);
    }
  }
  return rss + "</g>\n" + rate + "</g>\n" + markers + "</g>\n";
}

struct Box {
  double x = 0, y = 0, width = 0, height = 0;
  bool Contains(double px, double py, double margin) const {
    return px >= x - margin && px <= x + width + margin && py >= y - margin &&
           py <= y + height + margin;
  }
};

// NearestPoint is the point of `box` nearest (px, py): where the leader meets the box.
std::pair<double, double> NearestPoint(const Box& box, double px, double py) {
  return {std::clamp(px, box.x, box.x + box.width), std::clamp(py, box.y, box.y + box.height)};
}

// Drawn is what a label could hide: the markers (every line's vertices) and points every
// 3 px along the lines between them.
struct Drawn {
  std::vector<std::pair<double, double>> markers;
  std::vector<std::pair<double, double>> line_samples;
};

Drawn DrawnPoints(const Frame& f, const std::vector<Series>& series) {
  Drawn drawn;
  for (const Series& s : series) {
    for (const Polyline& line : {RatePolyline(f, s), RssPolyline(f, s)}) {
      for (size_t i = 0; i < line.size(); ++i) {
        drawn.markers.push_back(line[i]);
        if (i == 0) continue;
        const auto [x0, y0] = line[i - 1];
        const auto [x1, y1] = line[i];
        const int steps = std::max(1, static_cast<int>(std::hypot(x1 - x0, y1 - y0) / 3));
        for (int k = 1; k < steps; ++k) {
          const double t = static_cast<double>(k) / steps;
          drawn.line_samples.emplace_back(x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        }
      }
    }
  }
  return drawn;
}

// LabelCost scores the label at `box` for the ring at (px, py); lower is better. A hidden
// marker costs most, then a marker the leader runs through (it would seem to point at
// it), then each 3 px of line hidden, then the leader's length (near reads better).
double LabelCost(const Box& box, double px, double py, const Drawn& drawn) {
  constexpr double kHiddenMarker = 40, kMarkerOnLeader = 25, kPerLeaderPixel = 1.0 / 8;
  const auto [qx, qy] = NearestPoint(box, px, py);
  const double leader = std::hypot(qx - px, qy - py);
  double cost = leader * kPerLeaderPixel;
  for (const auto& [x, y] : drawn.markers) {
    if (box.Contains(x, y, 6)) {
      cost += kHiddenMarker;
      continue;
    }
    if (std::hypot(x - px, y - py) < 10 || leader == 0) continue;  // Under the ring.
    const double t =
        std::clamp(((x - px) * (qx - px) + (y - py) * (qy - py)) / (leader * leader), 0.0, 1.0);
    if (std::hypot(px + t * (qx - px) - x, py + t * (qy - py) - y) < 7) {
      cost += kMarkerOnLeader;
    }
  }
  for (const auto& [x, y] : drawn.line_samples) {
    if (box.Contains(x, y, 2)) cost += 1;
  }
  return cost;
}

// PlaceLabel returns where a `width` × `height` label for the ring at (px, py) goes: the
// cheapest spot of a 6 px grid over the plot frame that keeps clear of the ring. The
// scan order is fixed and only a strictly lower cost wins, so the choice is deterministic.
Box PlaceLabel(const Frame& f, const Drawn& drawn, double px, double py, double width,
               double height) {
  constexpr double kInset = 4, kGrid = 6;
  const double x_lo = f.left + kInset, y_lo = f.top + kInset;
  const double x_hi = std::max(x_lo, f.right - kInset - width);
  const double y_hi = std::max(y_lo, f.bottom - kInset - height);
  Box best{x_lo, y_lo, width, height};
  double best_cost = -1;
  for (double y = y_lo;; y = std::min(y + kGrid, y_hi)) {
    for (double x = x_lo;; x = std::min(x + kGrid, x_hi)) {
      const Box candidate{x, y, width, height};
      double cost = LabelCost(candidate, px, py, drawn);
      if (candidate.Contains(px, py, 12)) cost += 1e9;  // Never over the ring itself.
      if (best_cost < 0 || cost < best_cost) {
        best = candidate;
        best_cost = cost;
      }
      if (x >= x_hi) break;
    }
    if (y >= y_hi) break;
  }
  return best;
}

// ChosenLabel rings the chosen trial (on both its images/s and its RSS point) and puts a
// three-line label next to it, where it hides the least of the chart.
std::string ChosenLabel(const Frame& f, const std::vector<Series>& series,
                        const TunePlotPoint& chosen) {
  const double px = f.X(chosen.num_workers);
  const double py = f.RateY(chosen.images_per_second);
  // Three short lines rather than two long ones: a narrower box finds a free spot more
  // often, and each line still names the flags as the user sets them.
  const std::vector<std::string> lines = {
      "chosen: num_workers " + std::to_string(chosen.num_workers) + ", batch_size " +
          std::to_string(chosen.batch_size),
      "prefetch_batches " + std::to_string(chosen.prefetch_batches) + ", " +
          FormatRate(chosen.images_per_second) + " images/s",
      "peak RSS " + FormatBytes(chosen.peak_rss_bytes)};
  constexpr double kFont = 12, kLineHeight = 16, kPadding = 7;
  size_t longest = 0;
  for (const std::string& line : lines) longest = std::max(longest, line.size());
  const Box best =
      PlaceLabel(f, DrawnPoints(f, series), px, py, TextWidth(longest, kFont) + 2 * kPadding,
                 kLineHeight * lines.size() + 2 * kPadding - 2);
  // The leader runs from the box's nearest corner to the ring's edge.
  const auto [corner_x, corner_y] = NearestPoint(best, px, py);
  const double distance = std::hypot(corner_x - px, corner_y - py);
  std::string out = "<g id=\"chosen\">\n";
  if (distance > 10) {
    const double edge_x = px + (corner_x - px) * 9 / distance;
    const double edge_y = py + (corner_y - py) * 9 / distance;
    out += Line(edge_x, edge_y, corner_x, corner_y, "stroke=\"#222\" stroke-width=\"1\"");
  }
  out += "<circle id=\"chosen-rss-marker\" cx=\"" + Coordinate(px) + "\" cy=\"" +
         Coordinate(f.RssY(chosen.peak_rss_bytes)) +
         "\" r=\"6.5\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"/>\n";
  out += "<circle id=\"chosen-marker\" cx=\"" + Coordinate(px) + "\" cy=\"" + Coordinate(py) +
         "\" r=\"9\" fill=\"none\" stroke=\"#222\" stroke-width=\"2.5\"><title>chosen: " +
         EscapeXmlText(TrialDescription(chosen)) + "</title></circle>\n";
  out += "<g id=\"chosen-label\">\n<rect x=\"" + Coordinate(best.x) + "\" y=\"" +
         Coordinate(best.y) + "\" width=\"" + Coordinate(best.width) + "\" height=\"" +
         Coordinate(best.height) +
         "\" rx=\"3\" fill=\"#fff\" fill-opacity=\"0.92\" stroke=\"#222\" "
         "stroke-width=\"1\"/>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    out += Text(best.x + kPadding, best.y + kPadding + kFont - 1 + kLineHeight * i,
                EscapeXmlText(lines[i]), kFont,
                i == 0 ? " font-weight=\"bold\" fill=\"#222\"" : " fill=\"#222\"");
  }
  return out + "</g>\n</g>\n";
}

// LegendHeight is the legend's height: a heading, a row per batch size, a gap and three
// key rows (solid, dashed, ring).
double LegendHeight(size_t series_count) {
  return kLegendRow * (static_cast<double>(series_count) + 5.5);
}

std::string Legend(const Frame& f, const std::vector<Series>& series) {
  std::string out = "<g id=\"legend\" font-size=\"12\" fill=\"#222\">\n";
  const double x = kLegendLeft;
  double y = f.top + 12;
  out += Text(x, y, "one colour per batch size", 12, " font-weight=\"bold\"");
  for (const Series& s : series) {
    y += kLegendRow;
    const std::string id = std::to_string(s.batch_size);
    out += "<g id=\"legend-b" + id + "\" class=\"legend-entry\">\n";
    out += Line(x, y - 4, x + 26, y - 4,
                "stroke=\"" + std::string(s.colour) + "\" stroke-width=\"2.2\"");
    out += MarkerShape(s.shape, x + 13, y - 4, 4.5,
                       "fill=\"" + std::string(s.colour) + "\" stroke=\"#fff\"", "");
    out += Text(x + 34, y, "batch_size " + id, 12, "");
    out += "</g>\n";
  }
  y += kLegendRow * 1.5;
  out += Line(x, y - 4, x + 26, y - 4, "stroke=\"#555\" stroke-width=\"2.2\"");
  out += Text(x + 34, y, "images/s (left axis)", 12, "");
  y += kLegendRow;
  out += Line(x, y - 4, x + 26, y - 4,
              "stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
  out += Text(x + 34, y, "peak RSS (right axis)", 12, "");
  y += kLegendRow;
  out += "<circle cx=\"" + Coordinate(x + 13) + "\" cy=\"" + Coordinate(y - 4) +
         "\" r=\"7\" fill=\"none\" stroke=\"#222\" stroke-width=\"2.5\"/>\n";
  out += Text(x + 34, y, "chosen trial", 12, "");
  return out + "</g>\n";
}

// Render is TunePlotSvg.
std::string Render(const std::vector<TunePlotPoint>& trials, const TunePlotPoint& chosen,
                   const std::string& title) {
  const std::vector<Series> series = BuildSeries(trials);
  const TunePlotPoint chosen_point = Sanitized(chosen);
  // The canvas grows when the legend needs more room than the plot's height.
  const double height =
      std::max(kMinHeight, std::ceil(kPlotTop + LegendHeight(series.size()) + kBottomMargin));
  const Frame frame = BuildFrame(series, chosen_point, height);

  const std::string w = Coordinate(kWidth), h = Coordinate(height);
  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + w + "\" height=\"" +
         h + "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\">\n";
  svg += "<title>" + EscapeXmlText(title) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#fff\"/>\n";
  svg += Title(title);
  svg += Axes(frame);
  svg += Lines(frame, series);
  svg += ChosenLabel(frame, series, chosen_point);
  svg += Legend(frame, series);
  svg += "</svg>\n";
  return svg;
}

}  // namespace
}  // namespace tune_plot_internal

std::string TunePlotSvg(const std::vector<TunePlotPoint>& trials, const TunePlotPoint& chosen,
                        const std::string& title) {
  return tune_plot_internal::Render(trials, chosen, title);
}

}  // namespace flowloader
