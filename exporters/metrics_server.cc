// metrics_server.cc: MetricsServer (an Exposer around one PipelineCollector), the
// process-wide shared servers, and MetricsRegistration.
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "exporters/internal/listen_address.h"
#include "exporters/metrics_exporter.h"
#include "prometheus/exposer.h"

namespace flowloader {
namespace {

using exporters_internal::ListenAddress;

absl::StatusOr<ListenAddress> Normalize(absl::string_view address) {
  return exporters_internal::ParseListenAddress(
      address.empty() ? absl::string_view(MetricsServer::kDefaultAddress) : address);
}

// SharedServer is one entry of the process-wide table behind MetricsServer::Shared.
struct SharedServer {
  std::unique_ptr<MetricsServer> server;
  int handles = 0;  // Live shared_ptrs handed out by Shared().
};

// The table is leaked on purpose: handles may outlive static destruction.
std::mutex& SharedMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::map<std::string, SharedServer>& SharedTable()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(SharedMu()) {
  static auto* table = new std::map<std::string, SharedServer>;
  return *table;
}

// ReleaseShared drops one handle. The last one stops the server while SharedMu is held,
// so a concurrent Shared() for the same address never finds the port still bound.
void ReleaseShared(const std::string& key) {
  std::lock_guard<std::mutex> lock(SharedMu());
  auto& table = SharedTable();
  auto it = table.find(key);
  if (it == table.end() || --it->second.handles > 0) return;
  table.erase(it);
}

}  // namespace

MetricsServer::MetricsServer(std::unique_ptr<prometheus::Exposer> exposer,
                             std::shared_ptr<PipelineCollector> collector,
                             std::string address, int port)
    : collector_(std::move(collector)),
      exposer_(std::move(exposer)),
      address_(std::move(address)),
      port_(port) {}

MetricsServer::~MetricsServer() {
  // civetweb's listening thread notices a stop request only when its poll() returns,
  // which without traffic takes up to its 2 s quantum (measured: every server that had
  // served a scrape took 2.0 s to stop). Connections poke it awake while we wait.
  absl::StatusOr<ListenAddress> listen = exporters_internal::ParseListenAddress(address_);
  absl::Notification stopped;
  std::thread waker;
  if (listen.ok()) {
    waker = std::thread([&] {
      do {
        exporters_internal::PokeListener(*listen);
      } while (!stopped.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
    });
  }
  exposer_.reset();
  stopped.Notify();
  if (waker.joinable()) waker.join();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    absl::string_view address) {
  absl::StatusOr<ListenAddress> listen = Normalize(address);
  if (!listen.ok()) return listen.status();
  std::unique_ptr<prometheus::Exposer> exposer;
  // civetweb throws CivetException (a std::runtime_error) when it cannot bind; nothing
  // may escape into the caller, who asked for a Status.
  try {
    // civetweb options: a slow or idle client must not hold the scrape hostage, so
    // requests time out after 2 s (civetweb's default is 30 s, past Prometheus's 10 s
    // scrape timeout) and there are enough threads that idle connections leave some free.
    exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen->ToString(), "num_threads", "8", "request_timeout_ms",
        "2000"});
  } catch (const std::exception& e) {
    return exporters_internal::BindFailure(*listen, e.what());
  } catch (...) {
    return exporters_internal::BindFailure(*listen, "unknown error from civetweb");
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) {
    return exporters_internal::BindFailure(*listen, "the server reports no listening port");
  }
  auto collector = std::make_shared<PipelineCollector>();
  exposer->RegisterCollectable(collector, "/metrics");
  return std::unique_ptr<MetricsServer>(new MetricsServer(
      std::move(exposer), std::move(collector), listen->WithPort(ports[0]), ports[0]));
}

absl::StatusOr<std::shared_ptr<MetricsServer>> MetricsServer::Shared(
    absl::string_view address) {
  absl::StatusOr<ListenAddress> listen = Normalize(address);
  if (!listen.ok()) return listen.status();
  const std::string key = listen->ToString();
  std::lock_guard<std::mutex> lock(SharedMu());
  SharedServer& entry = SharedTable()[key];
  if (entry.server == nullptr) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> started = Start(key);
    if (!started.ok()) {
      SharedTable().erase(key);
      return started.status();
    }
    entry.server = std::move(*started);
  }
  ++entry.handles;
  // Each handle has its own control block; its deleter returns the handle to the table.
  return std::shared_ptr<MetricsServer>(entry.server.get(),
                                        [key](MetricsServer*) { ReleaseShared(key); });
}

absl::Status MetricsServer::Register(std::shared_ptr<const PipelineStats> stats) {
  return collector_->Register(std::move(stats));
}

bool MetricsServer::Unregister(const PipelineStats* stats) {
  return collector_->Unregister(stats);
}

std::string MetricsServer::url() const { return absl::StrCat("http://", address_, "/metrics"); }

absl::StatusOr<MetricsRegistration> MetricsRegistration::Create(
    std::shared_ptr<MetricsServer> server, std::shared_ptr<const PipelineStats> stats) {
  if (server == nullptr) return absl::InvalidArgumentError("MetricsServer is null");
  const PipelineStats* key = stats.get();
  if (absl::Status s = server->Register(std::move(stats)); !s.ok()) return s;
  return MetricsRegistration(std::move(server), key);
}

MetricsRegistration::MetricsRegistration(MetricsRegistration&& other) noexcept
    : server_(std::move(other.server_)), stats_(other.stats_) {
  other.stats_ = nullptr;
}

MetricsRegistration& MetricsRegistration::operator=(MetricsRegistration&& other) noexcept {
  if (this != &other) {
    Reset();
    server_ = std::move(other.server_);
    stats_ = other.stats_;
    other.stats_ = nullptr;
  }
  return *this;
}

MetricsRegistration::~MetricsRegistration() { Reset(); }

void MetricsRegistration::Reset() {
  if (server_ != nullptr && stats_ != nullptr) server_->Unregister(stats_);
  server_.reset();
  stats_ = nullptr;
}

}  // namespace flowloader
