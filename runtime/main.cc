// main.cc: the flowloader command line.
//
//   flowloader run --data=DIR_OR_LIST [--batch_size=64 --num_workers=2 ...]
//   flowloader run --spec=FILE.yaml [flags that override the spec's values]
//   flowloader plan [run's pipeline flags] [--json]   (the memory plan, nothing run)
//   flowloader make-dataset --out=DIR [--classes=10 --images_per_class=30]
//   flowloader make-dataset --task=detection --out=DIR [--images=100]
//   flowloader tune --data=DIR_OR_LIST --out=DIR [run's flags] [--consumer_ms=MS ...]
//   flowloader pack --data=IMAGEFOLDER_OR_LIST --out=DIR_OR_S3_PREFIX [--shard_size=256MB ...]
//   flowloader index --data=SHARDS [--out=DIR]   (index files for other tools' shards)
//   flowloader stages        (every stage type and its options)
//   flowloader graph [--spec=FILE] [--dot]   (the planned per-sample graph, nothing run)
//   flowloader --help | COMMAND --help | --version
//
// Each subcommand's flags are declared in one table (Commands() below); run's pipeline
// flags are the spec's own keys (runtime/spec.h SpecKeys), read by the spec's parser, so a
// flag and a spec key cannot disagree on a name, a default or what they accept. Exit codes:
// 0 success, 1 a fatal data error, 2 an invalid flag, value, data path or spec, 3 a run
// that delivered no sample, 130/143 after SIGINT/SIGTERM.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "graph/stage.h"
#include "runtime/detection_dataset.h"
#include "runtime/index_command.h"
#include "runtime/segmentation_dataset.h"
#include "runtime/graph_command.h"
#include "runtime/internal/cli_flags.h"
#include "runtime/pack_command.h"
#include "runtime/plan_command.h"
#include "runtime/run_command.h"
#include "runtime/sample_dataset.h"
#include "runtime/shard_env.h"
#include "runtime/spec.h"
#include "runtime/tune_command.h"
#include "runtime/version.h"
#include "stages/core/bool_text.h"
#include "stages/core/log.h"
#include "stages/core/memory_plan.h"
#include "stages/core/resources.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

// The largest times the flags take: finite, and far above any real use.
constexpr double kHourMs = 3600.0 * 1000;
constexpr double kDaySeconds = 24 * 3600.0;

using cli::CommandDef;
using cli::FlagDef;
using cli::ParsedFlags;

// The flags that configure the built-in stages, which a spec's stages list replaces.
bool ConfiguresBuiltinStages(const std::string& flag) {
  return flag == "transform" || flag == "image_size" || flag == "layout";
}

// PipelineFlags are the spec's scalar keys, plus rank and world_size for `shard`.
std::vector<FlagDef> PipelineFlags() {
  std::vector<FlagDef> flags;
  for (const SpecKey& key : SpecKeys()) {
    if (key.name == "shard") {
      flags.push_back({"rank", "0",
                       "this process's shard, in [0, world_size); default RANK, else "
                       "SLURM_PROCID, else 0"});
      flags.push_back({"world_size", "1",
                       "number of shards (each gets an equal share); default WORLD_SIZE, "
                       "else SLURM_NTASKS, else 1"});
    }
    if (!key.is_scalar) continue;
    flags.push_back({key.name, key.default_text, key.doc, key.is_bool});
  }
  return flags;
}

std::vector<CommandDef> Commands() {
  CommandDef run{"run",
                 "flowloader run --data=DIR_OR_LIST [flags] | --spec=FILE.yaml [flags]",
                 "run a pipeline over the data, then print per-stage figures and a diagnosis",
                 {{"spec", "", "YAML pipeline spec (README: Writing a spec); flags given override it"}}};
  for (FlagDef& f : PipelineFlags()) run.flags.push_back(std::move(f));
  const std::vector<FlagDef> run_only = {
      {"resume", "", "start at cursor EPOCH:BATCH (the \"checkpoint\" an interrupted run "
                     "printed); same other flags and seed"},
      {"metrics_address", "127.0.0.1:9464",
       "serve Prometheus metrics at http://ADDRESS/metrics (empty disables)"},
      {"summary_json", "", "write the run summary as JSON to FILE"},
      {"keys_out", "", "write every delivered sample's key to FILE, one per line, in order"},
      {"samples_out", "",
       "write every delivered sample to FILE as tab-separated epoch, batch, key, label"},
      {"trace_out", "", "write a Chrome/Perfetto trace of per-stage spans to FILE"},
      {"trace_spans", "200000", "--trace_out keeps the first N spans of the run; > 0"},
      {"report_every", "0",
       "print a diagnosis every N seconds (0 = only at the end); 0 to 86400"},
      {"consumer_ms", "0", "simulate a training step: sleep this long per batch; 0 to 3600000"},
      {"linger_seconds", "0", "keep serving metrics this long after the run; 0 to 86400"},
      {"progress", "true", "show a live progress line", true},
      {"verbose", "false", "also log details, such as why there is no CUDA device", true},
  };
  run.flags.insert(run.flags.end(), run_only.begin(), run_only.end());
  CommandDef plan{"plan", "flowloader plan --data=DIR_OR_LIST [run's flags] [--json]",
                  "print what a run with these flags would hold in memory, part by part, "
                  "without running it",
                  {{"spec", "", "YAML pipeline spec (README: Writing a spec); flags given override it"}}};
  for (FlagDef& f : PipelineFlags()) plan.flags.push_back(std::move(f));
  plan.flags.push_back({"json", "false", "print the plan as one JSON object", true});
  CommandDef make_dataset{
      "make-dataset", "flowloader make-dataset --out=DIR [flags]",
      "generate a sample ImageFolder dataset of photo-like JPEGs (nothing downloaded)",
      {{"out", "", "directory to create (required)"},
       {"classes", "10", "class directories; >= 1"},
       {"images_per_class", "30", "JPEG files per class; >= 1"},
       {"min_short_side", "256", "smallest shorter side in pixels; >= 8"},
       {"max_short_side", "512", "largest shorter side in pixels; >= min_short_side"},
       {"quality", "90", "JPEG quality, 1-100"},
       {"noise", "7", "noise level in 8-bit steps (the file size knob); >= 0"},
       {"seed", "0", "seed of every image"},
       {"overwrite", "false", "write into a non-empty --out", true},
       {"task", "classification",
        "classification (an ImageFolder), detection (images/ + annotations/instances.json "
        "in COCO's format: drawn shapes, exact boxes, polygons and RLE) or segmentation "
        "(images/ + label_maps/ PNG label maps + train.txt)"},
       {"images", "100", "detection, segmentation: JPEG files; >= 1"},
       {"max_instances", "6", "detection, segmentation: shapes per image, 1-9"},
       {"keypoints", "false",
        "detection: annotate 3 keypoints per shape (first vertex, centre, an unlabelled one)",
        true}}};
  CommandDef stages{"stages", "flowloader stages",
                    "print every stage type with its options, and the spec's keys, as YAML",
                    {}};
  CommandDef tune{"tune", "flowloader tune --data=DIR_OR_LIST --out=DIR [run's flags] [flags]",
                  "measure trials and pick num_workers, prefetch_batches and batch_size "
                  "within a CPU and RAM budget",
                  {{"spec", "", "YAML pipeline spec to tune; flags given override it"}}};
  for (FlagDef& f : PipelineFlags()) tune.flags.push_back(std::move(f));
  const std::vector<FlagDef> tune_only = {
      {"out", "", "directory for tune.json, best.yaml and tune.svg (required)"},
      {"batch_sizes", "32,64,128,256", "batch sizes to consider (without --consumer_ms)"},
      {"prefetch_choices", "2,3,4,6", "prefetch_batches values to consider"},
      {"consumer_ms", "0", "the training step per batch; with it, tune finds the fewest "
                           "workers and least memory that keep it waiting < 5%"},
      {"time_budget", "60", "seconds for the whole search (never past it by more than a trial)"},
      {"trial_seconds", "0", "measurement per trial; 0 = the budget shared by the trials"},
      {"grid", "false", "measure every combination instead of searching", true},
  };
  tune.flags.insert(tune.flags.end(), tune_only.begin(), tune_only.end());
  CommandDef pack{
      "pack", "flowloader pack --data=IMAGEFOLDER_OR_LIST --out=DIR_OR_S3_PREFIX [flags]",
      "write a dataset as WebDataset tar shards (run --data=DIR/train-{000000..N}.tar)",
      {{"data", "", "ImageFolder root or list file to pack (required)"},
       {"out", "", "directory or s3://BUCKET/PREFIX for the shards (required)"},
       {"annotations", "",
        "detection: a COCO instances file (images under --data); each sample gets KEY.json"},
       {"label_maps", "",
        "segmentation: label-map directory or list file; each sample gets KEY.png"},
       {"shard_size", "256MB", "close a shard before it passes this size (256MB, 1GiB, ...)"},
       {"max_side", "0",
        "re-encode images whose shorter side is larger to this shorter side; 0 = copy bytes"},
       {"quality", "90", "JPEG quality of re-encoded images, 1-100"},
       {"prefix", "train", "shard file names: PREFIX-000000.tar, ..."},
       {"part_size", "8MiB",
        "--out=s3://: upload a shard in parts of this size (5MiB..5GiB; the memory an "
        "upload holds); a shard no larger goes as one PUT"}}};
  // pack --out=s3:// takes the run's s3_* keys (endpoint, region, profile, addressing).
  for (FlagDef& f : PipelineFlags()) {
    if (f.name.rfind("s3_", 0) == 0) pack.flags.push_back(std::move(f));
  }
  CommandDef index{
      "index", "flowloader index --data=SHARDS [--out=DIR] [flags]",
      "write the index file beside each tar shard that has none (shards from webdataset, "
      "GNU tar, ...), so a run opens it with two small reads",
      {{"data", "", "the shards: brace pattern, directory or list of .tar; local, s3:// or "
                    "http(s):// (required)"},
       {"out", "", "a local directory for the indexes instead of beside the shards "
                   "(required for http(s):// shards, which cannot be written)"},
       {"force", "false", "rewrite indexes that are already good", true},
       {"threads", "8", "shards scanned at a time"}}};
  for (FlagDef& f : PipelineFlags()) {
    if (f.name.rfind("s3_", 0) == 0 || f.name == "http_ca_file") index.flags.push_back(std::move(f));
  }
  CommandDef graph{"graph", "flowloader graph [--spec=FILE.yaml] [--dot]",
                   "print the planned per-sample graph: stages, the fields they read and "
                   "write, and the batch tensors, without running it",
                   {{"spec", "", "YAML pipeline spec; empty = the built-in read, decode, augment"},
                    {"dot", "false", "print Graphviz DOT instead of text", true}}};
  return {run, plan, make_dataset, tune, pack, index, stages, graph};
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "flowloader: %s\n", OneLine(message).c_str());
  return 2;
}

// FlagReader reads the run-only and make-dataset flags, each from its text or its
// default, with the range in the message.
class FlagReader {
 public:
  FlagReader(const CommandDef& command, const ParsedFlags& parsed)
      : command_(command), parsed_(parsed) {}

  std::string Text(const std::string& name) const {
    auto it = parsed_.given.find(name);
    if (it != parsed_.given.end()) return it->second;
    for (const FlagDef& f : command_.flags) {
      if (f.name == name) return f.default_text;
    }
    return "";
  }
  // Double reads a number in [min, max]: finite (--consumer_ms=1e999 read as inf slept
  // for ever, --time_budget=inf tuned for ever).
  absl::Status Double(const std::string& name, double min, double max, double* out) const {
    const std::string text = Text(name);
    if (!absl::SimpleAtod(text, out) || !(*out >= min && *out <= max)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--%s must be a number in [%.10g, %.10g], got '%s'", name, min, max, text));
    }
    return absl::OkStatus();
  }
  absl::Status Int(const std::string& name, int64_t min, int64_t max, int64_t* out) const {
    const std::string text = Text(name);
    if (!absl::SimpleAtoi(text, out) || *out < min || *out > max) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " must be an integer in [", min,
                                                     ", ", max, "], got '", text, "'"));
    }
    return absl::OkStatus();
  }
  absl::Status Bool(const std::string& name, bool* out) const {
    const std::string text = Text(name);
    if (!ParseBoolText(text, out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " must be true or false, got '", text, "'"));
    }
    return absl::OkStatus();
  }

 private:
  const CommandDef& command_;
  const ParsedFlags& parsed_;
};

// ParseCursor reads --resume's EPOCH:BATCH.
absl::Status ParseCursor(const std::string& text, Cursor* out) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &out->epoch) ||
      !absl::SimpleAtoi(parts[1], &out->batch) || out->epoch < 0 || out->batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--resume must be EPOCH:BATCH (two integers >= 0, as an interrupted run prints its "
        "checkpoint), got '", text, "'"));
  }
  return absl::OkStatus();
}

// ShardFromLauncher sets the shard a launcher (torchrun, Slurm) gave this process, over
// the spec's; *where says where the shard came from, for the run's log. Given both,
// --rank and --world_size (applied after) make the environment irrelevant, even invalid.
absl::Status ShardFromLauncher(const ParsedFlags& parsed, PipelineOptions* o,
                               std::string* where) {
  const bool flags_give_both = parsed.Has("rank") && parsed.Has("world_size");
  absl::StatusOr<EnvironmentShard> shard = ShardFromEnvironment();
  if (!shard.ok() && !flags_give_both) return shard.status();
  EnvironmentShard found = shard.ok() ? *shard : EnvironmentShard{};
  if (found.source != "default") {
    o->rank = found.rank;
    o->world_size = found.world_size;
  } else if (parsed.Has("spec")) {
    found.source = "the spec or the default";
  }
  if (parsed.Has("rank") || parsed.Has("world_size")) {
    found.source = flags_give_both ? "--rank/--world_size"
                                   : absl::StrCat(parsed.Has("rank") ? "--rank" : "--world_size",
                                                  " and ", found.source);
  }
  *where = found.source;
  return absl::OkStatus();
}

// PipelineFromFlags starts from the spec (if any), takes the shard from the launcher's
// environment, and applies every pipeline flag given, through the spec's own parser.
// *shard_source (when not null) says where rank and world_size came from.
absl::Status PipelineFromFlags(const ParsedFlags& parsed, PipelineOptions* o,
                               std::string* shard_source = nullptr) {
  const auto spec = parsed.given.find("spec");
  if (spec != parsed.given.end()) {
    absl::StatusOr<PipelineOptions> loaded = LoadSpecFile(spec->second);
    if (!loaded.ok()) return loaded.status();
    *o = *std::move(loaded);
  }
  std::string where;
  if (absl::Status s = ShardFromLauncher(parsed, o, &where); !s.ok()) return s;
  if (shard_source != nullptr) *shard_source = where;
  std::vector<std::string> pipeline_flags;
  for (const FlagDef& f : PipelineFlags()) pipeline_flags.push_back(f.name);
  for (const std::string& name : parsed.order) {
    if (std::find(pipeline_flags.begin(), pipeline_flags.end(), name) == pipeline_flags.end()) {
      continue;
    }
    if (!o->stages.empty() && ConfiguresBuiltinStages(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name, " configures the built-in stages, which ", spec->second,
          " replaces with its stages list: set augment's options there"));
    }
    if (absl::Status s = ApplySpecValue(name, parsed.given.at(name), o); !s.ok()) return s;
  }
  if (o->data.empty() && o->sources.empty() && o->label_maps.empty()) {
    return absl::InvalidArgumentError(
        "--data is required (an ImageFolder directory or list file), or data: or sources: "
        "in --spec");
  }
  return absl::OkStatus();
}

int Run(const CommandDef& command, const ParsedFlags& parsed, absl::Time process_start) {
  RunConfig c;
  c.process_start = process_start;
  std::string shard_source;
  if (absl::Status s = PipelineFromFlags(parsed, &c.pipeline, &shard_source); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (c.pipeline.world_size > 1 || shard_source != "default") {
    LogInfo(absl::StrCat("shard: rank ", c.pipeline.rank, " of ", c.pipeline.world_size,
                         " (from ", shard_source, ")"));
  }
  const FlagReader flags(command, parsed);
  if (parsed.Has("resume")) {
    if (absl::Status s = ParseCursor(flags.Text("resume"), &c.pipeline.resume); !s.ok()) {
      return Fail(std::string(s.message()));
    }
  }
  c.metrics_address = flags.Text("metrics_address");
  c.summary_json = flags.Text("summary_json");
  c.keys_out = flags.Text("keys_out");
  c.samples_out = flags.Text("samples_out");
  c.trace_out = flags.Text("trace_out");
  int64_t spans = 0;
  absl::Status s = flags.Int("trace_spans", 1, int64_t{1} << 32, &spans);
  if (s.ok()) s = flags.Double("report_every", 0, kDaySeconds, &c.report_every_seconds);
  if (s.ok()) s = flags.Double("consumer_ms", 0, kHourMs, &c.consumer_ms);
  if (s.ok()) s = flags.Double("linger_seconds", 0, kDaySeconds, &c.linger_seconds);
  if (s.ok()) s = flags.Bool("progress", &c.progress);
  bool verbose = false;
  if (s.ok()) s = flags.Bool("verbose", &verbose);
  if (!s.ok()) return Fail(std::string(s.message()));
  if (verbose) SetMinLogLevel(LogLevel::kDebug);
  if (!c.trace_out.empty()) c.pipeline.trace_spans = static_cast<size_t>(spans);
  return RunCommand(c);
}

// Plan prints the memory plan of the pipeline the flags describe (plan_command.h).
int Plan(const CommandDef& command, const ParsedFlags& parsed) {
  PipelineOptions options;
  if (absl::Status s = PipelineFromFlags(parsed, &options); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  bool json = false;
  if (absl::Status s = FlagReader(command, parsed).Bool("json", &json); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  return PlanCommand(options, json);
}

// IntList reads a comma-separated list of integers >= 1 ("32,64,128").
absl::Status IntList(const std::string& flag, const std::string& text, std::vector<int>* out) {
  out->clear();
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " must be integers >= 1 separated by commas, got '", text, "'"));
    }
    out->push_back(v);
  }
  return absl::OkStatus();
}

int TuneFromFlags(const CommandDef& command, const ParsedFlags& parsed) {
  TuneOptions o;
  if (absl::Status s = PipelineFromFlags(parsed, &o.pipeline); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const FlagReader flags(command, parsed);
  // cpu_budget and ram_budget are pipeline keys (the autotuner's budgets too).
  o.cpu_budget = o.pipeline.cpu_budget;
  o.ram_budget_bytes = o.pipeline.ram_budget_bytes;
  absl::Status s = IntList("batch_sizes", flags.Text("batch_sizes"), &o.batch_sizes);
  if (s.ok()) s = IntList("prefetch_choices", flags.Text("prefetch_choices"), &o.prefetch_choices);
  if (s.ok()) s = flags.Double("consumer_ms", 0, kHourMs, &o.consumer_ms);
  if (s.ok()) s = flags.Double("time_budget", 0.001, 7 * kDaySeconds, &o.time_budget_seconds);
  if (s.ok()) s = flags.Double("trial_seconds", 0, kDaySeconds, &o.trial_seconds);
  if (s.ok()) s = flags.Bool("grid", &o.grid);
  if (!s.ok()) return Fail(std::string(s.message()));
  return TuneCommand(o, flags.Text("out"));
}

// CheckOutDirectory refuses an --out that exists and is not a directory up front, naming
// the flag ("mkdir /dev/null/class_000: Not a directory" named neither).
absl::Status CheckOutDirectory(const std::string& out) {
  struct stat st;
  if (::stat(out.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--out=", out, " exists and is not a directory: give a directory (made if missing)"));
  }
  return absl::OkStatus();
}

// TaskFlags refuses make-dataset flags that the chosen --task does not read (--images
// with the default classification task made 10 × 30 images, not 5).
absl::Status TaskFlags(const ParsedFlags& parsed, const std::string& task) {
  const bool classification = task == "classification";
  for (const char* flag : {"classes", "images_per_class"}) {
    if (!classification && parsed.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " is for --task=classification; --task=", task, " makes --images images"));
    }
  }
  for (const char* flag : {"images", "max_instances"}) {
    if (classification && parsed.Has(flag)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, " is for --task=detection or segmentation; --task=classification makes "
          "--classes × --images_per_class images"));
    }
  }
  if (task != "detection" && parsed.Has("keypoints")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--keypoints is for --task=detection, not --task=", task));
  }
  return absl::OkStatus();
}

// CheckImageMemory refuses a make-dataset whose largest image (width × height pixels of
// bytes_per_pixel, built whole before it is encoded) cannot fit what the process may use:
// --max_short_side 65000 allocated 16+ GB per image and was OOM-killed, or took the
// machine down with it.
absl::Status CheckImageMemory(int64_t max_short_side, int64_t width, int64_t height,
                              int64_t bytes_per_pixel) {
  const int64_t bytes = width * height * bytes_per_pixel;
  const MemoryBudget available = AvailableMemory();
  if (!available.known() || bytes <= available.bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "--max_short_side ", max_short_side, " makes images of up to ", width, "x", height,
      " pixels, ", FormatBytes(bytes), " each in memory, but ", FormatBytes(available.bytes),
      " is available (", available.source, "): lower --max_short_side"));
}

// ReadShapeSetFlags reads the flags make-dataset's detection and segmentation sets share
// into `o` (DetectionDatasetOptions or SegmentationDatasetOptions); *max_shapes gets
// --max_instances (shapes per image).
template <typename ShapeSetOptions>
absl::Status ReadShapeSetFlags(const FlagReader& flags, ShapeSetOptions& o, int* max_shapes) {
  o.root = flags.Text("out");
  int64_t images = 0, min_side = 0, max_side = 0, shapes = 0, quality = 0, seed = 0;
  absl::Status s = flags.Int("images", 1, 10000000, &images);
  if (s.ok()) s = flags.Int("min_short_side", 64, 65000, &min_side);
  if (s.ok()) s = flags.Int("max_short_side", min_side, 65000, &max_side);
  if (s.ok()) s = flags.Int("max_instances", 1, 9, &shapes);
  if (s.ok()) s = flags.Int("quality", 1, 100, &quality);
  if (s.ok()) s = flags.Int("seed", 0, std::numeric_limits<int64_t>::max(), &seed);
  if (s.ok()) s = flags.Double("noise", 0, 1e6, &o.noise);
  if (s.ok()) s = flags.Bool("overwrite", &o.overwrite);
  // Both sides are drawn from [min, max]; label maps and masks come beside the RGB pixels.
  if (s.ok()) s = CheckImageMemory(max_side, max_side, max_side, 6);
  if (!s.ok()) return s;
  o.images = static_cast<int>(images);
  o.min_side = static_cast<int>(min_side);
  o.max_side = static_cast<int>(max_side);
  *max_shapes = static_cast<int>(shapes);
  o.quality = static_cast<int>(quality);
  o.seed = static_cast<uint64_t>(seed);
  return absl::OkStatus();
}

// MakeDetectionDataset is make-dataset --task=detection (runtime/detection_dataset.h).
int MakeDetectionDataset(const FlagReader& flags) {
  DetectionDatasetOptions o;
  if (absl::Status s = ReadShapeSetFlags(flags, o, &o.max_instances); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (absl::Status s = flags.Bool("keypoints", &o.keypoints); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (absl::Status g = GenerateDetectionDataset(o); !g.ok()) return Fail(std::string(g.message()));
  std::printf("dataset ready: %s/images (%d JPEGs), %s/annotations/instances.json\n",
              o.root.c_str(), o.images, o.root.c_str());
  return 0;
}

// MakeSegmentationDataset is make-dataset --task=segmentation
// (runtime/segmentation_dataset.h).
int MakeSegmentationDataset(const FlagReader& flags) {
  SegmentationDatasetOptions o;
  if (absl::Status s = ReadShapeSetFlags(flags, o, &o.max_shapes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (absl::Status g = GenerateSegmentationDataset(o); !g.ok()) {
    return Fail(std::string(g.message()));
  }
  std::printf("dataset ready: %s/images (%d JPEGs), %s/label_maps (PNG label maps), "
              "%s/train.txt\n",
              o.root.c_str(), o.images, o.root.c_str(), o.root.c_str());
  return 0;
}

int MakeDataset(const CommandDef& command, const ParsedFlags& parsed) {
  const FlagReader flags(command, parsed);
  const std::string task = flags.Text("task");
  if (task != "classification" && task != "detection" && task != "segmentation") {
    return Fail(absl::StrCat("--task must be classification, detection or segmentation, got '",
                             task, "'"));
  }
  if (flags.Text("out").empty()) return Fail("make-dataset needs --out=DIR");
  if (absl::Status s = TaskFlags(parsed, task); !s.ok()) return Fail(std::string(s.message()));
  if (absl::Status s = CheckOutDirectory(flags.Text("out")); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (task == "detection") return MakeDetectionDataset(flags);
  if (task == "segmentation") return MakeSegmentationDataset(flags);
  SampleDatasetOptions o;
  o.root = flags.Text("out");
  if (o.root.empty()) return Fail("make-dataset needs --out=DIR");
  int64_t classes = 0, images = 0, min_side = 0, max_side = 0, quality = 0, seed = 0;
  absl::Status s = flags.Int("classes", 1, 100000, &classes);
  if (s.ok()) s = flags.Int("images_per_class", 1, 10000000, &images);
  if (s.ok()) s = flags.Int("min_short_side", 8, 65000, &min_side);
  if (s.ok()) s = flags.Int("max_short_side", min_side, 65000, &max_side);
  if (s.ok()) s = flags.Int("quality", 1, 100, &quality);
  if (s.ok()) s = flags.Int("seed", 0, std::numeric_limits<int64_t>::max(), &seed);
  if (s.ok()) s = flags.Double("noise", 0, 1e6, &o.noise);
  if (s.ok()) s = flags.Bool("overwrite", &o.overwrite);
  // The long side is up to 1.5 × the short one (sample_dataset.cc).
  if (s.ok()) s = CheckImageMemory(max_side, max_side * 3 / 2, max_side, 3);
  if (!s.ok()) return Fail(std::string(s.message()));
  o.classes = static_cast<int>(classes);
  o.images_per_class = static_cast<int>(images);
  o.min_short_side = static_cast<int>(min_side);
  o.max_short_side = static_cast<int>(max_side);
  o.quality = static_cast<int>(quality);
  o.seed = static_cast<uint64_t>(seed);
  if (absl::Status g = GenerateSampleDataset(o); !g.ok()) return Fail(std::string(g.message()));
  std::printf("dataset ready: %s (%d classes x %d JPEGs)\n", o.root.c_str(), o.classes,
              o.images_per_class);
  return 0;
}

int PackFromFlags(const CommandDef& command, const ParsedFlags& parsed) {
  const FlagReader flags(command, parsed);
  PackOptions o;
  o.data = flags.Text("data");
  o.out = flags.Text("out");
  o.prefix = flags.Text("prefix");
  o.annotations = flags.Text("annotations");
  o.label_maps = flags.Text("label_maps");
  if (o.out.rfind("s3://", 0) != 0) {
    if (absl::Status s = CheckOutDirectory(o.out); !s.ok()) return Fail(std::string(s.message()));
  }
  int64_t max_side = 0, quality = 0;
  absl::Status s = flags.Int("max_side", 0, 65000, &max_side);
  if (s.ok()) s = flags.Int("quality", 1, 100, &quality);
  if (!s.ok()) return Fail(std::string(s.message()));
  absl::StatusOr<int64_t> shard_size = ParseByteSize(flags.Text("shard_size"));
  if (!shard_size.ok()) return Fail(absl::StrCat("--shard_size: ", shard_size.status().message()));
  o.shard_size_bytes = *shard_size;
  absl::StatusOr<int64_t> part_size = ParseByteSize(flags.Text("part_size"));
  if (!part_size.ok()) return Fail(absl::StrCat("--part_size: ", part_size.status().message()));
  // The s3_* flags, through the spec's own parser (one key table).
  PipelineOptions keys;
  for (const std::string& name : parsed.order) {
    if (name.rfind("s3_", 0) != 0) continue;
    if (absl::Status st = ApplySpecValue(name, parsed.given.at(name), &keys); !st.ok()) {
      return Fail(std::string(st.message()));
    }
  }
  keys.s3.upload_part_bytes = *part_size;
  o.storage.s3 = keys.s3;
  o.max_side = static_cast<int>(max_side);
  o.quality = static_cast<int>(quality);
  return PackCommand(o);
}

// IndexFromFlags writes index files beside tar shards (index_command.h).
int IndexFromFlags(const CommandDef& command, const ParsedFlags& parsed) {
  const FlagReader flags(command, parsed);
  IndexCommandOptions o;
  o.data = flags.Text("data");
  o.out = flags.Text("out");
  int64_t threads = 0;
  absl::Status s = flags.Bool("force", &o.force);
  if (s.ok()) s = flags.Int("threads", 1, 256, &threads);
  if (!s.ok()) return Fail(std::string(s.message()));
  o.threads = static_cast<int>(threads);
  // The s3_* and http_ca_file flags, through the spec's own parser (one key table).
  PipelineOptions keys;
  for (const std::string& name : parsed.order) {
    if (name.rfind("s3_", 0) != 0 && name != "http_ca_file") continue;
    if (absl::Status st = ApplySpecValue(name, parsed.given.at(name), &keys); !st.ok()) {
      return Fail(std::string(st.message()));
    }
  }
  o.storage.s3 = keys.s3;
  o.storage.http = keys.http;
  return IndexCommand(o);
}

// Graph prints the planned graph of a spec (graph_command.h).
int Graph(const CommandDef& command, const ParsedFlags& parsed) {
  const FlagReader flags(command, parsed);
  GraphCommandOptions o;
  o.spec = flags.Text("spec");
  if (absl::Status s = flags.Bool("dot", &o.dot); !s.ok()) return Fail(std::string(s.message()));
  return GraphCommand(o);
}

// Stages prints stage types as a YAML list to copy into a spec, then the spec's own keys
// (as comments, so the whole output stays valid YAML).
int Stages() {
  std::printf("%s\n# Pipeline keys of a spec, with their defaults (README.md, \"Writing a "
              "spec\"):\n",
              StageRegistry::Global().Help().c_str());
  for (absl::string_view line : absl::StrSplit(SpecKeysHelp(), '\n', absl::SkipEmpty())) {
    std::printf("#   %.*s\n", static_cast<int>(line.size()), line.data());
  }
  return 0;
}

int Main(int argc, char** argv, absl::Time process_start) {
  const std::vector<CommandDef> commands = Commands();
  if (argc < 2) {
    std::fprintf(stderr, "%s", cli::ProgramHelp(commands).c_str());
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "-help" || first == "help") {
    std::printf("%s", cli::ProgramHelp(commands).c_str());
    return 0;
  }
  if (first == "--version" || first == "version") {
    std::printf("flowloader %s\n", Version());
    return 0;
  }
  const CommandDef* command = nullptr;
  for (const CommandDef& c : commands) {
    if (c.name == first) command = &c;
  }
  if (command == nullptr) {
    return Fail(absl::StrCat("unknown command '", first,
                             "' (run, plan, tune, make-dataset, pack, index, stages, graph; "
                             "flowloader --help)"));
  }
  absl::StatusOr<ParsedFlags> parsed =
      cli::ParseFlags(*command, commands, std::vector<std::string>(argv + 2, argv + argc));
  if (!parsed.ok()) return Fail(std::string(parsed.status().message()));
  if (parsed->help) {
    std::printf("%s", cli::CommandHelp(*command).c_str());
    return 0;
  }
  if (command->name == "run") return Run(*command, *parsed, process_start);
  if (command->name == "plan") return Plan(*command, *parsed);
  if (command->name == "tune") return TuneFromFlags(*command, *parsed);
  if (command->name == "make-dataset") return MakeDataset(*command, *parsed);
  if (command->name == "pack") return PackFromFlags(*command, *parsed);
  if (command->name == "index") return IndexFromFlags(*command, *parsed);
  if (command->name == "graph") return Graph(*command, *parsed);
  return Stages();
}

}  // namespace
}  // namespace flowloader

int main(int argc, char** argv) {
  const absl::Time process_start = absl::Now();
  return flowloader::Main(argc, argv, process_start);
}
