// tune_command.h: `flowloader tune`: run Tune, write DIR/tune.json, DIR/best.yaml (a spec
// `flowloader run --spec=DIR/best.yaml` runs as it is) and DIR/tune.svg, and print the
// recommendation with one reason per knob.
//
// Thread-safety: TuneCommand is called once per process.
#ifndef FLOWLOADER_RUNTIME_TUNE_COMMAND_H_
#define FLOWLOADER_RUNTIME_TUNE_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tune.h"

namespace flowloader {

// TuneCommand returns the process exit code: 0, or 2 with a one-line message.
int TuneCommand(const TuneOptions& options, const std::string& out_dir);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_TUNE_COMMAND_H_
