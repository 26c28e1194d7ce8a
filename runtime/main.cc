// main.cc: the flowloader command line.
//
//   flowloader run --data=DIR_OR_LIST [--batch_size=64 --num_workers=2 ...]
//   flowloader run --spec=FILE.yaml [flags that override the spec's values]
//   flowloader make-dataset --out=DIR [--classes=10 --images_per_class=30]
//   flowloader stages        (every stage type and its options)
//
// Flags are Abseil flags; a bad flag or value is a one-line error and exit code 1 (from
// Abseil) or 2 (ours).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/internal/parse.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "graph/stage.h"
#include "runtime/run_command.h"
#include "runtime/sample_dataset.h"
#include "runtime/spec.h"

ABSL_FLAG(std::string, spec, "",
          "YAML pipeline spec (README: Writing a spec); flags given explicitly override it");
ABSL_FLAG(std::string, data, "", "ImageFolder directory or list file (path<TAB>label)");
ABSL_FLAG(int, batch_size, 64, "samples per batch");
ABSL_FLAG(int, num_workers, 2, "decode/augment threads");
ABSL_FLAG(int, prefetch_batches, 3, "batch buffers: the bound on batches in flight");
ABSL_FLAG(int64_t, epochs, 1, "epochs to run (0 = until interrupted)");
ABSL_FLAG(uint64_t, seed, 0, "seed of the shuffle and of every random crop/flip");
ABSL_FLAG(bool, shuffle, true, "shuffle each epoch");
ABSL_FLAG(bool, drop_last, false, "drop each epoch's last partial batch");
ABSL_FLAG(int, rank, 0, "this process's shard");
ABSL_FLAG(int, world_size, 1, "number of shards");
ABSL_FLAG(std::string, transform, "train",
          "train (RandomResizedCrop+flip+Normalize) or eval (Resize+CenterCrop+Normalize)");
ABSL_FLAG(int, image_size, 224, "output side in pixels");
ABSL_FLAG(std::string, layout, "float_chw", "float_chw or uint8_hwc");
ABSL_FLAG(std::string, on_error, "skip", "skip (count and drop bad samples) or fail");
ABSL_FLAG(std::string, max_errors, "",
          "stop when more samples fail: a count (100) or a fraction (0.05 or 5%)");
ABSL_FLAG(bool, in_order, true, "deliver batches in sampler order");
ABSL_FLAG(std::string, device, "auto", "auto (CUDA if present), cpu or cuda");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1:9464",
          "serve Prometheus metrics at http://ADDRESS/metrics (empty disables)");
ABSL_FLAG(std::string, summary_json, "", "write the run summary as JSON to this file");
ABSL_FLAG(std::string, keys_out, "", "write every delivered sample's key, in order");
ABSL_FLAG(std::string, trace_out, "",
          "write a Chrome/Perfetto trace (JSON trace events) of per-stage spans to FILE");
ABSL_FLAG(int64_t, trace_spans, 200000, "--trace_out keeps the first N spans of the run");
ABSL_FLAG(double, report_every, 0, "print a diagnosis every N seconds (0 = only at the end)");
ABSL_FLAG(double, consumer_ms, 0, "simulate a training step: sleep this long per batch");
ABSL_FLAG(double, linger_seconds, 0, "keep serving metrics this long after the run");
ABSL_FLAG(bool, progress, true, "show a live progress line");
ABSL_FLAG(std::string, out, "", "make-dataset: directory to create");
ABSL_FLAG(int, classes, 10, "make-dataset: class directories");
ABSL_FLAG(int, images_per_class, 30, "make-dataset: JPEG files per class");
ABSL_FLAG(int, min_short_side, 256, "make-dataset: smallest shorter side (px)");
ABSL_FLAG(int, max_short_side, 512, "make-dataset: largest shorter side (px)");
ABSL_FLAG(int, quality, 90, "make-dataset: JPEG quality");
ABSL_FLAG(double, noise, 7.0, "make-dataset: noise level (file size knob)");

namespace flowloader {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "flowloader: %s\n", message.c_str());
  return 2;
}

// GivenOnCommandLine reports whether `flag` was set on the command line (or in a
// --flagfile), even to its default value: with a spec, only such flags override it.
// Debian's Abseil (LTS 20220623) keeps CommandLineFlag::IsSpecifiedOnCommandLine private,
// and comparing CurrentValue() with DefaultValue() cannot tell `--batch_size=64` from no
// flag at all, so this asks the flag parser's own record (flags_internal, in
// libabsl_flags_parse).
bool GivenOnCommandLine(const absl::CommandLineFlag& flag) {
  return absl::flags_internal::WasPresentOnCommandLine(flag.Name());
}

int Run(absl::Time process_start) {
  RunConfig c;
  c.process_start = process_start;
  PipelineOptions& o = c.pipeline;
  const std::string spec = absl::GetFlag(FLAGS_spec);
  if (!spec.empty()) {
    absl::StatusOr<PipelineOptions> loaded = LoadSpecFile(spec);
    if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
    o = *std::move(loaded);
  }
  // Without a spec every flag applies (its default is PipelineOptions'); with one, only
  // the flags given, each replacing the spec's value.
  auto use = [&spec](const auto& flag) {
    return spec.empty() || GivenOnCommandLine(absl::GetFlagReflectionHandle(flag));
  };
  auto take = [&use](const auto& flag, auto* field) {
    if (use(flag)) *field = absl::GetFlag(flag);
  };
  take(FLAGS_data, &o.data);
  if (o.data.empty()) {
    return Fail("--data is required (an ImageFolder directory or list file), or data: in --spec");
  }
  take(FLAGS_batch_size, &o.batch_size);
  take(FLAGS_num_workers, &o.num_workers);
  take(FLAGS_prefetch_batches, &o.prefetch_batches);
  take(FLAGS_epochs, &o.epochs);
  take(FLAGS_seed, &o.seed);
  take(FLAGS_shuffle, &o.shuffle);
  take(FLAGS_drop_last, &o.drop_last);
  take(FLAGS_rank, &o.rank);
  take(FLAGS_world_size, &o.world_size);
  if (!o.stages.empty()) {
    // The spec lists its own stages: these flags would configure the replaced built-ins.
    for (const absl::CommandLineFlag* f :
         {&absl::GetFlagReflectionHandle(FLAGS_transform),
          &absl::GetFlagReflectionHandle(FLAGS_image_size),
          &absl::GetFlagReflectionHandle(FLAGS_layout)}) {
      if (GivenOnCommandLine(*f)) {
        return Fail(absl::StrCat("--", f->Name(), " configures the built-in stages, which ",
                                 spec, " replaces with its stages list: set augment's "
                                 "options there"));
      }
    }
  }
  take(FLAGS_transform, &o.transform);
  take(FLAGS_image_size, &o.image_size);
  take(FLAGS_layout, &o.layout);
  take(FLAGS_in_order, &o.in_order);
  if (use(FLAGS_on_error)) {
    if (absl::Status s = ParseErrorPolicy(absl::GetFlag(FLAGS_on_error), &o.on_error); !s.ok()) {
      return Fail(absl::StrCat("--on_error ", s.message()));
    }
  }
  if (use(FLAGS_max_errors)) {
    if (absl::Status s = ParseMaxErrors(absl::GetFlag(FLAGS_max_errors), &o); !s.ok()) {
      return Fail(absl::StrCat("--max_errors ", s.message()));
    }
  }
  if (use(FLAGS_device)) {
    if (absl::Status s = ParseDevice(absl::GetFlag(FLAGS_device), &o.device); !s.ok()) {
      return Fail(absl::StrCat("--device ", s.message()));
    }
  }
  c.metrics_address = absl::GetFlag(FLAGS_metrics_address);
  c.summary_json = absl::GetFlag(FLAGS_summary_json);
  c.keys_out = absl::GetFlag(FLAGS_keys_out);
  c.trace_out = absl::GetFlag(FLAGS_trace_out);
  if (!c.trace_out.empty()) {
    const int64_t spans = absl::GetFlag(FLAGS_trace_spans);
    if (spans <= 0) return Fail("--trace_spans must be > 0");
    o.trace_spans = static_cast<size_t>(spans);
  }
  c.report_every_seconds = absl::GetFlag(FLAGS_report_every);
  c.consumer_ms = absl::GetFlag(FLAGS_consumer_ms);
  c.linger_seconds = absl::GetFlag(FLAGS_linger_seconds);
  c.progress = absl::GetFlag(FLAGS_progress);
  return RunCommand(c);
}

int MakeDataset() {
  SampleDatasetOptions o;
  o.root = absl::GetFlag(FLAGS_out);
  if (o.root.empty()) return Fail("make-dataset needs --out=DIR");
  o.classes = absl::GetFlag(FLAGS_classes);
  o.images_per_class = absl::GetFlag(FLAGS_images_per_class);
  o.min_short_side = absl::GetFlag(FLAGS_min_short_side);
  o.max_short_side = absl::GetFlag(FLAGS_max_short_side);
  o.quality = absl::GetFlag(FLAGS_quality);
  o.noise = absl::GetFlag(FLAGS_noise);
  o.seed = absl::GetFlag(FLAGS_seed);
  if (absl::Status s = GenerateSampleDataset(o); !s.ok()) return Fail(std::string(s.message()));
  std::printf("dataset ready: %s (%d classes x %d JPEGs)\n", o.root.c_str(), o.classes,
              o.images_per_class);
  return 0;
}

}  // namespace
}  // namespace flowloader

int main(int argc, char** argv) {
  const absl::Time process_start = absl::Now();
  absl::SetProgramUsageMessage(
      "flowloader run --data=DIR_OR_LIST [flags]   run a pipeline and report\n"
      "  flowloader run --spec=FILE.yaml [flags]     the same from a pipeline spec\n"
      "  flowloader make-dataset --out=DIR           generate a sample JPEG dataset\n"
      "  flowloader stages                           list stage types and options");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() != 2) {
    std::fprintf(stderr, "flowloader: expected one command (run, make-dataset, stages); see --help\n");
    return 2;
  }
  const std::string command = positional[1];
  if (command == "run") return flowloader::Run(process_start);
  if (command == "make-dataset") return flowloader::MakeDataset();
  if (command == "stages") {
    // Stage types as a YAML list to copy into a spec, then the spec's own keys (as
    // comments, so the whole output stays valid YAML).
    std::printf("%s\n# Pipeline keys of a spec, with their defaults (README.md, \"Writing a "
                "spec\"):\n",
                flowloader::StageRegistry::Global().Help().c_str());
    for (absl::string_view line :
         absl::StrSplit(flowloader::SpecKeysHelp(), '\n', absl::SkipEmpty())) {
      std::printf("#   %.*s\n", static_cast<int>(line.size()), line.data());
    }
    return 0;
  }
  std::fprintf(stderr, "flowloader: unknown command '%s' (run, make-dataset, stages)\n",
               command.c_str());
  return 2;
}
