// run_command.h: `flowloader run`: drive a pipeline end to end and report.
//
// Pulls every batch of the configured epochs (optionally sleeping per batch to stand in
// for a training step), shows a live progress line, serves metrics, writes the summary
// JSON and the delivered keys, and ends with the per-stage table and the diagnosis.
// SIGINT/SIGTERM stop the run cleanly: the summary is still printed and written, with the
// checkpoint to resume from (--resume=EPOCH:BATCH), and the exit code is 130/143. A run
// that delivers no sample at all exits 3, saying what failed.
//
// --keys_out writes one key per line; --samples_out a header line `epoch<TAB>batch<TAB>
// key<TAB>label<TAB>source`, then one line per delivered sample (source: its weighted
// source's name, "default" for --data). In both, a key's backslash, tab,
// newline and carriage return are written as \\, \t, \n and \r (EscapeKey), so a file
// name can never split a line or a column.
//
// Thread-safety: RunCommand is called once per process.
#ifndef FLOWLOADER_RUNTIME_RUN_COMMAND_H_
#define FLOWLOADER_RUNTIME_RUN_COMMAND_H_

#include <string>

#include "absl/time/time.h"
#include "runtime/pipeline.h"

namespace flowloader {

struct RunConfig {
  PipelineOptions pipeline;
  std::string metrics_address;  // Empty: no endpoint.
  std::string summary_json;     // Empty: not written.
  std::string keys_out;         // Empty: not written.
  std::string samples_out;      // Empty: not written.
  std::string trace_out;        // Empty: no trace.
  double report_every_seconds = 0;  // 0: diagnosis only at the end.
  double consumer_ms = 0;           // Simulated training step per batch.
  double linger_seconds = 0;        // Keep serving metrics this long after the run.
  bool progress = true;
  absl::Time process_start;  // For the time-to-first-batch figure.
};

// RunCommand runs the job and returns the process exit code.
int RunCommand(const RunConfig& config);

// EscapeKey is `key` as --keys_out and --samples_out write it.
std::string EscapeKey(const std::string& key);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_RUN_COMMAND_H_
