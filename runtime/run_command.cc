#include "runtime/run_command.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "exporters/metrics_exporter.h"
#include "exporters/report.h"
#include "exporters/trace.h"
#include "runtime/run_summary.h"
#include "stages/core/log.h"
#include "stages/core/resources.h"

namespace flowloader {
namespace {

// SignalWatcher turns SIGINT/SIGTERM into Pipeline::Stop from a dedicated thread
// (sigwait), so no work happens in a signal handler. It starts before Pipeline::Create:
// a signal then sets `cancel` (HttpOptions::cancel), which ends the HTTP reads that
// opening the dataset makes, so Ctrl-C during a slow index ends the process at once.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::shared_ptr<std::atomic<bool>> cancel) : cancel_(std::move(cancel)) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGUSR1);  // Our own wake-up at the end of the run.
    thread_ = std::thread([this] {
      int signo = 0;
      while (sigwait(&set_, &signo) == 0) {
        if (signo == SIGUSR1 && done_.load()) return;
        if (signo == SIGINT || signo == SIGTERM) {
          received_.store(signo);
          cancel_->store(true);
          std::lock_guard<std::mutex> lock(mu_);
          if (pipeline_ != nullptr) pipeline_->Stop();
        }
      }
    });
  }
  ~SignalWatcher() {
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGUSR1);
    thread_.join();
  }
  int received() const { return received_.load(); }
  // Watch makes a signal stop `pipeline` (which must outlive the watcher), at once if
  // one came already.
  void Watch(Pipeline* pipeline) {
    std::lock_guard<std::mutex> lock(mu_);
    pipeline_ = pipeline;
    if (received_.load() != 0) pipeline_->Stop();
  }

  // BlockInThisThread must run before any other thread starts, so every thread inherits
  // the mask and the signals reach only sigwait.
  static void BlockInThisThread() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }

 private:
  const std::shared_ptr<std::atomic<bool>> cancel_;
  std::mutex mu_;
  Pipeline* pipeline_ ABSL_GUARDED_BY(mu_) = nullptr;
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::atomic<int> received_{0};
  std::thread thread_;
};

// Facts are the run's facts after `wall` seconds (RunFactsFor, shared with the Python
// module's stats()).
RunFacts Facts(const RunConfig& config, double wall, int64_t epochs, double startup) {
  return RunFactsFor(config.pipeline, wall, epochs, startup);
}

// CheckWritable refuses, before the run, an output path the run could not write at its
// end: a directory, a file without write permission, or a missing parent directory.
absl::Status CheckWritable(const std::string& flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", path, " is a directory; give a file path"));
    }
    if (::access(path.c_str(), W_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", path, " is not writable: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": cannot create it in ",
                                                   dir, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// NothingDelivered says why a run delivered no sample: each stage's failures by reason.
std::string NothingDelivered(const RunSnapshot& snapshot) {
  std::vector<std::string> causes;
  for (const StageLoad& stage : snapshot.stages) {
    for (const auto& [reason, count] : stage.errors) {
      causes.push_back(absl::StrCat(count, " \u00d7 ", reason, " in ", stage.name));
    }
  }
  if (causes.empty()) return "the run delivered no sample";
  return absl::StrCat("the run delivered no sample: every sample failed: ",
                      absl::StrJoin(causes, ", "));
}

// WithChecksums adds to the summary object `json` its "data_checksum" (this run's) and
// "epoch_checksums" ({"EPOCH": checksum} for each epoch it delivered), each value a
// "xxh3:XXXXXXXXXXXXXXXX" string.
std::string WithChecksums(std::string json, const Pipeline& pipeline) {
  if (json.empty() || json.back() != '}') return json;
  json.pop_back();
  absl::StrAppend(&json, ", \"data_checksum\": \"", pipeline.data_checksum(),
                  "\", \"epoch_checksums\": {");
  const std::vector<std::pair<int64_t, std::string>> epochs = pipeline.epoch_checksums();
  for (size_t i = 0; i < epochs.size(); ++i) {
    absl::StrAppend(&json, i == 0 ? "" : ", ", "\"", epochs[i].first, "\": \"",
                    epochs[i].second, "\"");
  }
  return json + "}}";
}

// PrintNewAutotuneDecisions names, on stderr, each autotune change made since the last
// call: when, which knob, from and to, and why.
void PrintNewAutotuneDecisions(const PipelineStats& stats, size_t* reported) {
  const std::vector<AutotuneRecord> decisions = stats.autotune.Decisions();
  for (; *reported < decisions.size(); ++*reported) {
    const AutotuneRecord& d = decisions[*reported];
    std::fprintf(stderr, "autotune: at %.1f s %s %d -> %d: %s\n", d.seconds, d.knob.c_str(),
                 d.from, d.to, d.reason.c_str());
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

std::string EscapeKey(const std::string& key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

int RunCommand(const RunConfig& config) {
  SignalWatcher::BlockInThisThread();
  const absl::Time start = absl::Now();
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"summary_json", config.summary_json},
        {"keys_out", config.keys_out},
        {"samples_out", config.samples_out},
        {"trace_out", config.trace_out}}) {
    if (absl::Status s = CheckWritable(flag, path); !s.ok()) {
      std::fprintf(stderr, "flowloader: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }

  std::unique_ptr<Pipeline> pipeline;  // Declared first: the watcher below goes first.
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  SignalWatcher signals(cancel);
  PipelineOptions options = config.pipeline;
  options.http.cancel = cancel;
  absl::StatusOr<std::unique_ptr<Pipeline>> created = Pipeline::Create(options);
  if (signals.received() != 0) {
    std::fprintf(stderr, "flowloader: interrupted (signal %d) while opening the data\n",
                 signals.received());
    return 128 + signals.received();
  }
  if (!created.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", std::string(created.status().message()).c_str());
    return 2;
  }
  pipeline = std::move(*created);
  if (const std::string w = OversubscribedWorkers(Facts(config, 0, 0, -1)); !w.empty()) {
    LogWarning(w);
  }

  MetricsRegistration metrics;
  std::shared_ptr<MetricsServer> server;
  if (!config.metrics_address.empty()) {
    absl::StatusOr<std::shared_ptr<MetricsServer>> s = MetricsServer::Shared(config.metrics_address);
    if (!s.ok()) {
      std::fprintf(stderr, "flowloader: %s\n", std::string(s.status().message()).c_str());
      return 2;
    }
    server = *s;
    absl::StatusOr<MetricsRegistration> r = MetricsRegistration::Create(server, pipeline->stats());
    if (!r.ok()) {
      std::fprintf(stderr, "flowloader: %s\n", std::string(r.status().message()).c_str());
      return 2;
    }
    metrics = std::move(*r);
    LogInfo(absl::StrCat("metrics at ", server->url()));
  }

  std::ofstream keys;
  if (!config.keys_out.empty()) {
    keys.open(config.keys_out, std::ios::trunc);
    if (!keys) {
      std::fprintf(stderr, "flowloader: cannot write --keys_out=%s\n", config.keys_out.c_str());
      return 2;
    }
  }

  std::ofstream samples;
  if (!config.samples_out.empty()) {
    samples.open(config.samples_out, std::ios::trunc);
    if (!samples) {
      std::fprintf(stderr, "flowloader: cannot write --samples_out=%s\n",
                   config.samples_out.c_str());
      return 2;
    }
    // With repeated augmentation a sixth column says which copy of its sample a row is.
    samples << "epoch\tbatch\tkey\tlabel\tsource"
            << (pipeline->options().repeated_augment > 1 ? "\tcopy\n" : "\n");
  }

  signals.Watch(pipeline.get());
  const bool tty = isatty(STDERR_FILENO);
  absl::Time last_progress = absl::Now();
  absl::Time last_report = absl::Now();
  double first_batch_seconds = -1;  // Since config.process_start.
  double startup_seconds = -1;      // Since `start`, the clock of the facts' wall time.
  std::vector<double> epoch_end_seconds;  // Since `start`, one per finished epoch.
  int64_t epochs_done = 0;
  size_t autotune_reported = 0;  // Autotune decisions already named by --report_every.
  absl::Status status;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    status = pipeline->Next(&batch, &end_of_epoch);
    if (!status.ok()) break;
    if (end_of_epoch) {
      epoch_end_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
      if (pipeline->done()) break;
      ++epochs_done;
      continue;
    }
    if (first_batch_seconds < 0 && batch->size() > 0) {
      const absl::Time now = absl::Now();
      first_batch_seconds = absl::ToDoubleSeconds(now - config.process_start);
      startup_seconds = absl::ToDoubleSeconds(now - start);
    }
    if (keys.is_open()) {
      for (const std::string& k : batch->keys) keys << EscapeKey(k) << '\n';
      keys.flush();
    }
    if (samples.is_open()) {
      for (size_t i = 0; i < batch->keys.size(); ++i) {
        samples << batch->epoch << '\t' << batch->index << '\t' << EscapeKey(batch->keys[i])
                << '\t' << batch->labels[i] << '\t'
                << EscapeKey(pipeline->source_names()[static_cast<size_t>(batch->sources[i])]);
        if (!batch->copies.empty()) samples << '\t' << batch->copies[i];
        samples << '\n';
      }
      samples.flush();  // A killed run's file still holds every batch it delivered.
    }
    if (config.consumer_ms > 0) absl::SleepFor(absl::Milliseconds(config.consumer_ms));
    batch.reset();
    const absl::Time now = absl::Now();
    if (config.progress && now - last_progress > absl::Milliseconds(tty ? 250 : 5000)) {
      last_progress = now;
      const double wall = absl::ToDoubleSeconds(now - start);
      const uint64_t samples = pipeline->stats()->samples.load();
      std::fprintf(stderr, "%ssamples %llu  %.0f img/s  epoch %lld%s", tty ? "\r" : "",
                   static_cast<unsigned long long>(samples), samples / wall,
                   static_cast<long long>(pipeline->stats()->epoch.load()), tty ? "" : "\n");
    }
    if (config.report_every_seconds > 0 &&
        now - last_report > absl::Seconds(config.report_every_seconds)) {
      last_report = now;
      const Diagnosis d = Diagnose(
          Snapshot(*pipeline->stats(), Facts(config, absl::ToDoubleSeconds(now - start),
                                             epochs_done, startup_seconds)));
      std::fprintf(stderr, "%sdiagnosis: %s\n", tty ? "\n" : "", d.advice.c_str());
      PrintNewAutotuneDecisions(*pipeline->stats(), &autotune_reported);
    }
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  if (pipeline->done()) epochs_done = config.pipeline.epochs;
  if (config.progress && tty) std::fprintf(stderr, "\n");
  const int signo = signals.received();

  // Stop the graph before reading the final counters, so nothing moves under the report.
  pipeline->Stop();
  const RunFacts facts = Facts(config, wall, epochs_done, startup_seconds);
  const RunSnapshot snapshot = Snapshot(*pipeline->stats(), facts);
  std::fprintf(stdout, "%s", StageTable(snapshot).c_str());
  const Diagnosis diagnosis = Diagnose(snapshot);
  std::fprintf(stdout, "diagnosis: %s\n", diagnosis.advice.c_str());
  for (const std::string& note : diagnosis.notes) std::fprintf(stdout, "  %s\n", note.c_str());
  std::fprintf(stdout, "%llu samples in %.2f s: %.0f images/s; %s\n",
               static_cast<unsigned long long>(snapshot.samples), wall,
               wall > 0 ? snapshot.samples / wall : 0.0,
               first_batch_seconds < 0
                   ? "no batch delivered"
                   : absl::StrFormat("first batch after %.3f s", first_batch_seconds).c_str());
  if (pipeline->stats()->autotune.enabled.load()) {
    std::fprintf(stdout, "autotune settled on num_workers %d, prefetch_batches %d (%zu changes)\n",
                 pipeline->num_workers(), pipeline->prefetch_batches(),
                 pipeline->stats()->autotune.Decisions().size());
  }
  const Cursor checkpoint = pipeline->Checkpoint();
  if (config.pipeline.checksum) {
    std::fprintf(stdout, "data checksum %s over what this run delivered\n",
                 pipeline->data_checksum().c_str());
  }
  if (signo != 0) {
    std::fprintf(stdout, "interrupted at checkpoint %lld:%lld: resume with --resume=%lld:%lld\n",
                 static_cast<long long>(checkpoint.epoch), static_cast<long long>(checkpoint.batch),
                 static_cast<long long>(checkpoint.epoch), static_cast<long long>(checkpoint.batch));
  }
  std::fflush(stdout);
  const bool keys_failed = keys.is_open() && (keys.close(), keys.fail());
  const bool samples_failed = samples.is_open() && (samples.close(), samples.fail());
  if (keys_failed || samples_failed) {
    std::fprintf(stderr, "flowloader: writing --keys_out or --samples_out failed (disk full?)\n");
    return 2;
  }

  if (!config.summary_json.empty()) {
    std::string json =
        RunSummaryJson(snapshot, checkpoint, first_batch_seconds, epoch_end_seconds);
    json = WithOutputs(std::move(json), pipeline->outputs(), pipeline->label());
    if (config.pipeline.checksum) json = WithChecksums(std::move(json), *pipeline);
    if (!WriteFile(config.summary_json, json + "\n")) {
      std::fprintf(stderr, "flowloader: cannot write --summary_json=%s\n",
                   config.summary_json.c_str());
      return 2;
    }
  }
  if (!config.trace_out.empty()) {
    if (absl::Status s = WriteChromeTrace(*pipeline->stats(), config.trace_out); !s.ok()) {
      std::fprintf(stderr, "flowloader: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (config.linger_seconds > 0 && server != nullptr && signo == 0) {
    absl::SleepFor(absl::Seconds(config.linger_seconds));
  }
  if (signo != 0) return 128 + signo;
  if (!status.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  if (snapshot.samples == 0) {
    std::fprintf(stderr, "flowloader: %s\n", NothingDelivered(snapshot).c_str());
    return 3;
  }
  return 0;
}

}  // namespace flowloader
