// fake_pipeline_server: serves synthetic pipelines ("train", "stuck") on a MetricsServer.
//
// The Prometheus tests talk to this binary only through its flags, so a real pipeline
// binary that accepts the same flags can replace it:
//   --address=HOST:PORT   where to listen (default 127.0.0.1:0, an ephemeral port)
//   --port_file=PATH      write the bound port there once serving (atomically: tmp+rename)
//   --run_seconds=N       exit after N seconds (default 120), a bound if the test dies
//   --scrape_once         instead of serving: advance the pipelines a few deterministic
//                         steps, GET our own /metrics over TCP, print the body, exit
//                         (non-zero unless the scrape returned 200)
//
// Thread-safety: single-threaded main; the SyntheticDriver and the server have their own.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "exporters/metrics_exporter.h"
#include "exporters/testing/http_get.h"
#include "exporters/testing/synthetic_stats.h"

namespace {

using flowloader::MetricsServer;
using flowloader::PipelineStats;
namespace fx = flowloader::exporters_testing;

struct Flags {
  std::string address = "127.0.0.1:0";
  std::string port_file;
  int run_seconds = 120;
  bool scrape_once = false;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--address=")) {
      flags->address = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--port_file=")) {
      flags->port_file = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--run_seconds=")) {
      if (!absl::SimpleAtoi(arg, &flags->run_seconds)) return false;
    } else if (arg == "--scrape_once") {
      flags->scrape_once = true;
    } else {
      std::cerr << "unknown flag: " << arg << "\n";
      return false;
    }
  }
  return true;
}

bool WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "%d\n", port);
  return std::fclose(f) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start(flags.address);
  if (!server.ok()) {
    std::cerr << server.status() << "\n";
    return 1;
  }
  const absl::Time now = absl::Now();
  std::shared_ptr<PipelineStats> train = fx::MakeTrainStats("train", now - absl::Seconds(10));
  std::shared_ptr<PipelineStats> stuck = fx::MakeStuckStats("stuck", now);
  for (const auto& stats : {train, stuck}) {
    if (absl::Status s = (*server)->Register(stats); !s.ok()) {
      std::cerr << s << "\n";
      return 1;
    }
  }

  if (flags.scrape_once) {
    for (int i = 0; i < 10; ++i) fx::AdvanceTrain(*train, 1000, 1.0, now);
    absl::StatusOr<fx::HttpResponse> r = fx::HttpGet("127.0.0.1", (*server)->port(), "/metrics");
    if (!r.ok()) {
      std::cerr << r.status() << "\n";
      return 1;
    }
    std::cout << r->body;
    return r->status == 200 ? 0 : 1;
  }

  fx::SyntheticDriver driver({train});
  if (!flags.port_file.empty() && !WritePortFile(flags.port_file, (*server)->port())) {
    std::cerr << "cannot write " << flags.port_file << "\n";
    return 1;
  }
  std::cerr << "serving " << (*server)->url() << " for " << flags.run_seconds << " s\n";
  absl::SleepFor(absl::Seconds(flags.run_seconds));
  return 0;
}
