// tune_plot_test: the tune.svg chart's content, axes and escaping (its XML structure is
// checked by python3's parser in testing/tune_plot_svg_test.py).
#include "runtime/internal/tune_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
// GCC 12 at -O1 with ASan (--config=asan) warns -Wmaybe-uninitialized inside <regex>'s
// own std::function states, once per pattern compiled: quiet for that header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

using tune_plot_internal::ByteUnitFor;
using tune_plot_internal::EscapeXmlText;
using tune_plot_internal::FormatBytes;
using tune_plot_internal::NiceAxis;
using tune_plot_internal::NiceAxisFor;
using tune_plot_internal::NiceAxisWithTicks;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

std::vector<TunePlotPoint> SmallGrid() {
  std::vector<TunePlotPoint> trials;
  for (int b : {32, 64}) {
    for (int w = 1; w <= 4; ++w) {
      trials.push_back({w, b, 3, 100.0 * w + b, (200 + 10 * w + b) * kMiB});
    }
  }
  return trials;
}

// Matches returns every capture group 1 of `pattern` in `text`.
std::vector<std::string> Matches(const std::string& text, const std::string& pattern) {
  std::vector<std::string> found;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    found.push_back((*it)[1].str());
  }
  return found;
}

bool HasNonFiniteNumber(const std::string& svg) {
  return svg.find("nan") != std::string::npos || svg.find("inf") != std::string::npos;
}

TEST(TunePlotSvgTest, IsAStandaloneDocument) {
  const std::vector<TunePlotPoint> trials = SmallGrid();
  const std::string svg = TunePlotSvg(trials, trials[2], "tune");
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // No scripts, no links, no external DTD or images.
  for (const char* forbidden : {"<script", "href", "<!DOCTYPE", "<image", "url("}) {
    EXPECT_EQ(svg.find(forbidden), std::string::npos) << forbidden;
  }
}

TEST(TunePlotSvgTest, SameTrialsInAnyOrderGiveTheSameBytes) {
  std::vector<TunePlotPoint> trials = SmallGrid();
  const std::string first = TunePlotSvg(trials, trials[5], "tune");
  EXPECT_EQ(TunePlotSvg(trials, trials[5], "tune"), first);
  const TunePlotPoint chosen = trials[5];
  std::reverse(trials.begin(), trials.end());
  std::rotate(trials.begin(), trials.begin() + 3, trials.end());
  EXPECT_EQ(TunePlotSvg(trials, chosen, "tune"), first);
}

TEST(TunePlotSvgTest, OneLinePairPerBatchSizeInTheBatchSizesColour) {
  const std::vector<TunePlotPoint> trials = SmallGrid();
  const std::string svg = TunePlotSvg(trials, trials[0], "tune");
  EXPECT_EQ(Matches(svg, "id=\"rate-b(\\d+)\""), (std::vector<std::string>{"32", "64"}));
  EXPECT_EQ(Matches(svg, "id=\"rss-b(\\d+)\""), (std::vector<std::string>{"32", "64"}));
  EXPECT_EQ(Matches(svg, "id=\"legend-b(\\d+)\""), (std::vector<std::string>{"32", "64"}));
  // The dashed RSS line shares its batch size's colour.
  EXPECT_EQ(Matches(svg, "id=\"rate-b64\" class=\"rate\" stroke=\"(#[0-9a-f]+)\""),
            Matches(svg, "id=\"rss-b64\" class=\"rss\" stroke=\"(#[0-9a-f]+)\""));
  EXPECT_NE(svg.find("class=\"rss\" stroke=\"#ff7f0e\" stroke-width=\"1.5\" "
                     "stroke-dasharray=\"6 4\""),
            std::string::npos);
  // Four workers on each line: a polyline of four points.
  const std::vector<std::string> points =
      Matches(svg, "<polyline points=\"([^\"]*)\" fill=\"none\" id=\"rate-b32\"");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(std::count(points[0].begin(), points[0].end(), ','), 4);
}

TEST(TunePlotSvgTest, AnotherPrefetchOfTheSamePairKeepsTheBestImagesPerSecond) {
  const std::vector<TunePlotPoint> trials = {
      {2, 64, 2, 500, 300 * kMiB}, {2, 64, 4, 640, 400 * kMiB}, {2, 64, 6, 610, 500 * kMiB}};
  const std::string svg = TunePlotSvg(trials, trials[1], "tune");
  EXPECT_NE(svg.find("<title>batch_size 64, num_workers 2, prefetch_batches 4: 640 "
                     "images/s, peak RSS 400 MiB</title>"),
            std::string::npos);
  EXPECT_EQ(svg.find("prefetch_batches 2:"), std::string::npos);
  EXPECT_EQ(svg.find("prefetch_batches 6:"), std::string::npos);
  // One point per pair: the polyline holds a single coordinate pair.
  EXPECT_EQ(Matches(svg,
                    "<polyline points=\"([0-9.]+,[0-9.]+)\" fill=\"none\" "
                    "id=\"rate-b64\"")
                .size(),
            1u);
}

TEST(TunePlotSvgTest, ChosenTrialIsRingedAndLabelled) {
  const std::vector<TunePlotPoint> trials = SmallGrid();
  const std::string svg = TunePlotSvg(trials, trials[6], "tune");  // w3, b64.
  EXPECT_NE(svg.find("id=\"chosen-marker\""), std::string::npos);
  EXPECT_NE(svg.find("id=\"chosen-rss-marker\""), std::string::npos);
  EXPECT_NE(svg.find(">chosen: num_workers 3, batch_size 64</text>"), std::string::npos);
  EXPECT_NE(svg.find(">prefetch_batches 3, 364 images/s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">peak RSS 294 MiB</text>"), std::string::npos);
}

TEST(TunePlotSvgTest, ChosenLabelCoversNoMarker) {
  // Throughput falls with workers, so the top-left corner (the first spot tried) is taken.
  std::vector<TunePlotPoint> trials;
  for (int b : {32, 64, 128}) {
    for (int w = 1; w <= 6; ++w) {
      trials.push_back({w, b, 3, 1000.0 - 90 * w + b, (300 + 20 * w + b) * kMiB});
    }
  }
  const std::string svg = TunePlotSvg(trials, trials[7], "falling");
  std::smatch box;
  ASSERT_TRUE(
      std::regex_search(svg, box,
                        std::regex("id=\"chosen-label\">\n<rect x=\"([0-9.]+)\" y=\"([0-9.]+)\" "
                                   "width=\"([0-9.]+)\" height=\"([0-9.]+)\"")));
  const double x = std::stod(box[1]), y = std::stod(box[2]);
  const double right = x + std::stod(box[3]), bottom = y + std::stod(box[4]);
  const std::regex marker(
      "<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"[0-9.]+\" "
      "class=\"(?:rate|rss)-marker\"");
  int markers = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker); it != std::sregex_iterator();
       ++it, ++markers) {
    const double cx = std::stod((*it)[1]), cy = std::stod((*it)[2]);
    EXPECT_FALSE(cx > x - 4 && cx < right + 4 && cy > y - 4 && cy < bottom + 4)
        << "marker at " << cx << "," << cy << " under the label " << box[0];
  }
  EXPECT_EQ(markers, 36);
}

TEST(TunePlotSvgTest, SingleTrialHasAMarkerAndAFiniteXRange) {
  const TunePlotPoint only{1, 64, 3, 812.5, 700 * kMiB};
  const std::string svg = TunePlotSvg({only}, only, "one");
  EXPECT_FALSE(HasNonFiniteNumber(svg));
  EXPECT_EQ(Matches(svg, "<circle [^>]*class=\"(rate-marker)\"").size(), 1u);
  // Zero width: one worker of padding each side, ticks 0, 1, 2.
  EXPECT_EQ(Matches(svg, "class=\"x-tick\">(\\d+)<"), (std::vector<std::string>{"0", "1", "2"}));
}

TEST(TunePlotSvgTest, ZeroImagesPerSecondAndNonFiniteValuesDrawAtZero) {
  const std::vector<TunePlotPoint> trials = {
      {1, 64, 3, 0, 100 * kMiB},
      {2, 64, 3, std::numeric_limits<double>::quiet_NaN(), 100 * kMiB},
      {3, 64, 3, std::numeric_limits<double>::infinity(), -5}};
  const std::string svg = TunePlotSvg(trials, trials[0], "zero");
  EXPECT_FALSE(HasNonFiniteNumber(svg));
  // All three on the x axis (the frame's bottom), not at some pixel a NaN turned into.
  const std::vector<std::string> heights =
      Matches(svg, "<circle cx=\"[0-9.]+\" cy=\"([0-9.]+)\" r=\"4.5\" class=\"rate-marker\"");
  ASSERT_EQ(heights.size(), 3u);
  EXPECT_EQ(std::set<std::string>(heights.begin(), heights.end()).size(), 1u);
  std::smatch frame;
  ASSERT_TRUE(std::regex_search(svg, frame,
                                std::regex("<rect x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9."
                                           "]+\" height=\"([0-9.]+)\" fill=\"none\"")));
  EXPECT_DOUBLE_EQ(std::stod(heights[0]), std::stod(frame[1]) + std::stod(frame[2]));
  EXPECT_NE(svg.find("num_workers 3, prefetch_batches 3: 0 images/s, peak RSS 0 B"),
            std::string::npos);
  EXPECT_EQ(Matches(svg, "class=\"rate-tick\">([0-9.]+)<"),
            (std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
}

TEST(TunePlotSvgTest, LargeRssIsShownInGiB) {
  const std::vector<TunePlotPoint> trials = {{4, 512, 4, 900, 20 * kGiB},
                                             {8, 512, 4, 1500, 38 * kGiB}};
  const std::string svg = TunePlotSvg(trials, trials[1], "big");
  EXPECT_NE(svg.find(">peak RSS (GiB)</text>"), std::string::npos);
  // images/s 0..1600 in steps of 200 (nine ticks); RSS as many ticks: 0..40 GiB by 5.
  EXPECT_EQ(Matches(svg, "class=\"rss-tick\">([0-9.]+)<"),
            (std::vector<std::string>{"0", "5", "10", "15", "20", "25", "30", "35", "40"}));
  EXPECT_NE(svg.find("peak RSS 38 GiB"), std::string::npos);
}

TEST(TunePlotSvgTest, ManyBatchSizesCycleTenColoursWithTheNextMarkerShape) {
  std::vector<TunePlotPoint> trials;
  for (int i = 1; i <= 12; ++i) trials.push_back({1, 8 * i, 2, 100.0 * i, 100 * kMiB});
  const std::string svg = TunePlotSvg(trials, trials[0], "many");
  const std::vector<std::string> colours = Matches(svg, "class=\"rate\" stroke=\"(#[0-9a-f]{6})\"");
  ASSERT_EQ(colours.size(), 12u);
  EXPECT_EQ(std::set<std::string>(colours.begin(), colours.begin() + 10).size(), 10u);
  EXPECT_EQ(colours[10], colours[0]);
  EXPECT_EQ(colours[11], colours[1]);
  // The eleventh and twelfth batch sizes are squares, the first ten circles.
  EXPECT_EQ(Matches(svg, "<(circle) [^>]*class=\"rate-marker\"").size(), 10u);
  EXPECT_EQ(Matches(svg, "<(rect) [^>]*class=\"rate-marker\"").size(), 2u);
  EXPECT_EQ(Matches(svg, "id=\"legend-b(\\d+)\"").size(), 12u);
  // The canvas grows to hold a legend of twelve rows.
  EXPECT_EQ(Matches(svg, "<svg [^>]*height=\"(\\d+)\"").at(0), "540");
  std::vector<TunePlotPoint> more;
  for (int i = 1; i <= 30; ++i) more.push_back({1, i, 2, 10.0, kMiB});
  const std::string tall = TunePlotSvg(more, more[0], "thirty");
  EXPECT_GT(std::stoi(Matches(tall, "<svg [^>]*height=\"(\\d+)\"").at(0)), 540);
}

TEST(TunePlotSvgTest, TitleIsEscapedAndCutToTheCanvas) {
  const std::string svg = TunePlotSvg(SmallGrid(), SmallGrid()[0], "<b>&\"x'\x01\xff");
  EXPECT_NE(svg.find("<title>&lt;b&gt;&amp;&quot;x&apos; \xEF\xBF\xBD</title>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);

  const std::string long_title(400, 'x');
  const std::string cut = TunePlotSvg(SmallGrid(), SmallGrid()[0], long_title);
  EXPECT_NE(cut.find("<title>" + long_title + "</title>"), std::string::npos);
  const std::vector<std::string> shown = Matches(cut, "id=\"title\">([^<]*)<");
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_LT(shown[0].size(), long_title.size());
  EXPECT_EQ(shown[0].substr(shown[0].size() - 3), "\xE2\x80\xA6");  // …
}

TEST(EscapeXmlTextTest, KeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(EscapeXmlText("caf\xC3\xA9 \xF0\x9F\x9A\x80"), "caf\xC3\xA9 \xF0\x9F\x9A\x80");
  EXPECT_EQ(EscapeXmlText("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // Overlong '/'.
  EXPECT_EQ(EscapeXmlText("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(EscapeXmlText("a\tb\nc"), "a b c");
}

TEST(NiceAxisTest, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  for (double max :
       {0.0, 0.003, 0.37, 1.0, 7.0, 49.0, 99.9, 100.0, 812.5, 1000.0, 4321.0, 65536.0, 2.5e6}) {
    const NiceAxis axis = NiceAxisFor(max, 5);
    EXPECT_TRUE(axis.mantissa == 1 || axis.mantissa == 2 || axis.mantissa == 5) << max;
    EXPECT_GE(axis.Max(), max * 1.05 - 1e-12) << max;
    EXPECT_GE(axis.tick_count, 3) << max;
    EXPECT_LE(axis.tick_count, 10) << max;
  }
  const NiceAxis thousand = NiceAxisFor(1000, 5);
  EXPECT_EQ(thousand.Step(), 200);
  EXPECT_EQ(thousand.tick_count, 6);
  EXPECT_EQ(thousand.TickLabel(6), "1200");
  const NiceAxis zero = NiceAxisFor(0, 5);
  EXPECT_EQ(zero.Max(), 1);
  EXPECT_EQ(zero.TickLabel(1), "0.2");
  const NiceAxis small = NiceAxisFor(0.037, 5);
  EXPECT_EQ(small.TickLabel(1), "0.01");
  EXPECT_EQ(small.TickLabel(4), "0.04");
}

TEST(NiceAxisTest, WithTicksHoldsTheMaximumInExactlyThatManySteps) {
  const NiceAxis axis = NiceAxisWithTicks(40.5, 6);
  EXPECT_EQ(axis.tick_count, 6);
  EXPECT_EQ(axis.Step(), 10);
  for (double max : {0.0, 0.9, 13.0, 512.0, 1023.0}) {
    for (int ticks = 1; ticks <= 9; ++ticks) {
      const NiceAxis a = NiceAxisWithTicks(max, ticks);
      EXPECT_EQ(a.tick_count, ticks);
      EXPECT_GE(a.Max(), max * 1.05 - 1e-12) << max << " " << ticks;
    }
  }
}

TEST(FormatBytesTest, PicksTheUnitThatReadsBest) {
  EXPECT_STREQ(ByteUnitFor(1023).name, "B");
  EXPECT_STREQ(ByteUnitFor(1024).name, "KiB");
  EXPECT_STREQ(ByteUnitFor(3 * kGiB).name, "GiB");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(384 * kMiB), "384 MiB");
  EXPECT_EQ(FormatBytes(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(FormatBytes(2 * kGiB), "2 GiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 40), "3 TiB");
}

}  // namespace
}  // namespace flowloader
