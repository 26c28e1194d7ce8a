// spec.h: the pipeline spec, a YAML file that configures a PipelineOptions: the
// declarative way to assemble a pipeline, beside the C++ API.
//
//   data: train                # relative to the spec file's directory
//   batch_size: 256
//   num_workers: 8
//   stages:                    # optional; default: read, decode, augment from transform
//     - type: read
//     - type: decode
//       options: {dct_scaling: false}
//     - type: augment
//       options: {mode: train, image_size: 224}
//
// Every key, its default and its constraint: SpecKeysHelp() (docs/specs.md, "Writing a
// spec", shows a full example). Stage items are checked against the schemas declared in
// the StageRegistry (graph/stage.h): register custom stage types before parsing a spec
// that names them. Anything wrong is one line, "FILE:LINE:COLUMN: what (why)"; a spec
// that parses can still fail in Pipeline::Create on what only a dataset or a stage
// factory can check (a missing data path, a stage list without augment).
//
// Thread-safety: all functions are thread-safe.
#ifndef FLOWLOADER_RUNTIME_SPEC_H_
#define FLOWLOADER_RUNTIME_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/pipeline.h"

namespace flowloader {

// LoadSpecFile reads and parses the spec at `path` (see ParseSpec); a relative `data`
// resolves against the file's directory. Errors name `path` as given.
absl::StatusOr<PipelineOptions> LoadSpecFile(const std::string& path);

// ParseSpec parses spec `text` into options; keys the spec leaves out keep
// PipelineOptions' defaults. A relative `data` is joined to `base_dir` (empty: left as
// is). `file_name` names the text in error messages.
absl::StatusOr<PipelineOptions> ParseSpec(const std::string& text, const std::string& base_dir,
                                          const std::string& file_name = "<spec>");

// SpecKeysHelp describes every key of a spec, one `key: default  # what` line each.
std::string SpecKeysHelp();

// SpecKey describes one pipeline key of a spec. The one table behind it drives the spec
// parser, SpecKeysHelp and the command line's pipeline flags (runtime/main.cc), so a
// setting cannot exist in one and not the others.
struct SpecKey {
  std::string name;
  std::string default_text;  // As a spec would write it; "" where there is none.
  std::string doc;
  bool is_bool = false;      // Its default is true or false.
  bool is_scalar = true;     // false for `stages` and `shard`, which nest.
};
std::vector<SpecKey> SpecKeys();

// SpecYaml writes `options` as a spec that ParseSpec reads back to the same options
// (`data` as given: make it absolute to run the spec from anywhere). Every key of
// SpecKeys() is written; an explicit stages list replaces transform, image_size and
// layout. `env` and `trace_spans` are not spec keys and are not written.
std::string SpecYaml(const PipelineOptions& options);

// ApplySpecValue sets one pipeline key from the text of a command-line flag, read
// exactly as the same plain scalar in a spec would be. `key` is a scalar SpecKey's name,
// or rank / world_size (the fields of `shard`). Errors read "--KEY must ..., got ...".
absl::Status ApplySpecValue(const std::string& key, const std::string& text,
                            PipelineOptions* options);

// ApplySpecYamlValue sets any pipeline key, a nested one too (`sources`), from `yaml`,
// the value as a spec would write it: JSON is YAML's flow style, so Python's keywords
// arrive this way and are checked by the spec's own code. Errors read "KEY:LINE:COLUMN:
// ..." (located in `yaml`); a relative `data` of a source stays as given.
absl::Status ApplySpecYamlValue(const std::string& key, const std::string& yaml,
                                PipelineOptions* options);

// The text forms of the options that the spec and the command-line flags share. Each
// error message says what was wanted and what was given, without naming the option
// ("must be skip or fail, got 'maybe'"): the caller prefixes the flag or key.
//
// AutoCountText writes num_workers or prefetch_batches as a spec does: the number, or
// auto for PipelineOptions::kAuto.
std::string AutoCountText(int value);
// ParseRamBudget reads ram_budget: bytes ("2147483648", "2GiB", "512MiB", "512M"), or a
// share of what the process may use ("50%", resolved against `available_bytes`, < 0 =
// unknown).
absl::StatusOr<int64_t> ParseRamBudget(absl::string_view text, int64_t available_bytes);
// ParseErrorPolicy reads skip or fail.
absl::Status ParseErrorPolicy(absl::string_view text, ErrorPolicy* out);
// ParseDevice reads auto, cpu or cuda.
absl::Status ParseDevice(absl::string_view text, DeviceChoice* out);
// ParseMaxErrors reads a count ("100") into max_errors or a fraction ("0.05", "5%")
// into max_error_fraction, resetting the other to no limit; "" means no limit at all.
absl::Status ParseMaxErrors(absl::string_view text, PipelineOptions* out);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_SPEC_H_
