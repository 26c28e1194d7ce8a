// real_pipeline_server: a real Pipeline (real JPEGs, real graph) behind a MetricsServer,
// for the Prometheus end-to-end test (exporters/testing/prometheus_e2e_test.py).
//
// Same flags as exporters' fake_pipeline_server, so the test can use either:
//   --address=HOST:PORT  (default 127.0.0.1:0)   --port_file=PATH   --run_seconds=N
// It generates a small ImageFolder dataset in $TEST_TMPDIR with two truncated files (so
// the error and skip series exist), and runs pipeline "train" for epochs until told to
// stop, with a consumer that sleeps a little per batch like a training step.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "exporters/metrics_exporter.h"
#include "runtime/pipeline.h"
#include "stages/core/log.h"
#include "tests/testing/test_data.h"

int main(int argc, char** argv) {
  std::string address = "127.0.0.1:0", port_file;
  int run_seconds = 120;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--address=")) {
      address = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--port_file=")) {
      port_file = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--run_seconds=")) {
      if (!absl::SimpleAtoi(arg, &run_seconds)) return 2;
    } else {
      std::fprintf(stderr, "real_pipeline_server: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  flowloader::SetMinLogLevel(flowloader::LogLevel::kError);
  namespace fl = flowloader;
  const std::string root = fl::testing::MakeImageFolder(fl::testing::TempDir("prom_data"), 3, 20);
  const std::string jpeg = fl::testing::ValidJpeg(64, 64);
  fl::testing::WriteFile(root + "/class_000/cut_1.jpg", jpeg.substr(0, jpeg.size() / 2));
  fl::testing::WriteFile(root + "/class_001/cut_2.jpg", jpeg.substr(0, 100));

  auto server = fl::MetricsServer::Start(address);
  if (!server.ok()) {
    std::fprintf(stderr, "real_pipeline_server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  fl::PipelineOptions o;
  o.name = "train";
  o.data = root;
  o.image_size = 64;
  o.batch_size = 8;
  o.num_workers = 2;
  // Buffers on auto, so the dashboard's autotune panel has its series to show.
  o.prefetch_batches = fl::PipelineOptions::kAuto;
  o.epochs = 0;
  o.device = fl::DeviceChoice::kCpu;
  // The train recipe as an op list with a pass after its head, so the per-op panel has
  // several ops to show: read → decode → transforms.
  o.stages = {fl::StageSpec{"read"}, fl::StageSpec{"decode"},
              fl::StageSpec{"transforms", "",
                            {{"ops", "random_resized_crop(size=72); random_horizontal_flip(); "
                                     "center_crop(size=64); normalize()"}}}};
  auto pipeline = fl::Pipeline::Create(o);
  if (!pipeline.ok()) {
    std::fprintf(stderr, "real_pipeline_server: %s\n", std::string(pipeline.status().message()).c_str());
    return 1;
  }
  if (absl::Status s = (*server)->Register((*pipeline)->stats()); !s.ok()) return 1;
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(run_seconds);
  while (absl::Now() < deadline) {
    std::shared_ptr<const fl::Batch> batch;
    bool end = false;
    if (!(*pipeline)->Next(&batch, &end).ok()) return 1;
    absl::SleepFor(absl::Milliseconds(20));  // A training step.
  }
  return 0;
}
