// metrics_exporter.h: Prometheus exposition of flowloader's pipeline statistics.
//
// The graph counts into plain atomics (graph/stage_stats.h); nothing on the hot path
// touches prometheus-cpp. At scrape time PipelineCollector reads every registered
// PipelineStats and builds the metric families; MetricsServer serves them on /metrics.
//
//   absl::StatusOr<std::shared_ptr<MetricsServer>> server =
//       MetricsServer::Shared("127.0.0.1:9464");
//   if (!server.ok()) return server.status();
//   absl::StatusOr<MetricsRegistration> reg = MetricsRegistration::Create(*server, stats);
//   if (!reg.ok()) return reg.status();
//   // ... run; `*reg` unregisters and releases the server when it goes away.
//
// Metric names (all `flowloader_`-prefixed, base units, `_total` on counters) and their
// labels (`pipeline`, `stage`, `reason`, `from`/`to`, build facts) are listed with their
// HELP text in internal/pipeline_families.cc. Several pipelines share one server and are
// told apart by `pipeline`, so pipeline names must be unique per process.
//
// Thread-safety: every class here is thread-safe; Collect() may run on the server's
// threads while pipelines register, unregister, run and are destroyed.
#ifndef FLOWLOADER_EXPORTERS_METRICS_EXPORTER_H_
#define FLOWLOADER_EXPORTERS_METRICS_EXPORTER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/stage_stats.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace flowloader {

// PipelineCollector is a prometheus::Collectable over any number of pipelines. It holds
// them weakly: a pipeline whose PipelineStats is destroyed drops out of the next scrape
// without an explicit Unregister. Use it directly to add flowloader's metrics to an
// Exposer you already run; MetricsServer wraps one for the common case.
class PipelineCollector : public prometheus::Collectable {
 public:
  // Clock returns the time used for uptime and idle seconds; injectable for tests.
  using Clock = std::function<absl::Time()>;

  explicit PipelineCollector(Clock clock = &absl::Now);
  ~PipelineCollector() override;
  PipelineCollector(const PipelineCollector&) = delete;
  PipelineCollector& operator=(const PipelineCollector&) = delete;

  // Register adds `stats` to every later scrape. Call it once the graph is built (stage
  // and edge lists are read without locks from then on). Errors: InvalidArgument for a
  // null pointer, an empty pipeline name, or duplicate stage names / edges (they would
  // make duplicate series, which fail the whole scrape); AlreadyExists when a live
  // pipeline of the same name is registered.
  absl::Status Register(std::shared_ptr<const PipelineStats> stats);

  // Unregister removes `stats`; returns false if it was not registered (or has expired).
  bool Unregister(const PipelineStats* stats);

  // size is the number of registered pipelines still alive.
  int size() const;

  // Collect builds the families for every live pipeline (empty when there is none).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Entry;
  void PruneExpiredLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock clock_;
  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan annotations, so
  // ThreadSanitizer cannot see absl::Mutex ordering.
  mutable std::mutex mu_;
  // Mutable because Collect() (const by interface) prunes and updates MonotonicState.
  mutable std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
};

// MetricsServer serves flowloader's metrics over HTTP on `/metrics` (prometheus-cpp's
// Exposer, civetweb underneath, two threads).
class MetricsServer {
 public:
  // kDefaultAddress is loopback: metrics are not published off the machine unless the
  // caller names an interface ("0.0.0.0:9464"). 9464 is the port OpenTelemetry's
  // Prometheus exporter uses by default, so scrape configs often expect it.
  static constexpr char kDefaultAddress[] = "127.0.0.1:9464";

  // Start listens on `address`: "host:port" with a numeric IPv4 host, "[v6]:port",
  // "localhost:port", or a bare port, which means loopback (civetweb alone would bind
  // every interface). Port 0 picks a free ephemeral port; see port(). Errors:
  // InvalidArgument for a malformed address; Unavailable when the port is in use,
  // PermissionDenied for a privileged port, with messages such as
  // "cannot listen on 127.0.0.1:9464: address in use".
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      absl::string_view address = kDefaultAddress);

  // Shared returns the process-wide server for `address`, starting it on first use.
  // Every handle shares one server and one /metrics page; the server stops when the
  // last handle is released. Addresses are compared after normalisation ("9464" ==
  // "127.0.0.1:9464"); "127.0.0.1:0" is one shared ephemeral server too. This is how
  // several Pipelines in one process publish on one port.
  static absl::StatusOr<std::shared_ptr<MetricsServer>> Shared(
      absl::string_view address = kDefaultAddress);

  // ~MetricsServer stops serving and closes the port before it returns (milliseconds).
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Register / Unregister: see PipelineCollector.
  absl::Status Register(std::shared_ptr<const PipelineStats> stats);
  bool Unregister(const PipelineStats* stats);

  // port is the port actually bound (the ephemeral one when started with port 0).
  int port() const { return port_; }
  // address is "host:port" with the bound port, e.g. "127.0.0.1:40417".
  const std::string& address() const { return address_; }
  // url is "http://<address>/metrics".
  std::string url() const;
  PipelineCollector& collector() { return *collector_; }

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer,
                std::shared_ptr<PipelineCollector> collector, std::string address, int port);

  // Declared before exposer_ so the server's threads stop before the collector goes.
  const std::shared_ptr<PipelineCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // Reset first by the destructor.
  const std::string address_;
  const int port_;
};

// MetricsRegistration keeps one pipeline registered with one server for as long as it
// lives, and keeps the server alive (so a Pipeline can simply own one). Movable.
class MetricsRegistration {
 public:
  // Create registers `stats` with `server`; errors as PipelineCollector::Register.
  static absl::StatusOr<MetricsRegistration> Create(
      std::shared_ptr<MetricsServer> server, std::shared_ptr<const PipelineStats> stats);

  MetricsRegistration() = default;  // Registered nowhere.
  MetricsRegistration(MetricsRegistration&& other) noexcept;
  MetricsRegistration& operator=(MetricsRegistration&& other) noexcept;
  ~MetricsRegistration();

  // server is the server registered with, or nullptr.
  MetricsServer* server() const { return server_.get(); }

 private:
  MetricsRegistration(std::shared_ptr<MetricsServer> server, const PipelineStats* stats)
      : server_(std::move(server)), stats_(stats) {}
  void Reset();

  std::shared_ptr<MetricsServer> server_;
  const PipelineStats* stats_ = nullptr;  // Identity only; never dereferenced.
};

}  // namespace flowloader

#endif  // FLOWLOADER_EXPORTERS_METRICS_EXPORTER_H_
