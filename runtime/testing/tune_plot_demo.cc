// tune_plot_demo: writes the tune.svg chart for a fixed set of trials, to look at it and
// for tune_plot_svg_test.py to check its structure.
//
//   bazel run //runtime:tune_plot_demo -- /tmp/tune.svg [SCENARIO]
//
// SCENARIO (default hill_climb) is one of the shapes a tune run can give the chart; see
// kScenarios below. The trials are made up (a cost model), not measured.
//
// Thread-safety: a single-threaded program.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/internal/tune_plot.h"

namespace {

using flowloader::TunePlotPoint;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

struct Chart {
  std::vector<TunePlotPoint> trials;
  TunePlotPoint chosen;
  std::string title;
};

// ModelRate is a made-up throughput: near-linear up to 2 workers (2 cores), flat after,
// a little better with larger batches.
double ModelRate(int workers, int batch_size) {
  const double cores = workers < 2 ? workers : 2 + 0.05 * (workers - 2);
  return 260.0 * cores * (1 + 0.04 * (batch_size / 32));
}

// ModelRss is a made-up peak RSS: a base plus the batch buffers and per-worker scratch.
int64_t ModelRss(int workers, int batch_size, int prefetch) {
  const int64_t batch_bytes = int64_t{batch_size} * 3 * 224 * 224 * 4;
  return 180 * kMiB + (prefetch + 1) * batch_bytes + workers * 24 * kMiB;
}

TunePlotPoint Trial(int workers, int batch_size, int prefetch) {
  return {workers, batch_size, prefetch, ModelRate(workers, batch_size),
          ModelRss(workers, batch_size, prefetch)};
}

// HillClimb is what TuneSearch measures on 2 CPUs: workers at batch 64, prefetch at the
// best workers, batch sizes, then the workers again at the chosen batch size.
Chart HillClimb() {
  Chart c;
  for (int w = 1; w <= 4; ++w) c.trials.push_back(Trial(w, 64, 3));
  for (int p : {2, 4, 6}) c.trials.push_back(Trial(2, 64, p));
  for (int b : {32, 128, 256}) c.trials.push_back(Trial(2, b, 3));
  for (int w : {1, 3}) c.trials.push_back(Trial(w, 128, 3));
  c.chosen = Trial(2, 128, 3);
  c.title = "flowloader tune: /data/train (2 CPUs, 8 GiB RAM budget)";
  return c;
}

// Grid is `tune --grid`: every combination, several prefetch values per pair.
Chart Grid() {
  Chart c;
  for (int b : {32, 64, 128, 256}) {
    for (int w = 1; w <= 8; ++w) {
      for (int p : {2, 4}) c.trials.push_back(Trial(w, b, p));
    }
  }
  c.chosen = Trial(3, 256, 2);
  c.title = "flowloader tune --grid: /data/train";
  return c;
}

Chart Single() {
  Chart c;
  c.trials = {Trial(1, 64, 3)};
  c.chosen = c.trials[0];
  c.title = "one trial";
  return c;
}

// OneWorkers: every trial at the same num_workers (an x range of zero width).
Chart OneWorkers() {
  Chart c;
  for (int b : {32, 64, 128}) c.trials.push_back(Trial(2, b, 3));
  c.chosen = c.trials[1];
  c.title = "all trials at num_workers 2";
  return c;
}

Chart Zero() {
  Chart c;
  for (int w = 1; w <= 3; ++w) c.trials.push_back({w, 64, 3, 0.0, ModelRss(w, 64, 3)});
  c.chosen = c.trials[0];
  c.title = "no images delivered";
  return c;
}

// Many: twelve batch sizes, more than the palette has colours.
Chart Many() {
  Chart c;
  for (int i = 0; i < 12; ++i) {
    const int b = 8 * (i + 1);
    for (int w = 1; w <= 4; ++w) c.trials.push_back(Trial(w, b, 2));
  }
  c.chosen = Trial(2, 96, 2);
  c.title = "twelve batch sizes";
  return c;
}

// LargeRss: tens of GiB (big images, big batches).
Chart LargeRss() {
  Chart c;
  for (int b : {512, 1024}) {
    for (int w = 4; w <= 32; w += 4) {
      c.trials.push_back(
          {w, b, 4, 80.0 * w * (1 + b / 2048.0), 8 * kGiB + int64_t{b} * 24 * kMiB + w * kGiB});
    }
  }
  c.chosen = c.trials[5];
  c.title = "large RSS";
  return c;
}

// Escape: a title with XML's special characters, a control character and invalid UTF-8.
Chart Escape() {
  Chart c = Single();
  c.title = "<script>alert('x')</script> & \"quotes\"\x01 \xff caf\xc3\xa9";
  return c;
}

struct Scenario {
  const char* name;
  Chart (*make)();
};

constexpr Scenario kScenarios[] = {
    {"hill_climb", HillClimb},   {"grid", Grid},     {"single", Single},
    {"one_workers", OneWorkers}, {"zero", Zero},     {"many", Many},
    {"large_rss", LargeRss},     {"escape", Escape},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: tune_plot_demo OUT.svg [SCENARIO]\n";
    return 2;
  }
  const std::string wanted = argc == 3 ? argv[2] : "hill_climb";
  for (const Scenario& scenario : kScenarios) {
    if (wanted != scenario.name) continue;
    const Chart chart = scenario.make();
    std::ofstream out(argv[1], std::ios::binary);
    out << flowloader::TunePlotSvg(chart.trials, chart.chosen, chart.title);
    out.close();
    if (!out) {
      std::cerr << "tune_plot_demo: cannot write " << argv[1] << "\n";
      return 1;
    }
    return 0;
  }
  std::cerr << "tune_plot_demo: unknown scenario '" << wanted << "'; one of:";
  for (const Scenario& scenario : kScenarios) std::cerr << " " << scenario.name;
  std::cerr << "\n";
  return 2;
}
