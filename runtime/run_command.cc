#include "runtime/run_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "exporters/metrics_exporter.h"
#include "exporters/report.h"
#include "exporters/trace.h"
#include "runtime/internal/signal_watcher.h"
#include "runtime/run_summary.h"
#include "stages/core/log.h"
#include "stages/core/resources.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

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

namespace {

// Fail prints `message` as the command's one-line error and returns exit code 2.
int Fail(absl::string_view message) {
  std::fprintf(stderr, "flowloader: %s\n", OneLine(message).c_str());
  return 2;
}

// CheckOutputPaths refuses, before anything runs, an output file the run could not write
// at its end.
absl::Status CheckOutputPaths(const RunConfig& config) {
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"summary_json", config.summary_json},
        {"keys_out", config.keys_out},
        {"samples_out", config.samples_out},
        {"trace_out", config.trace_out}}) {
    if (absl::Status s = CheckWritable(flag, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// MetricsEndpoint is the Prometheus endpoint of a run (--metrics_address) and the
// pipeline's registration on it; both empty without one.
struct MetricsEndpoint {
  MetricsRegistration registration;
  std::shared_ptr<MetricsServer> server;
};

// ServeMetrics registers `pipeline`'s statistics on the server at config.metrics_address.
absl::Status ServeMetrics(const RunConfig& config, const Pipeline& pipeline,
                          MetricsEndpoint* endpoint) {
  if (config.metrics_address.empty()) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<MetricsServer>> s = MetricsServer::Shared(config.metrics_address);
  if (!s.ok()) return s.status();
  endpoint->server = *s;
  absl::StatusOr<MetricsRegistration> r =
      MetricsRegistration::Create(endpoint->server, pipeline.stats());
  if (!r.ok()) return r.status();
  endpoint->registration = std::move(*r);
  LogInfo(absl::StrCat("metrics at ", endpoint->server->url()));
  return absl::OkStatus();
}

// RowFiles are the per-row files a run writes as batches arrive (--keys_out,
// --samples_out); a file not asked for stays closed.
struct RowFiles {
  std::ofstream keys;
  std::ofstream samples;
};

// OpenRowFiles opens (truncates) the row files, writing --samples_out's header line.
absl::Status OpenRowFiles(const RunConfig& config, const Pipeline& pipeline, RowFiles* files) {
  if (!config.keys_out.empty()) {
    files->keys.open(config.keys_out, std::ios::trunc);
    if (!files->keys) return absl::InternalError("cannot write --keys_out=" + config.keys_out);
  }
  if (!config.samples_out.empty()) {
    files->samples.open(config.samples_out, std::ios::trunc);
    if (!files->samples) {
      return absl::InternalError("cannot write --samples_out=" + config.samples_out);
    }
    // With repeated augmentation a sixth column says which copy of its sample a row is.
    files->samples << "epoch\tbatch\tkey\tlabel\tsource"
                   << (pipeline.options().repeated_augment > 1 ? "\tcopy\n" : "\n");
  }
  return absl::OkStatus();
}

// WriteRows appends `batch`'s rows to the open row files and flushes them, so a killed
// run's files still hold every batch it delivered.
void WriteRows(const Batch& batch, const Pipeline& pipeline, RowFiles* files) {
  if (files->keys.is_open()) {
    for (const std::string& k : batch.keys) files->keys << EscapeKey(k) << '\n';
    files->keys.flush();
  }
  if (files->samples.is_open()) {
    std::ofstream& samples = files->samples;
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      samples << batch.epoch << '\t' << batch.index << '\t' << EscapeKey(batch.keys[i])
              << '\t' << batch.labels[i] << '\t'
              << EscapeKey(pipeline.source_names()[static_cast<size_t>(batch.sources[i])]);
      if (!batch.copies.empty()) samples << '\t' << batch.copies[i];
      samples << '\n';
    }
    samples.flush();
  }
}

// CloseRowFiles closes them; a write that failed (disk full, /dev/full) is named by its
// flag and path.
absl::Status CloseRowFiles(const RunConfig& config, RowFiles* files) {
  const bool keys_failed = files->keys.is_open() && (files->keys.close(), files->keys.fail());
  const bool samples_failed =
      files->samples.is_open() && (files->samples.close(), files->samples.fail());
  if (keys_failed) {
    return absl::InternalError(
        absl::StrCat("writing --keys_out=", config.keys_out, " failed (disk full?)"));
  }
  if (samples_failed) {
    return absl::InternalError(
        absl::StrCat("writing --samples_out=", config.samples_out, " failed (disk full?)"));
  }
  return absl::OkStatus();
}

// Consumed is what the consumer loop saw: how it ended and when things happened.
struct Consumed {
  absl::Status status;  // Next()'s error, if one ended the loop.
  int64_t epochs_done = 0;
  double first_batch_seconds = -1;        // Since config.process_start.
  double startup_seconds = -1;            // Since the run's start, the facts' clock.
  std::vector<double> epoch_end_seconds;  // Since the run's start, one per epoch.
};

// LiveOutput prints the progress line and the periodic diagnosis while the run goes.
class LiveOutput {
 public:
  LiveOutput(const RunConfig& config, absl::Time start)
      : config_(config),
        start_(start),
        tty_(isatty(STDERR_FILENO)),
        last_progress_(absl::Now()),
        last_report_(absl::Now()) {}

  bool tty() const { return tty_; }

  // AfterBatch prints what is due at `now` after a consumed batch.
  void AfterBatch(const Pipeline& pipeline, const Consumed& consumed, absl::Time now) {
    if (config_.progress && now - last_progress_ > absl::Milliseconds(tty_ ? 250 : 5000)) {
      last_progress_ = now;
      const double wall = absl::ToDoubleSeconds(now - start_);
      const uint64_t samples = pipeline.stats()->samples.load();
      std::fprintf(stderr, "%ssamples %llu  %.0f img/s  epoch %lld%s", tty_ ? "\r" : "",
                   static_cast<unsigned long long>(samples), samples / wall,
                   static_cast<long long>(pipeline.stats()->epoch.load()), tty_ ? "" : "\n");
    }
    if (config_.report_every_seconds > 0 &&
        now - last_report_ > absl::Seconds(config_.report_every_seconds)) {
      last_report_ = now;
      const Diagnosis d = Diagnose(
          Snapshot(*pipeline.stats(), Facts(config_, absl::ToDoubleSeconds(now - start_),
                                            consumed.epochs_done, consumed.startup_seconds)));
      std::fprintf(stderr, "%sdiagnosis: %s\n", tty_ ? "\n" : "", d.advice.c_str());
      PrintNewAutotuneDecisions(*pipeline.stats(), &autotune_reported_);
    }
  }

 private:
  const RunConfig& config_;
  const absl::Time start_;
  const bool tty_;
  absl::Time last_progress_;
  absl::Time last_report_;
  size_t autotune_reported_ = 0;  // Autotune decisions already named by --report_every.
};

// ConsumeBatches takes every batch from `pipeline` until it is done or fails, as a
// training loop would: writes the row files, sleeps the simulated step, prints progress.
// ConsumerSleep is --consumer_ms's simulated training step, cut short by a signal (it may
// be minutes long; Ctrl-C ends a run within a second).
void ConsumerSleep(double ms, const std::function<bool()>& signalled) {
  const absl::Time until = absl::Now() + absl::Milliseconds(ms);
  for (absl::Time now = absl::Now(); now < until && !signalled(); now = absl::Now()) {
    absl::SleepFor(std::min(until - now, absl::Milliseconds(50)));
  }
}

Consumed ConsumeBatches(const RunConfig& config, Pipeline& pipeline, absl::Time start,
                        RowFiles* files, LiveOutput* live,
                        const std::function<bool()>& signalled) {
  Consumed consumed;
  while (true) {
    std::shared_ptr<const Batch> batch;
    bool end_of_epoch = false;
    consumed.status = pipeline.Next(&batch, &end_of_epoch);
    if (!consumed.status.ok()) break;
    if (end_of_epoch) {
      consumed.epoch_end_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
      if (pipeline.done()) break;
      ++consumed.epochs_done;
      continue;
    }
    if (consumed.first_batch_seconds < 0 && batch->size() > 0) {
      const absl::Time now = absl::Now();
      consumed.first_batch_seconds = absl::ToDoubleSeconds(now - config.process_start);
      consumed.startup_seconds = absl::ToDoubleSeconds(now - start);
    }
    WriteRows(*batch, pipeline, files);
    if (config.consumer_ms > 0) ConsumerSleep(config.consumer_ms, signalled);
    batch.reset();
    live->AfterBatch(pipeline, consumed, absl::Now());
  }
  return consumed;
}

// PrintReport writes the end-of-run report to stdout: the stage table, the diagnosis,
// the throughput line, autotune's settled values, the checksum and, after a signal, the
// checkpoint to resume from.
void PrintReport(const RunConfig& config, const Pipeline& pipeline,
                 const RunSnapshot& snapshot, const Consumed& consumed, double wall,
                 const Cursor& checkpoint, int signo) {
  std::fprintf(stdout, "%s", StageTable(snapshot).c_str());
  const Diagnosis diagnosis = Diagnose(snapshot);
  std::fprintf(stdout, "diagnosis: %s\n", diagnosis.advice.c_str());
  for (const std::string& note : diagnosis.notes) std::fprintf(stdout, "  %s\n", note.c_str());
  std::fprintf(stdout, "%llu samples in %.2f s: %.0f images/s; %s\n",
               static_cast<unsigned long long>(snapshot.samples), wall,
               wall > 0 ? snapshot.samples / wall : 0.0,
               consumed.first_batch_seconds < 0
                   ? "no batch delivered"
                   : absl::StrFormat("first batch after %.3f s", consumed.first_batch_seconds)
                         .c_str());
  if (pipeline.stats()->autotune.enabled.load()) {
    // read_ahead only where autotune tunes it (remote data, read_ahead auto).
    const int read_ahead = pipeline.stats()->autotune.read_ahead.load();
    std::fprintf(stdout, "autotune settled on num_workers %d, prefetch_batches %d%s (%zu changes)\n",
                 pipeline.num_workers(), pipeline.prefetch_batches(),
                 read_ahead > 0 ? absl::StrCat(", read_ahead ", read_ahead).c_str() : "",
                 pipeline.stats()->autotune.Decisions().size());
  }
  if (config.pipeline.checksum) {
    std::fprintf(stdout, "data checksum %s over what this run delivered\n",
                 pipeline.data_checksum().c_str());
  }
  if (signo != 0) {
    std::fprintf(stdout, "interrupted at checkpoint %lld:%lld: resume with --resume=%lld:%lld\n",
                 static_cast<long long>(checkpoint.epoch), static_cast<long long>(checkpoint.batch),
                 static_cast<long long>(checkpoint.epoch), static_cast<long long>(checkpoint.batch));
  }
  std::fflush(stdout);
}

// WriteRunFiles writes the files asked for at the run's end: --summary_json and
// --trace_out.
absl::Status WriteRunFiles(const RunConfig& config, const Pipeline& pipeline,
                           const RunSnapshot& snapshot, const Consumed& consumed,
                           const Cursor& checkpoint) {
  if (!config.summary_json.empty()) {
    std::string json = RunSummaryJson(snapshot, checkpoint, consumed.first_batch_seconds,
                                      consumed.epoch_end_seconds);
    json = WithOutputs(std::move(json), pipeline.outputs(), pipeline.label());
    json = WithStorage(std::move(json), pipeline);
    json = WithShards(std::move(json), pipeline);
    json = WithAnnotations(std::move(json), pipeline.annotations());
    if (config.pipeline.checksum) json = WithChecksums(std::move(json), pipeline);
    if (!WriteFile(config.summary_json, json + "\n")) {
      return absl::InternalError("cannot write --summary_json=" + config.summary_json);
    }
  }
  if (!config.trace_out.empty()) {
    // WriteChromeTrace names the path; the user wrote the flag.
    if (absl::Status s = WriteChromeTrace(*pipeline.stats(), config.trace_out); !s.ok()) {
      return absl::InternalError("cannot write --trace_out=" + config.trace_out);
    }
  }
  return absl::OkStatus();
}

// ExitCode is the run's exit status once everything is written: 128 + the signal that
// stopped it, 1 for the error that ended it, 3 when nothing was delivered, else 0.
int ExitCode(int signo, const absl::Status& status, const RunSnapshot& snapshot) {
  if (signo != 0) return 128 + signo;
  if (!status.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(status.message()).c_str());
    return 1;
  }
  if (snapshot.samples == 0) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(NothingDelivered(snapshot)).c_str());
    return 3;
  }
  return 0;
}

}  // namespace

int RunCommand(const RunConfig& config) {
  internal::SignalWatcher::BlockInThisThread();
  const absl::Time start = absl::Now();
  if (absl::Status s = CheckOutputPaths(config); !s.ok()) return Fail(s.message());

  std::unique_ptr<Pipeline> pipeline;  // Declared first: the watcher below goes first.
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  // Started before Pipeline::Create: a signal sets `cancel`, which ends the HTTP reads
  // that opening the dataset makes, so Ctrl-C during a slow index ends the process at once.
  internal::SignalWatcher signals(cancel);
  PipelineOptions options = config.pipeline;
  options.http.cancel = cancel;
  absl::StatusOr<std::unique_ptr<Pipeline>> created = Pipeline::Create(options);
  if (signals.received() != 0) {
    std::fprintf(stderr, "flowloader: interrupted (signal %d) while opening the data\n",
                 signals.received());
    return 128 + signals.received();
  }
  if (!created.ok()) return Fail(created.status().message());
  pipeline = std::move(*created);
  if (const std::string w = OversubscribedWorkers(Facts(config, 0, 0, -1)); !w.empty()) {
    LogWarning(w);
  }
  MetricsEndpoint metrics;
  if (absl::Status s = ServeMetrics(config, *pipeline, &metrics); !s.ok()) {
    return Fail(s.message());
  }
  RowFiles files;
  if (absl::Status s = OpenRowFiles(config, *pipeline, &files); !s.ok()) return Fail(s.message());

  signals.OnSignal([p = pipeline.get()] { p->Stop(); });
  LiveOutput live(config, start);
  Consumed consumed = ConsumeBatches(config, *pipeline, start, &files, &live,
                                     [&signals] { return signals.received() != 0; });
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  if (pipeline->done()) consumed.epochs_done = config.pipeline.epochs;
  if (config.progress && live.tty()) std::fprintf(stderr, "\n");
  const int signo = signals.received();

  // Stop the graph before reading the final counters, so nothing moves under the report.
  pipeline->Stop();
  const RunSnapshot snapshot = Snapshot(
      *pipeline->stats(), Facts(config, wall, consumed.epochs_done, consumed.startup_seconds));
  const Cursor checkpoint = pipeline->Checkpoint();
  PrintReport(config, *pipeline, snapshot, consumed, wall, checkpoint, signo);
  if (absl::Status s = CloseRowFiles(config, &files); !s.ok()) return Fail(s.message());
  if (absl::Status s = WriteRunFiles(config, *pipeline, snapshot, consumed, checkpoint);
      !s.ok()) {
    return Fail(s.message());
  }
  if (config.linger_seconds > 0 && metrics.server != nullptr && signo == 0) {
    absl::SleepFor(absl::Seconds(config.linger_seconds));
  }
  return ExitCode(signo, consumed.status, snapshot);
}

}  // namespace flowloader
