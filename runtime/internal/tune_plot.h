// tune_plot.h: the chart `flowloader tune` writes as DIR/tune.svg.
//
// TunePlotSvg draws the measured trials as a standalone SVG 1.1 document: images/s
// against num_workers (solid, left axis) and peak RSS (dashed, right axis), one colour
// per batch size, the chosen trial ringed and labelled. It is a pure function of its
// arguments: the same trials give the same bytes (numbers are formatted by hand, never
// through the C locale), so tune.svg can be diffed and tested.
//
// Thread-safety: all functions are pure and may be called from any thread.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_TUNE_PLOT_H_
#define FLOWLOADER_RUNTIME_INTERNAL_TUNE_PLOT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace flowloader {

// TunePlotPoint is one measured trial.
struct TunePlotPoint {
  int num_workers = 0;
  int batch_size = 0;
  int prefetch_batches = 0;
  double images_per_second = 0;
  int64_t peak_rss_bytes = 0;
};

// TunePlotSvg draws images/s against num_workers, one line per batch size (a trial per
// (batch_size, num_workers) — where several prefetch values were tried for the same pair,
// the best images/s), peak RSS on a second y axis (dashed, same colour per batch size),
// the chosen trial marked and labelled, axes labelled with units and ticks, a legend, and
// `title` on top. Returns a complete standalone SVG 1.1 document (no scripts, no external
// references).
//
// Values a chart cannot place are drawn at zero: a negative, NaN or infinite images/s, a
// negative RSS. The title is escaped for XML; bytes that are not UTF-8 become U+FFFD and
// control characters spaces, so any title gives a well-formed document.
std::string TunePlotSvg(const std::vector<TunePlotPoint>& trials, const TunePlotPoint& chosen,
                        const std::string& title);

namespace tune_plot_internal {

// NiceAxis is a linear axis from 0 whose ticks are k × step, step = mantissa × 10^exponent
// with mantissa 1, 2 or 5 (so tick labels read 0, 50, 100 rather than 0, 47, 94).
struct NiceAxis {
  int mantissa = 1;
  int exponent = 0;
  int tick_count = 1;  // Ticks 0, step, ..., tick_count × step; the last is the axis top.

  double Step() const;
  double Max() const { return Step() * tick_count; }
  // TickLabel formats k × step exactly ("0.25", "1500"), with as many decimals as the
  // step needs, whatever the C locale.
  std::string TickLabel(int k) const;
};

// NiceAxisFor returns the axis from 0 that holds `max_value` (≥ 0) with a little headroom
// in about `target_ticks` steps. A max of 0 gives the axis 0..1.
NiceAxis NiceAxisFor(double max_value, int target_ticks);

// NiceAxisWithTicks returns the axis of exactly `tick_count` nice steps that holds
// `max_value` (≥ 0) with a little headroom, so a second y axis can share the first one's
// grid lines.
NiceAxis NiceAxisWithTicks(double max_value, int tick_count);

// ByteUnit is the binary unit RSS is shown in.
struct ByteUnit {
  const char* name;  // "B", "KiB", "MiB", "GiB", "TiB".
  double bytes;      // 1, 1024, ...
};

// ByteUnitFor returns the largest unit not above `max_bytes` (B for under 1 KiB).
ByteUnit ByteUnitFor(int64_t max_bytes);

// FormatBytes writes `bytes` in its own unit: "512 B", "1.5 GiB", "384 MiB" (one decimal
// under 10 units, none above).
std::string FormatBytes(int64_t bytes);

// EscapeXmlText makes `text` safe as XML character data and attribute values: & < > " '
// escaped, invalid UTF-8 as U+FFFD, control characters (not allowed in XML 1.0) as spaces.
std::string EscapeXmlText(const std::string& text);

}  // namespace tune_plot_internal
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_TUNE_PLOT_H_
