// spec.cc: the spec's keys and the walk over a parsed YAML document.
//
// One table, Keys(), declares every pipeline key with its default, its doc and how it is
// read; the parser, the known-key list of "unknown key" errors and SpecKeysHelp all come
// from it, so they cannot disagree. Stage items are checked against the registry's
// declared schemas the same way.
#include "runtime/spec.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/stage.h"
#include "runtime/internal/spec_ops.h"
#include "runtime/internal/spec_reader.h"
#include "runtime/internal/spec_sources.h"
#include "stages/augment/transform.h"
#include "stages/core/bounded_read.h"
#include "stages/core/resources.h"
#include "stages/reader/dataset.h"
#include "yaml-cpp/yaml.h"

namespace flowloader {
namespace {

using spec_internal::Field;
using spec_internal::Quote;
using spec_internal::SpecReader;
using spec_internal::Suggestion;

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// A spec is a page of text; anything larger is the wrong file (a dataset list, an image).
constexpr size_t kMaxSpecBytes = 1 << 20;

// The keys that configure the built-in stages, and the augment option each maps to in an
// explicit stages list.
const std::map<std::string, std::string>& BuiltinStageKeys() {
  static const auto* keys = new std::map<std::string, std::string>{
      {"transform", "mode"}, {"image_size", "image_size"}, {"layout", "layout"}};
  return *keys;
}

// ReservedStageName: the pipeline's own stages (and the consumer) carry these names in
// metrics, so a user stage must not.
bool ReservedStageName(const std::string& name) {
  return name == "source" || name == "collate" || name == "upload" || name == "consumer";
}

absl::Status ParseShard(const SpecReader& r, const Field& shard, PipelineOptions* o) {
  absl::StatusOr<std::vector<Field>> fields = r.Fields(shard, "shard");
  if (!fields.ok()) return fields.status();
  const Field* rank = nullptr;
  for (const Field& f : *fields) {
    absl::Status s;
    if (f.key == "rank") {
      rank = &f;
      s = r.Int(f, 0, kIntMax, &o->rank);
    } else if (f.key == "world_size") {
      s = r.Int(f, 1, kIntMax, &o->world_size);
    } else {
      s = r.UnknownKey(f, "shard", {"rank", "world_size"});
    }
    if (!s.ok()) return s;
  }
  // Only a given rank can reach world_size: the default rank 0 is below any world_size.
  if (rank != nullptr && o->rank >= o->world_size) {
    return r.ValueError(*rank,
                        absl::StrCat("must be < world_size (", o->world_size, "), got ", o->rank));
  }
  return absl::OkStatus();
}

// OptionText is a stage option's value as the registry reads it: a scalar's text, or a
// list of scalars joined with commas (so `mean: [0.5, 0.5, 0.5]` reads as "0.5,0.5,0.5").
absl::Status OptionText(const SpecReader& r, const Field& f, std::string* text) {
  if (!f.value.IsSequence()) return r.Scalar(f, "a value or a list of values", text);
  std::vector<std::string> parts;
  for (const YAML::Node& item : f.value) {
    if (!item.IsScalar()) {
      return r.Error(item, absl::StrCat("items of ", f.key, " must be plain values, got ",
                                        spec_internal::Describe(item)));
    }
    parts.push_back(item.Scalar());
  }
  *text = absl::StrJoin(parts, ",");
  return absl::OkStatus();
}

// OptionTypeDescription names what a typed stage option wants, for messages.
const char* OptionTypeDescription(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "an integer";
    case OptionType::kFloat:
      return "a number";
    case OptionType::kBool:
      return "true or false";
    case OptionType::kString:
      break;
  }
  return "a string";
}

absl::Status ParseStageOptions(const SpecReader& r, const Field& options, const StageSchema& schema,
                               std::map<std::string, std::string>* args) {
  absl::StatusOr<std::vector<Field>> fields =
      r.Fields(options, absl::StrCat("the options of stage '", schema.type, "'"));
  if (!fields.ok()) return fields.status();
  std::vector<std::string> names;
  for (const OptionSchema& o : schema.options) names.push_back(o.name);
  for (const Field& f : *fields) {
    if (std::find(names.begin(), names.end(), f.key) == names.end()) {
      return r.Error(f.key_node, absl::StrCat("stage '", schema.type, "' has no option ",
                                              Quote(f.key), " ", Suggestion(f.key, names)));
    }
    std::string text;
    const OptionSchema& option =
        schema.options[std::find(names.begin(), names.end(), f.key) - names.begin()];
    // A typed option reads like a typed pipeline key: `fast_idct: yes` and
    // `image_size: "64"` are refused as `shuffle: yes` and `batch_size: "64"` are.
    absl::Status read = option.type == OptionType::kString || f.value.IsSequence()
                            ? OptionText(r, f, &text)
                            : r.Plain(f, OptionTypeDescription(option.type), &text);
    if (!read.ok()) return read;
    // The registry's own check, so a spec accepts exactly what the C++ API accepts.
    absl::StatusOr<StageArgs> checked = StageArgs::Parse(schema, {{f.key, text}});
    if (!checked.ok()) return r.Error(f.value, checked.status().message());
    (*args)[f.key] = text;
  }
  return absl::OkStatus();
}

// IsFieldName: a per-sample field is named like an identifier (it names batch tensors
// and DOT nodes in `flowloader graph`).
bool IsFieldName(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// ParsePorts reads a stage item's `inputs:` or `outputs:`, a list of field names bound to
// the type's ports in order, with where each name was written (for the graph's checks).
absl::Status ParsePorts(const SpecReader& r, const Field& f, std::vector<std::string>* names,
                        std::vector<std::string>* wheres) {
  if (!f.value.IsSequence() || f.value.size() == 0) {
    return r.Expected(f, "a non-empty list of field names ([image], [view0, view1])");
  }
  for (const YAML::Node& item : f.value) {
    const std::string name = item.IsScalar() ? item.Scalar() : "";
    if (!IsFieldName(name)) {
      return r.Error(item, absl::StrCat(f.key, ": a field name is letters, digits and _ "
                                               "(not starting with a digit), got ",
                                        item.IsScalar() ? Quote(name)
                                                        : spec_internal::Describe(item)));
    }
    names->push_back(name);
    wheres->push_back(r.Location(item));
  }
  return absl::OkStatus();
}

bool HasOption(const StageSchema& schema, const std::string& name) {
  for (const OptionSchema& o : schema.options) {
    if (o.name == name) return true;
  }
  return false;
}

// TypesOf lists the registered stage types of one kind: batch stages (batch_ops:) or
// per-sample ones (stages:), sorted.
std::vector<std::string> TypesOf(bool batch) {
  std::vector<std::string> out;
  for (const std::string& type : StageRegistry::Global().Types()) {
    absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(type);
    if (schema.ok() && schema->batch_stage == batch) out.push_back(type);
  }
  return out;
}

// ParseStage reads one item of `stages:`; *name_at is the node its metrics name comes
// from (its name, else its type), for the duplicate-name error.
absl::Status ParseStage(const SpecReader& r, const YAML::Node& item, StageSpec* spec,
                        YAML::Node* name_at) {
  if (!item.IsMap()) {
    return r.Error(item, absl::StrCat("a stage must be a mapping {type, name, concurrency, "
                                      "options}, got ",
                                      spec_internal::Describe(item)));
  }
  absl::StatusOr<std::vector<Field>> fields = r.Fields(item, "a stage");
  if (!fields.ok()) return fields.status();
  const std::vector<std::string> types = TypesOf(/*batch=*/false);
  const Field* type = nullptr;
  for (const Field& f : *fields) {
    if (f.key == "type") type = &f;
  }
  if (type == nullptr) {
    return r.Error(item,
                   absl::StrCat("a stage needs a type (one of: ", absl::StrJoin(types, ", "), ")"));
  }
  if (absl::Status s = r.String(*type, &spec->type); !s.ok()) return s;
  absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec->type);
  if (!schema.ok()) {
    return r.Error(type->value, absl::StrCat("unknown stage type ", Quote(spec->type), " ",
                                             Suggestion(spec->type, types)));
  }
  if (schema->batch_stage) {
    return r.Error(type->value, absl::StrCat(Quote(spec->type), " is a batch stage: list it "
                                             "under batch_ops:, not stages:"));
  }
  *name_at = type->value;
  const std::string what = absl::StrCat("stage '", spec->type, "'");
  for (const Field& f : *fields) {
    absl::Status s;
    if (f.key == "type") {
      continue;
    } else if (f.key == "name") {
      s = r.String(f, &spec->name);
      *name_at = f.value;
    } else if (f.key == "concurrency") {
      s = r.Int(f, 0, kIntMax, &spec->concurrency);
    } else if (f.key == "options") {
      s = ParseStageOptions(r, f, *schema, &spec->args);
    } else if (f.key == "inputs") {
      s = ParsePorts(r, f, &spec->inputs, &spec->inputs_where);
    } else if (f.key == "outputs") {
      s = ParsePorts(r, f, &spec->outputs, &spec->outputs_where);
    } else if (f.key == "ops" && HasOption(*schema, "ops")) {
      std::string text;
      s = spec_internal::ParseOps(r, f, &text);
      spec->args["ops"] = text;
    } else {
      std::vector<std::string> keys = {"type", "name", "concurrency", "options", "inputs",
                                       "outputs"};
      if (HasOption(*schema, "ops")) keys.push_back("ops");
      s = r.UnknownKey(f, what, keys);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ParseStages(const SpecReader& r, const Field& stages, PipelineOptions* o) {
  if (!stages.value.IsSequence()) return r.Expected(stages, "a list of stages");
  if (stages.value.size() == 0) {
    return r.ValueError(stages, "is empty: leave it out for the built-in read, decode, augment");
  }
  std::vector<StageSpec> specs;
  std::map<std::string, int> first_line;  // Metrics name -> line of the stage using it.
  for (const YAML::Node& item : stages.value) {
    StageSpec spec;
    YAML::Node name_at;
    if (absl::Status s = ParseStage(r, item, &spec, &name_at); !s.ok()) return s;
    // An unnamed view's op list is named after its view, so that several can sit in
    // one list (each stage's name is its metrics label).
    if (spec.name.empty() && HasOption(*StageRegistry::Global().Find(spec.type), "ops") &&
        !spec.outputs.empty()) {
      spec.name = absl::StrCat(spec.type, "_", spec.outputs.front());
    }
    const std::string name = spec.name.empty() ? spec.type : spec.name;
    if (ReservedStageName(name)) {
      return r.Error(name_at, absl::StrCat("stage name ", Quote(name),
                                           " is the pipeline's own; give this stage a name"));
    }
    auto [it, inserted] = first_line.emplace(name, name_at.Mark().line + 1);
    if (!inserted) {
      return r.Error(name_at,
                     absl::StrCat("two stages are named ", Quote(name), " (the first at line ",
                                  it->second, "): give one a distinct name"));
    }
    spec.where = r.Location(item);  // For the stage list's check in Pipeline::Create.
    specs.push_back(std::move(spec));
  }
  o->stages = std::move(specs);
  return absl::OkStatus();
}

// ParseBatchOps reads `batch_ops:`, a list of {type, name, options} items naming batch
// stage types (graph/batch_stage.h); a per-sample type is refused where it is written.
absl::Status ParseBatchOps(const SpecReader& r, const Field& ops, PipelineOptions* o) {
  if (!ops.value.IsSequence()) return r.Expected(ops, "a list of batch ops");
  std::vector<StageSpec> specs;
  for (const YAML::Node& item : ops.value) {
    if (!item.IsMap()) {
      return r.Error(item, absl::StrCat("a batch op must be a mapping {type, name, options}, "
                                        "got ", spec_internal::Describe(item)));
    }
    absl::StatusOr<std::vector<Field>> fields = r.Fields(item, "a batch op");
    if (!fields.ok()) return fields.status();
    StageSpec spec;
    const Field* type = nullptr;
    for (const Field& f : *fields) {
      if (f.key == "type") type = &f;
    }
    if (type == nullptr) return r.Error(item, "a batch op needs a type (mixup_cutmix, ...)");
    if (absl::Status s = r.String(*type, &spec.type); !s.ok()) return s;
    absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(spec.type);
    if (!schema.ok()) {
      return r.Error(type->value,
                     absl::StrCat("unknown batch op type ", Quote(spec.type), " ",
                                  Suggestion(spec.type, TypesOf(/*batch=*/true))));
    }
    if (!schema->batch_stage) {
      return r.Error(type->value, absl::StrCat(Quote(spec.type), " is a per-sample stage: "
                                               "list it under stages:, not batch_ops:"));
    }
    for (const Field& f : *fields) {
      absl::Status s;
      if (f.key == "type") continue;
      if (f.key == "name") {
        s = r.String(f, &spec.name);
      } else if (f.key == "options") {
        s = ParseStageOptions(r, f, *schema, &spec.args);
      } else {
        s = r.UnknownKey(f, absl::StrCat("batch op '", spec.type, "'"),
                         {"type", "name", "options"});
      }
      if (!s.ok()) return s;
    }
    spec.where = r.Location(item);  // Leads Create's errors about it (range checks).
    specs.push_back(std::move(spec));
  }
  o->batch_ops = std::move(specs);
  return absl::OkStatus();
}

absl::Status ApplyErrorPolicy(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::string text;
  if (absl::Status s = r.Scalar(f, "skip or fail", &text); !s.ok()) return s;
  absl::Status s = ParseErrorPolicy(text, &o->on_error);
  return s.ok() ? s : r.ValueError(f, s.message());
}

absl::Status ApplyMaxErrors(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::string text;
  if (absl::Status s = r.Scalar(f, "a count or a fraction", &text); !s.ok()) return s;
  absl::Status s = ParseMaxErrors(text, o);
  return s.ok() ? s : r.ValueError(f, s.message());
}

absl::Status ApplyDevice(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::string text;
  if (absl::Status s = r.Scalar(f, "auto, cpu or cuda", &text); !s.ok()) return s;
  absl::Status s = ParseDevice(text, &o->device);
  return s.ok() ? s : r.ValueError(f, s.message());
}

// ApplyAutoCount reads `auto` (PipelineOptions::kAuto) or an integer >= 1 (with Int's
// messages).
absl::Status ApplyAutoCount(const SpecReader& r, const Field& f, int* out) {
  if (f.value.IsScalar() && f.value.Scalar() == "auto") {
    *out = PipelineOptions::kAuto;
    return absl::OkStatus();
  }
  return r.Int(f, 1, kIntMax, out);
}

// ApplyReadAhead reads `auto` (HttpOptions::kReadAheadAuto) or a count >= 0.
absl::Status ApplyReadAhead(const SpecReader& r, const Field& f, PipelineOptions* o) {
  if (f.value.IsScalar() && f.value.Scalar() == "auto") {
    o->http.read_ahead = HttpOptions::kReadAheadAuto;
    return absl::OkStatus();
  }
  return r.Int(f, 0, 4096, &o->http.read_ahead);
}

absl::Status ApplyRamBudget(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::string text;
  if (absl::Status s = r.Scalar(f, "bytes or a share", &text); !s.ok()) return s;
  absl::StatusOr<int64_t> bytes = ParseRamBudget(text, AvailableMemory().bytes);
  if (!bytes.ok()) return r.ValueError(f, bytes.status().message());
  o->ram_budget_bytes = *bytes;
  return absl::OkStatus();
}

// ApplyCacheBytes reads cache_bytes: bytes, with or without a unit ("10GiB", "512M").
absl::Status ApplyCacheBytes(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::string text;
  if (absl::Status s = r.Scalar(f, "bytes", &text); !s.ok()) return s;
  absl::StatusOr<int64_t> bytes = absl::StrContains(text, "%")
                                      ? absl::InvalidArgumentError("")
                                      : ParseRamBudget(text, /*available_bytes=*/-1);
  if (!bytes.ok() || *bytes < 1) {
    return r.ValueError(f, absl::StrCat("must be bytes >= 1 (10GiB, 512MiB, 1073741824), got ",
                                        Quote(text)));
  }
  o->cache_bytes = *bytes;
  return absl::OkStatus();
}

// ApplyColumns reads `columns`: "txt,json" (the flag's form) or a YAML list [txt, json].
absl::Status ApplyColumns(const SpecReader& r, const Field& f, PipelineOptions* o) {
  std::vector<std::string> names;
  if (f.value.IsSequence()) {
    for (const YAML::Node& item : f.value) {
      if (!item.IsScalar()) return r.Expected(f, "column names: txt,json or [txt, json]");
      names.push_back(item.Scalar());
    }
  } else {
    std::string text;
    if (absl::Status s = r.Scalar(f, "column names: txt,json", &text); !s.ok()) return s;
    for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
      names.emplace_back(absl::StripAsciiWhitespace(name));
    }
  }
  if (absl::Status s = CheckColumnNames(names); !s.ok()) return r.ValueError(f, s.message());
  o->columns = std::move(names);
  return absl::OkStatus();
}

using Apply = absl::Status (*)(const SpecReader&, const Field&, PipelineOptions*);

// Key is one pipeline key of a spec.
struct Key {
  const char* name;
  const char* default_text;  // As a spec would write it; "" where there is none.
  const char* doc;
  Apply apply;
};

const std::vector<Key>& Keys() {
  using R = const SpecReader&;
  using F = const Field&;
  using O = PipelineOptions*;
  static const auto* keys = new std::vector<Key>{
      {"data", "",
       "required (here or --data): ImageFolder root, list file or tar shards "
       "(train-{000000..000009}.tar, a directory or list of .tar, http(s):// URLs, "
       "s3://BUCKET/PREFIX); "
       "relative to the spec's directory",
       [](R r, F f, O o) { return r.String(f, &o->data); }},
      {"annotations", "",
       "a COCO instances JSON (detection): the samples are the images it lists under "
       "data (their directory), with boxes, labels and masks as targets; with tar-shard "
       "data, .json: each sample's .json member holds its image's annotations",
       [](R r, F f, O o) { return r.Scalar(f, "a COCO instances JSON path", &o->annotations); }},
      {"categories", "",
       "with tar-shard annotations (.json): a JSON file whose \"categories\" list maps "
       "category ids to labels (a COCO instances file, or OUT/categories.json from pack); "
       "default: the sorted category ids seen in the shards",
       [](R r, F f, O o) { return r.Scalar(f, "a JSON file path", &o->categories); }},
      {"skip_empty", "false",
       "with annotations: drop images without an instance (counted) instead of keeping "
       "them with empty targets",
       [](R r, F f, O o) { return r.Bool(f, &o->skip_empty); }},
      {"label_maps", "",
       "semantic segmentation: PNG label maps paired with data's images by key, a "
       "directory (IMAGES/a.jpg with LABEL_MAPS/a.png) or a list file of `image "
       "label_map` lines; with tar-shard data, .png: each sample's .png member; batches "
       "are (images, masks [N, H, W])",
       [](R r, F f, O o) { return r.Scalar(f, "a directory or list file", &o->label_maps); }},
      {"sources", "",
       "weighted datasets instead of data: [{name: a, data: DIR_OR_LIST, weight: 3}, ...]; "
       "ImageFolder sources share one class map by class name",
       spec_internal::ParseSources},
      {"epoch_samples", "0",
       "samples per epoch before sharding; 0 = the sum of the sources' sizes",
       [](R r, F f, O o) { return r.Int(f, 0, kInt64Max, &o->epoch_samples); }},
      {"repeated_augment", "1",
       "copies of each sample in a row, each a different view (RASampler; timm's "
       "--aug-repeats): an epoch keeps floor(n // 256 * 256 / world_size) a rank; >= 1",
       [](R r, F f, O o) { return r.Int(f, 1, kIntMax, &o->repeated_augment); }},
      {"label_key", "",
       "tar shards: the .json member's integer field holding the label; empty = the "
       ".cls member",
       [](R r, F f, O o) { return r.Scalar(f, "a .json field name", &o->label_key); }},
      {"columns", "",
       "extra per-sample string columns (Batch::columns): tar shards' member extensions "
       "read when indexing (txt,json), or a list file's #columns: to keep; empty = none "
       "from shards, all of a list file's",
       ApplyColumns},
      {"column_max_bytes", "65536",
       "tar shards: the largest column member, bytes; a larger one is skipped as "
       "column_too_large; >= 1",
       [](R r, F f, O o) { return r.Int(f, 1, kInt64Max, &o->column_max_bytes); }},
      {"http_cache_mb", "256",
       "tar shards over HTTP: MiB of whole shards (in listing order, while they fit) read "
       "as cached 1 MiB blocks instead of a request per member; in the memory plan; 0 = off",
       [](R r, F f, O o) { return r.Int(f, 0, kInt64Max >> 20, &o->http_cache_mb); }},
      {"read_ahead", "auto",
       "remote data (s3://, http(s)://): reads in flight ahead of the workers; auto = sized "
       "from the measured request latency (up to 128), N = N, 0 = off (one per worker); "
       "finished reads wait in at most 64 MiB, in the memory plan",
       ApplyReadAhead},
      {"http_ca_file", "",
       "tar shards over https: a PEM bundle of the CAs to trust (a private CA) instead of "
       "the system's; certificates are always verified; relative to the spec's directory",
       [](R r, F f, O o) { return r.Scalar(f, "a file path", &o->http.ca_file); }},
      {"cache_dir", "",
       "remote data (s3://, http(s)://): a directory keeping whole objects and shard "
       "blocks across epochs and runs, shared by processes naming it; empty = none; "
       "relative to the spec's directory",
       [](R r, F f, O o) { return r.Scalar(f, "a directory path", &o->cache_dir); }},
      {"cache_bytes", "10GiB",
       "with cache_dir: the most the cache may hold on disk (least recently used "
       "removed past it): bytes (10GiB, 512MiB); >= 1",
       ApplyCacheBytes},
      {"s3_endpoint", "",
       "s3:// data: the endpoint URL (MinIO, Ceph, R2: http(s)://HOST[:PORT]); empty = "
       "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS",
       [](R r, F f, O o) { return r.Scalar(f, "an endpoint URL", &o->s3.endpoint); }},
      {"s3_region", "",
       "s3:// data: the signing region; empty = AWS_REGION, AWS_DEFAULT_REGION, the "
       "profile's region, else us-east-1",
       [](R r, F f, O o) { return r.Scalar(f, "a region name", &o->s3.region); }},
      {"s3_profile", "",
       "s3:// data: the profile of ~/.aws/credentials and ~/.aws/config to use (wins over "
       "AWS_ACCESS_KEY_ID); empty = AWS_PROFILE, else default",
       [](R r, F f, O o) { return r.Scalar(f, "a profile name", &o->s3.profile); }},
      {"s3_addressing", "auto",
       "s3:// data: path (ENDPOINT/BUCKET/KEY) or virtual (BUCKET.HOST/KEY); auto = the "
       "profile's addressing_style, else virtual for AWS and path for other endpoints",
       [](R r, F f, O o) {
         std::string v;
         if (absl::Status s = r.Choice(f, {"auto", "path", "virtual"}, &v); !s.ok()) return s;
         o->s3.addressing = v == "auto" ? "" : v;
         return absl::OkStatus();
       }},
      {"s3_anonymous", "false",
       "s3:// data: unsigned requests for a public bucket (no credentials looked up)",
       [](R r, F f, O o) { return r.Bool(f, &o->s3.anonymous); }},
      {"name", "default", "the `pipeline` label in metrics",
       [](R r, F f, O o) {
         if (absl::Status s = r.String(f, &o->name); !s.ok()) return s;
         // A label that is not UTF-8 fails Prometheus's whole scrape (--name=$'\xe4').
         size_t at = 0;
         if (const std::string why = spec_internal::NotText(o->name, &at); !why.empty()) {
           return r.ValueError(f, absl::StrCat("must be UTF-8 text without control characters "
                                               "(it is the pipeline label in metrics), got ",
                                               why, " at byte ", at));
         }
         return absl::OkStatus();
       }},
      {"batch_size", "64", "samples per batch; >= 1",
       [](R r, F f, O o) { return r.Int(f, 1, kIntMax, &o->batch_size); }},
      {"num_workers", "auto",
       "threads, the concurrency of decode/augment; >= 1, or auto (the autotuner's, "
       "within cpu_budget)",
       [](R r, F f, O o) { return ApplyAutoCount(r, f, &o->num_workers); }},
      {"prefetch_batches", "auto",
       "batch buffers (memory = this x batch bytes); >= 1, or auto (the autotuner's, "
       "within ram_budget)",
       [](R r, F f, O o) { return ApplyAutoCount(r, f, &o->prefetch_batches); }},
      {"cpu_budget", "0",
       "CPUs num_workers: auto may use; 0 = what this process may use (affinity, cgroup "
       "quota)",
       [](R r, F f, O o) { return r.Int(f, 0, 4096, &o->cpu_budget); }},
      {"ram_budget", "",
       "memory prefetch_batches: auto may bring the process to: bytes (2GiB, 512MiB) or a "
       "share (50%) of what it may use; default 50%",
       ApplyRamBudget},
      {"epochs", "1", "epochs to deliver; 0 = until stopped",
       [](R r, F f, O o) { return r.Int(f, 0, kInt64Max, &o->epochs); }},
      {"seed", "0", "seeds the shuffle and every random crop/flip",
       [](R r, F f, O o) { return r.Uint64(f, &o->seed); }},
      {"shuffle", "true", "a different order each epoch",
       [](R r, F f, O o) { return r.Bool(f, &o->shuffle); }},
      {"drop_last", "false", "drop each epoch's last partial batch",
       [](R r, F f, O o) { return r.Bool(f, &o->drop_last); }},
      {"size_divisibility", "-1",
       "pad a batch's images of different sizes (an op list bounded by resize's max_size, "
       "scale_jitter, ...) with 0 to its largest height and width rounded up to a multiple "
       "of this, as Detectron2 (0: not rounded; -1: off, one size per batch)",
       [](R r, F f, O o) { return r.Int(f, -1, 1024, &o->size_divisibility); }},
      {"shard", "{rank: 0, world_size: 1}", "this process's equal-size shard of each epoch",
       ParseShard},
      {"even_shards", "pad",
       "equal shards when world_size does not divide the data: pad (repeat the first "
       "samples) or trim (drop the tail), as DistributedSampler(drop_last=False|True)",
       [](R r, F f, O o) { return r.Choice(f, {"pad", "trim"}, &o->even_shards); }},
      // The defaults and choices of transform and layout are augment's table
      // (stages/augment/transform.h ModeNames, LayoutNames).
      {"transform", augment::ModeName(augment::Mode::kTrain).c_str(),
       "built-in stages: train or eval (torchvision's recipes)",
       [](R r, F f, O o) {
         return r.Choice(f, augment::ModeNames(), &o->transform);
       }},
      {"image_size", "224", "built-in stages: output side in pixels; >= 1",
       [](R r, F f, O o) { return r.Int(f, 1, kIntMax, &o->image_size); }},
      {"layout", augment::LayoutName(augment::Layout::kFloatCHW).c_str(),
       "built-in stages: float_chw or uint8_hwc",
       [](R r, F f, O o) {
         return r.Choice(f, augment::LayoutNames(), &o->layout);
       }},
      {"stages", "",
       "explicit stages replacing the built-in read, decode, augment "
       "(flowloader stages lists them)",
       ParseStages},
      {"batch_ops", "",
       "batch stages run on each collated batch, in order: mixup_cutmix, label_smoothing, "
       "mosaic, copy_paste (flowloader stages lists them)",
       ParseBatchOps},
      {"on_error", "skip", "skip (count and drop a bad sample) or fail", ApplyErrorPolicy},
      {"max_errors", "",
       "stop past this many failed samples: a count (100) or a fraction "
       "(0.05, 5%); default no limit",
       ApplyMaxErrors},
      {"in_order", "true", "deliver in sampler order (false: as batches complete)",
       [](R r, F f, O o) { return r.Bool(f, &o->in_order); }},
      {"device", "auto", "auto (CUDA if present), cpu or cuda", ApplyDevice},
      {"pin_memory", "true", "pinned host buffers where CUDA is present",
       [](R r, F f, O o) { return r.Bool(f, &o->pin_memory); }},
      {"memory_limit_mb", "0",
       "the process's peak memory, in MiB (the plan fits it less 48 MiB the process holds "
       "itself); 0 = what the process may use (MemAvailable, cgroup limit)",
       [](R r, F f, O o) { return r.Int(f, 0, kInt64Max >> 20, &o->memory_limit_mb); }},
      {"checksum", "false",
       "hash every delivered batch's tensor bytes, labels and targets in order: "
       "data_checksum in the summary JSON",
       [](R r, F f, O o) { return r.Bool(f, &o->checksum); }},
  };
  return *keys;
}

absl::Status ParsePipeline(const SpecReader& r, const YAML::Node& root, PipelineOptions* o) {
  absl::StatusOr<std::vector<Field>> fields = r.Fields(root, "pipeline");
  if (!fields.ok()) return fields.status();
  std::vector<std::string> names;
  for (const Key& k : Keys()) names.push_back(k.name);
  const Field* stages = nullptr;
  const Field* builtin = nullptr;  // The first key configuring the built-in stages.
  for (const Field& f : *fields) {
    const Key* key = nullptr;
    for (const Key& k : Keys()) {
      if (f.key == k.name) key = &k;
    }
    if (key == nullptr) return r.UnknownKey(f, "pipeline", names);
    if (absl::Status s = key->apply(r, f, o); !s.ok()) return s;
    if (f.key == "stages") stages = &f;
    if (builtin == nullptr && BuiltinStageKeys().count(f.key) > 0) builtin = &f;
  }
  if (stages != nullptr && builtin != nullptr) {
    return r.Error(builtin->key_node,
                   absl::StrCat(builtin->key,
                                " configures the built-in stages, which the "
                                "stages list at line ",
                                stages->key_node.Mark().line + 1, " replaces: set augment's ",
                                BuiltinStageKeys().at(builtin->key), " option there instead"));
  }
  return absl::OkStatus();
}

// ReadSpecFile reads the spec to at most kMaxSpecBytes (a pipe such as <(...) has no size
// up front).
absl::Status ReadSpecFile(const std::string& path, std::string* text) {
  const BoundedRead read = ReadBounded(path, static_cast<int64_t>(kMaxSpecBytes), text);
  switch (read.outcome) {
    case BoundedRead::Outcome::kRead:
      return absl::OkStatus();
    case BoundedRead::Outcome::kCannotOpen:
      return absl::ErrnoToStatus(read.error, absl::StrCat(path, ": cannot open the spec"));
    case BoundedRead::Outcome::kDirectory:
      return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a spec file"));
    case BoundedRead::Outcome::kTooLarge:
      return absl::InvalidArgumentError(absl::StrCat(path, ": over ", kMaxSpecBytes >> 20,
                                                     " MiB, too large for a spec (the wrong file?)"));
    case BoundedRead::Outcome::kCannotRead:
      break;
  }
  return absl::ErrnoToStatus(read.error, absl::StrCat(path, ": cannot read the spec"));
}

}  // namespace

absl::StatusOr<PipelineOptions> ParseSpec(const std::string& text, const std::string& base_dir,
                                          const std::string& file_name) {
  const SpecReader r(file_name);
  PipelineOptions options;
  absl::StatusOr<YAML::Node> root = r.Load(text);
  if (!root.ok()) return root.status();
  if (root->IsNull()) {
    return r.ErrorAt(YAML::Mark(),
                     "the spec is empty (it maps pipeline keys such as data "
                     "and batch_size to values)");
  }
  try {
    if (absl::Status s = ParsePipeline(r, *root, &options); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    // The walk uses no throwing yaml-cpp call; should one throw anyway, it is one line too.
    return r.ErrorAt(e.mark, absl::StrCat("cannot read the spec: ", e.msg));
  }
  // A URL (tar shards over HTTP) is not a path relative to the spec.
  if (!options.data.empty() && options.data[0] != '/' && !base_dir.empty() &&
      !absl::StrContains(options.data, "://")) {
    options.data = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/", options.data);
  }
  // A tar-shard member extension (".png", ".json": a dot, no '/') is not a path either.
  auto member = [](const std::string& v) {
    return v[0] == '.' && v.find('/') == std::string::npos;
  };
  if (!options.label_maps.empty() && options.label_maps[0] != '/' &&
      !member(options.label_maps) && !base_dir.empty() &&
      !absl::StrContains(options.label_maps, "://")) {
    options.label_maps = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/",
                                      options.label_maps);
  }
  if (!options.annotations.empty() && options.annotations[0] != '/' &&
      !member(options.annotations) && !base_dir.empty() &&
      !absl::StrContains(options.annotations, "://")) {
    options.annotations = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/",
                                       options.annotations);
  }
  if (!options.categories.empty() && options.categories[0] != '/' && !base_dir.empty() &&
      !absl::StrContains(options.categories, "://")) {
    options.categories = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/",
                                      options.categories);
  }
  for (WeightedSource& source : options.sources) {
    if (source.data[0] != '/' && !base_dir.empty() && !absl::StrContains(source.data, "://")) {
      source.data =
          absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/", source.data);
    }
  }
  // The CA file travels with the spec, like its data.
  std::string& ca_file = options.http.ca_file;
  if (!ca_file.empty() && ca_file[0] != '/' && !base_dir.empty()) {
    ca_file = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/", ca_file);
  }
  std::string& cache_dir = options.cache_dir;
  if (!cache_dir.empty() && cache_dir[0] != '/' && !base_dir.empty()) {
    cache_dir = absl::StrCat(base_dir, absl::EndsWith(base_dir, "/") ? "" : "/", cache_dir);
  }
  return options;
}

absl::StatusOr<PipelineOptions> LoadSpecFile(const std::string& path) {
  std::string text;
  if (absl::Status s = ReadSpecFile(path, &text); !s.ok()) return s;
  const size_t slash = path.rfind('/');
  const std::string base_dir = slash == std::string::npos ? ""
                               : slash == 0               ? "/"
                                                          : path.substr(0, slash);
  return ParseSpec(text, base_dir, path);
}

std::string SpecKeysHelp() {
  std::string out;
  for (const Key& k : Keys()) {
    std::string line = absl::StrCat(k.name, ":", *k.default_text ? " " : "", k.default_text);
    line.resize(std::max<size_t>(line.size() + 2, 34), ' ');
    absl::StrAppend(&out, line, "# ", k.doc, "\n");
  }
  return out;
}

std::vector<SpecKey> SpecKeys() {
  std::vector<SpecKey> out;
  for (const Key& k : Keys()) {
    const std::string default_text = k.default_text;
    const std::string name = k.name;
    out.push_back({name, default_text, k.doc, default_text == "true" || default_text == "false",
                   name != "stages" && name != "batch_ops" && name != "shard" &&
                       name != "sources"});
  }
  return out;
}

namespace {

std::string ErrorPolicyText(ErrorPolicy p) { return p == ErrorPolicy::kFail ? "fail" : "skip"; }

std::string DeviceText(DeviceChoice d) {
  switch (d) {
    case DeviceChoice::kCpu:
      return "cpu";
    case DeviceChoice::kCuda:
      return "cuda";
    case DeviceChoice::kAuto:
      break;
  }
  return "auto";
}

// MaxErrorsText is the inverse of ParseMaxErrors ("" = no limit).
std::string MaxErrorsText(const PipelineOptions& o) {
  if (o.max_errors >= 0) return absl::StrCat(o.max_errors);
  if (o.max_error_fraction < 1.0) return absl::StrCat(o.max_error_fraction * 100, "%");
  return "";
}

std::string StagesYaml(const std::vector<StageSpec>& stages) {
  std::string out = "stages:\n";
  for (const StageSpec& s : stages) {
    absl::StrAppend(&out, "  - type: ", YamlScalar(s.type), "\n");
    if (!s.name.empty()) absl::StrAppend(&out, "    name: ", YamlScalar(s.name), "\n");
    if (s.concurrency > 0) absl::StrAppend(&out, "    concurrency: ", s.concurrency, "\n");
    if (!s.inputs.empty()) {
      absl::StrAppend(&out, "    inputs: [", absl::StrJoin(s.inputs, ", "), "]\n");
    }
    if (!s.outputs.empty()) {
      absl::StrAppend(&out, "    outputs: [", absl::StrJoin(s.outputs, ", "), "]\n");
    }
    if (s.args.empty()) continue;
    absl::StrAppend(&out, "    options:\n");
    for (const auto& [name, value] : s.args) {
      absl::StrAppend(&out, "      ", name, ": ", YamlScalar(value), "\n");
    }
  }
  return out;
}

}  // namespace

std::string SpecYaml(const PipelineOptions& o) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::string out = absl::StrCat(
      o.sources.empty() ? absl::StrCat("data: ", YamlScalar(o.data), "\n")
                        : spec_internal::SourcesYaml(o),
      "annotations: ", YamlScalar(o.annotations), "\ncategories: ", YamlScalar(o.categories),
      "\nskip_empty: ", b(o.skip_empty),
      "\nlabel_maps: ", YamlScalar(o.label_maps),
      "\nepoch_samples: ", o.epoch_samples, "\nrepeated_augment: ", o.repeated_augment,
      "\nlabel_key: ", YamlScalar(o.label_key),
      "\ncolumns: ", YamlScalar(absl::StrJoin(o.columns, ",")),
      "\ncolumn_max_bytes: ", o.column_max_bytes,
      "\nhttp_cache_mb: ", o.http_cache_mb, "\nread_ahead: ",
      o.http.read_ahead == HttpOptions::kReadAheadAuto ? std::string("auto")
                                                       : absl::StrCat(o.http.read_ahead),
      "\nhttp_ca_file: ", YamlScalar(o.http.ca_file),
      "\ncache_dir: ", YamlScalar(o.cache_dir), "\ncache_bytes: ", o.cache_bytes,
      "\ns3_endpoint: ", YamlScalar(o.s3.endpoint), "\ns3_region: ", YamlScalar(o.s3.region),
      "\ns3_profile: ", YamlScalar(o.s3.profile), "\ns3_addressing: ",
      o.s3.addressing.empty() ? "auto" : o.s3.addressing, "\ns3_anonymous: ", b(o.s3.anonymous),
      "\nname: ", YamlScalar(o.name), "\nbatch_size: ",
      o.batch_size, "\nnum_workers: ", AutoCountText(o.num_workers), "\nprefetch_batches: ",
      AutoCountText(o.prefetch_batches), "\ncpu_budget: ", o.cpu_budget, "\nepochs: ", o.epochs,
      "\nseed: ", o.seed, "\nshuffle: ",
      b(o.shuffle), "\ndrop_last: ", b(o.drop_last),
      "\nsize_divisibility: ", o.size_divisibility, "\nshard: {rank: ", o.rank,
      ", world_size: ", o.world_size, "}\neven_shards: ", YamlScalar(o.even_shards), "\n");
  if (o.stages.empty()) {
    absl::StrAppend(&out, "transform: ", YamlScalar(o.transform), "\nimage_size: ",
                    o.image_size, "\nlayout: ", YamlScalar(o.layout), "\n");
  } else {
    absl::StrAppend(&out, StagesYaml(o.stages));
  }
  if (!o.batch_ops.empty()) {
    std::string ops = StagesYaml(o.batch_ops);  // The same item form, another key.
    absl::StrAppend(&out, "batch_ops:", ops.substr(ops.find('\n')));
  }
  const std::string max_errors = MaxErrorsText(o);
  absl::StrAppend(&out, "on_error: ", ErrorPolicyText(o.on_error), "\n");
  if (!max_errors.empty()) absl::StrAppend(&out, "max_errors: ", YamlScalar(max_errors), "\n");
  absl::StrAppend(&out, "in_order: ", b(o.in_order), "\ndevice: ", DeviceText(o.device),
                  "\npin_memory: ", b(o.pin_memory), "\nmemory_limit_mb: ", o.memory_limit_mb,
                  "\nchecksum: ", b(o.checksum), "\n");
  // 0 is the default, half of what the process may use, which a spec writes as a share.
  absl::StrAppend(&out, "ram_budget: ",
                  o.ram_budget_bytes > 0 ? absl::StrCat(o.ram_budget_bytes) : "50%", "\n");
  return out;
}

absl::Status ApplySpecValue(const std::string& key, const std::string& text,
                            PipelineOptions* options) {
  const SpecReader r("");  // No file: messages start with the flag.
  const Field field{absl::StrCat("--", key), YAML::Node(), YAML::Node(text)};
  if (key == "rank") return r.Int(field, 0, kIntMax, &options->rank);
  if (key == "world_size") return r.Int(field, 1, kIntMax, &options->world_size);
  for (const Key& k : Keys()) {
    if (key == k.name && key != "stages" && key != "batch_ops" && key != "shard" &&
        key != "sources") {
      return k.apply(r, field, options);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("--", key, " is not a pipeline setting"));
}

absl::Status ApplySpecYamlValue(const std::string& key, const std::string& yaml,
                                PipelineOptions* options) {
  const SpecReader r(key);  // Messages read "sources:1:12: ...", located in `yaml`.
  absl::StatusOr<YAML::Node> value = r.Load(yaml);
  if (!value.ok()) return value.status();
  for (const Key& k : Keys()) {
    if (key == k.name) return k.apply(r, Field{key, YAML::Node(), *value}, options);
  }
  return absl::InvalidArgumentError(absl::StrCat(key, " is not a pipeline setting"));
}

std::string AutoCountText(int value) {
  return value == PipelineOptions::kAuto ? "auto" : absl::StrCat(value);
}

absl::StatusOr<int64_t> ParseRamBudget(absl::string_view text, int64_t available_bytes) {
  const absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
      "must be bytes (2147483648, 2GiB, 512MiB) or a share (50%), got ", Quote(text)));
  absl::string_view t = absl::StripAsciiWhitespace(text);
  if (absl::ConsumeSuffix(&t, "%")) {
    double percent = 0;
    if (!absl::SimpleAtod(t, &percent) || !(percent > 0 && percent <= 100)) return bad;
    if (available_bytes < 0) {
      return absl::InvalidArgumentError(
          "as a share needs a known memory limit; none could be read: give bytes");
    }
    return static_cast<int64_t>(static_cast<double>(available_bytes) * percent / 100);
  }
  int64_t unit = 1;
  for (const auto& [suffix, bytes] :
       std::vector<std::pair<const char*, int64_t>>{{"GiB", int64_t{1} << 30},
                                                    {"MiB", int64_t{1} << 20},
                                                    {"KiB", int64_t{1} << 10},
                                                    {"G", int64_t{1} << 30},
                                                    {"M", int64_t{1} << 20},
                                                    {"K", int64_t{1} << 10}}) {
    if (absl::ConsumeSuffix(&t, suffix)) {
      unit = bytes;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(t, &value) || !(value > 0) || value * unit > 9.0e18) return bad;
  return static_cast<int64_t>(value * static_cast<double>(unit));
}

absl::Status ParseErrorPolicy(absl::string_view text, ErrorPolicy* out) {
  if (text == "skip") {
    *out = ErrorPolicy::kSkip;
  } else if (text == "fail") {
    *out = ErrorPolicy::kFail;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("must be skip or fail, got ", Quote(text)));
  }
  return absl::OkStatus();
}

absl::Status ParseDevice(absl::string_view text, DeviceChoice* out) {
  if (text == "auto") {
    *out = DeviceChoice::kAuto;
  } else if (text == "cpu") {
    *out = DeviceChoice::kCpu;
  } else if (text == "cuda") {
    *out = DeviceChoice::kCuda;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("must be auto, cpu or cuda, got ", Quote(text)));
  }
  return absl::OkStatus();
}

absl::Status ParseMaxErrors(absl::string_view text, PipelineOptions* out) {
  const absl::Status bad = absl::InvalidArgumentError(
      absl::StrCat("must be a count (100) or a fraction (0.05, 5%), got ", Quote(text)));
  int64_t count = -1;
  double fraction = 1.0;
  absl::string_view t = text;
  if (t.empty()) {
    // No limit.
  } else if (absl::ConsumeSuffix(&t, "%")) {
    if (!absl::SimpleAtod(t, &fraction) || !(fraction >= 0 && fraction <= 100)) return bad;
    fraction /= 100.0;
  } else if (absl::StrContains(t, '.')) {
    if (!absl::SimpleAtod(t, &fraction) || !(fraction >= 0 && fraction <= 1)) return bad;
  } else if (!absl::SimpleAtoi(t, &count) || count < 0) {
    return bad;
  }
  out->max_errors = count;
  out->max_error_fraction = fraction;
  return absl::OkStatus();
}

}  // namespace flowloader
