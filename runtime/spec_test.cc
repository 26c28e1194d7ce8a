// Properties of the pipeline spec parser: every key reaches PipelineOptions, every class
// of mistake is one located line, and hostile text never crashes it.
#include "runtime/spec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "graph/stage.h"
#include "gtest/gtest.h"

namespace flowloader {
namespace {

// ExpectSameOptions compares every field a spec can set.
void ExpectSameOptions(const PipelineOptions& a, const PipelineOptions& b) {
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.columns, b.columns);
  EXPECT_EQ(a.column_max_bytes, b.column_max_bytes);
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.num_workers, b.num_workers);
  EXPECT_EQ(a.prefetch_batches, b.prefetch_batches);
  EXPECT_EQ(a.epochs, b.epochs);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.shuffle, b.shuffle);
  EXPECT_EQ(a.drop_last, b.drop_last);
  EXPECT_EQ(a.size_divisibility, b.size_divisibility);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.even_shards, b.even_shards);
  EXPECT_EQ(a.transform, b.transform);
  EXPECT_EQ(a.image_size, b.image_size);
  EXPECT_EQ(a.layout, b.layout);
  EXPECT_EQ(a.stages.size(), b.stages.size());
  EXPECT_EQ(a.on_error, b.on_error);
  EXPECT_EQ(a.max_errors, b.max_errors);
  EXPECT_EQ(a.max_error_fraction, b.max_error_fraction);
  EXPECT_EQ(a.in_order, b.in_order);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.pin_memory, b.pin_memory);
  EXPECT_EQ(a.memory_limit_mb, b.memory_limit_mb);
  EXPECT_EQ(a.http_cache_mb, b.http_cache_mb);
  EXPECT_EQ(a.http.ca_file, b.http.ca_file);
  EXPECT_EQ(a.cache_dir, b.cache_dir);
  EXPECT_EQ(a.cache_bytes, b.cache_bytes);
  EXPECT_EQ(a.http.read_ahead, b.http.read_ahead);
  EXPECT_EQ(a.s3.endpoint, b.s3.endpoint);
  EXPECT_EQ(a.s3.region, b.s3.region);
  EXPECT_EQ(a.s3.profile, b.s3.profile);
  EXPECT_EQ(a.s3.addressing, b.s3.addressing);
  EXPECT_EQ(a.s3.anonymous, b.s3.anonymous);
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.repeated_augment, b.repeated_augment);
  EXPECT_EQ(a.batch_ops.size(), b.batch_ops.size());
}

PipelineOptions Parse(const std::string& text) {
  absl::StatusOr<PipelineOptions> o = ParseSpec(text, "", "t.yaml");
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *o : PipelineOptions();
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Two user stage types, registered before any test runs so that every test sees the same
// registry (the known-type lists in messages include them).
const bool kTestStagesRegistered = [] {
  StageSchema schema;
  schema.type = "spec_test_blur";
  schema.doc = "a registered user stage";
  schema.options = {{"radius", OptionType::kInt, "1", "pixels"},
                    {"edge", OptionType::kString, "clamp", "edge mode", {"clamp", "wrap"}}};
  absl::Status s = StageRegistry::Global().Register(
      schema, [](const StageArgs&, StageEnv&) -> absl::StatusOr<std::unique_ptr<SampleStage>> {
        return absl::UnimplementedError("not run here");
      });
  s.Update(StageRegistry::Global().RegisterFunction(
      "spec_test_noop", "no options", [](SampleContext&) { return absl::OkStatus(); }));
  return s.ok();
}();

TEST(SpecTest, ReadsEveryPipelineKey) {
  const PipelineOptions o = Parse(R"(
data: /data/train
name: resnet
batch_size: 256
num_workers: 8
prefetch_batches: 5
epochs: 90
seed: 18446744073709551615
shuffle: false
drop_last: true
shard: {rank: 3, world_size: 4}
transform: eval
image_size: 192
layout: uint8_hwc
on_error: fail
max_errors: 100
in_order: false
device: cpu
pin_memory: false
memory_limit_mb: 4096
)");
  EXPECT_EQ(o.data, "/data/train");
  EXPECT_EQ(o.name, "resnet");
  EXPECT_EQ(o.batch_size, 256);
  EXPECT_EQ(o.num_workers, 8);
  EXPECT_EQ(o.prefetch_batches, 5);
  EXPECT_EQ(o.epochs, 90);
  EXPECT_EQ(o.seed, 18446744073709551615ull);
  EXPECT_FALSE(o.shuffle);
  EXPECT_TRUE(o.drop_last);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  EXPECT_EQ(o.transform, "eval");
  EXPECT_EQ(o.image_size, 192);
  EXPECT_EQ(o.layout, "uint8_hwc");
  EXPECT_EQ(o.on_error, ErrorPolicy::kFail);
  EXPECT_EQ(o.max_errors, 100);
  EXPECT_EQ(o.max_error_fraction, 1.0);
  EXPECT_FALSE(o.in_order);
  EXPECT_EQ(o.device, DeviceChoice::kCpu);
  EXPECT_FALSE(o.pin_memory);
  EXPECT_EQ(o.memory_limit_mb, 4096);
  EXPECT_TRUE(o.stages.empty());
}

// num_workers and prefetch_batches take `auto` (the online autotuner), with its budgets;
// SpecYaml writes auto back.
TEST(SpecTest, ReadsAutoKnobsAndTheirBudgets) {
  const PipelineOptions o = Parse(
      "data: d\nnum_workers: auto\nprefetch_batches: auto\ncpu_budget: 3\n"
      "ram_budget: 512MiB\n");
  EXPECT_EQ(o.num_workers, PipelineOptions::kAuto);
  EXPECT_EQ(o.prefetch_batches, PipelineOptions::kAuto);
  EXPECT_EQ(o.cpu_budget, 3);
  EXPECT_EQ(o.ram_budget_bytes, int64_t{512} << 20);
  const std::string yaml = SpecYaml(o);
  EXPECT_NE(yaml.find("\nnum_workers: auto\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("\nprefetch_batches: auto\n"), std::string::npos) << yaml;
  EXPECT_EQ(Parse(yaml).num_workers, PipelineOptions::kAuto);
  PipelineOptions flags;
  EXPECT_TRUE(ApplySpecValue("num_workers", "auto", &flags).ok());
  EXPECT_EQ(flags.num_workers, PipelineOptions::kAuto);
  EXPECT_EQ(std::string(ApplySpecValue("ram_budget", "lots", &flags).message()),
            "--ram_budget must be bytes (2147483648, 2GiB, 512MiB) or a share (50%), got 'lots'");
  // --name is the metrics label: not UTF-8, it failed Prometheus's whole scrape.
  EXPECT_EQ(std::string(ApplySpecValue("name", "a\xe4", &flags).message()),
            "--name must be UTF-8 text without control characters (it is the pipeline label in "
            "metrics), got byte 0xe4, which is not UTF-8 at byte 1");
  EXPECT_TRUE(ApplySpecValue("name", "caf\xc3\xa9 \xe2\x82\xac", &flags).ok());
}

// SpecYaml (what `flowloader tune` writes as best.yaml) reads back to the same options,
// and writes every key: a key added to the table but not to SpecYaml fails here.
TEST(SpecTest, SpecYamlReadsBackToTheSameOptionsAndWritesEveryKey) {
  PipelineOptions o;
  o.data = "/data/my train";  // Needs quoting.
  o.name = "tuned";
  o.batch_size = 128;
  o.num_workers = 3;
  o.prefetch_batches = 4;
  o.epochs = 7;
  o.seed = 18446744073709551615ull;
  o.shuffle = false;
  o.drop_last = true;
  o.rank = 1;
  o.world_size = 2;
  o.even_shards = "trim";
  o.transform = "eval";
  o.image_size = 160;
  o.layout = "uint8_hwc";
  o.on_error = ErrorPolicy::kFail;
  o.max_error_fraction = 0.05;
  o.in_order = false;
  o.device = DeviceChoice::kCpu;
  o.pin_memory = false;
  o.memory_limit_mb = 512;
  o.http_cache_mb = 64;
  o.http.read_ahead = 24;
  o.http.ca_file = "/etc/flowloader/ca.pem";
  o.cache_dir = "/scratch/flowloader";
  o.cache_bytes = int64_t{5} << 30;
  o.s3.endpoint = "http://127.0.0.1:7480";
  o.s3.region = "eu-west-1";
  o.s3.profile = "ceph";
  o.s3.addressing = "path";
  o.s3.anonymous = true;
  o.checksum = true;
  o.cpu_budget = 2;
  o.ram_budget_bytes = int64_t{3} << 30;
  o.columns = {"txt", "seg.json"};
  o.column_max_bytes = 1000;
  o.repeated_augment = 3;
  const std::string yaml = "\n" + SpecYaml(o);
  ExpectSameOptions(Parse(yaml), o);
  EXPECT_EQ(Parse(yaml).cpu_budget, 2);
  EXPECT_EQ(Parse(yaml).ram_budget_bytes, int64_t{3} << 30);
  for (const SpecKey& key : SpecKeys()) {
    if (key.name == "stages") continue;  // Written instead of the built-in stages' keys.
    if (key.name == "batch_ops") continue;  // Written when set (SpecTest.BatchOps...).
    if (key.name == "sources") continue;  // Written instead of data (SpecTest.Sources...).
    EXPECT_NE(yaml.find("\n" + key.name + ":"), std::string::npos) << key.name << " in\n" << yaml;
  }
  o.max_errors = 10;
  o.max_error_fraction = 1.0;
  ExpectSameOptions(Parse(SpecYaml(o)), o);
}

TEST(SpecTest, ColumnsReadsACommaListOrAYamlListAndRefusesABadName) {
  EXPECT_EQ(Parse("data: d\ncolumns: txt, json\n").columns,
            (std::vector<std::string>{"txt", "json"}));
  EXPECT_EQ(Parse("data: d\ncolumns: [txt, seg.json]\n").columns,
            (std::vector<std::string>{"txt", "seg.json"}));
  PipelineOptions o;
  EXPECT_EQ(ApplySpecValue("columns", "txt,..x", &o).message(),
            "--columns has '..x', not a column name (letters, digits and _, dots only "
            "between them, not starting with a digit) or a repeated one");
  EXPECT_EQ(ApplySpecValue("column_max_bytes", "0", &o).message(),
            "--column_max_bytes must be >= 1, got 0");
}

TEST(SpecTest, ApplySpecYamlValueParsesSourcesAsASpecDoes) {
  PipelineOptions o;
  ASSERT_TRUE(ApplySpecYamlValue("sources", R"([{"name": "a", "data": "x", "weight": 2}])", &o)
                  .ok());
  ASSERT_EQ(o.sources.size(), 1u);
  EXPECT_EQ(o.sources[0].data, "x");
  EXPECT_EQ(o.sources[0].weight, 2.0);
  EXPECT_EQ(ApplySpecYamlValue("sources", R"([{"name": "a"}])", &o).message(),
            "sources:1:2: a source needs a name and data ({name: a, data: DIR, weight: 1})");
}

TEST(SpecTest, SpecYamlWritesAnExplicitStagesList) {
  const PipelineOptions o = Parse(R"(
data: d
stages:
  - type: read
  - type: decode
    name: jpeg
    concurrency: 2
    options: {fast_idct: true}
  - type: augment
    options: {mode: eval, image_size: 96, mean: [0.5, 0.5, 0.5]}
)");
  const PipelineOptions back = Parse(SpecYaml(o));
  ExpectSameOptions(back, o);
  ASSERT_EQ(back.stages.size(), 3u);
  EXPECT_EQ(back.stages[1].name, "jpeg");
  EXPECT_EQ(back.stages[1].concurrency, 2);
  EXPECT_EQ(back.stages[1].args, o.stages[1].args);
  EXPECT_EQ(back.stages[2].args, o.stages[2].args);
}

TEST(SpecTest, KeysLeftOutKeepTheOptionDefaults) {
  PipelineOptions want;
  want.data = "d";
  ExpectSameOptions(Parse("data: d\n"), want);
}

// SpecKeysHelp is what users read: each default it documents must be the real one.
TEST(SpecTest, DocumentedDefaultsAreTheOptionDefaults) {
  std::string spec;
  int keys_with_defaults = 0;
  for (absl::string_view line : absl::StrSplit(SpecKeysHelp(), '\n', absl::SkipEmpty())) {
    const std::string entry(line.substr(0, line.find('#')));
    if (absl::StripAsciiWhitespace(entry).back() == ':') continue;  // No default to write.
    absl::StrAppend(&spec, entry, "\n");
    ++keys_with_defaults;
  }
  EXPECT_GE(keys_with_defaults, 16);
  ExpectSameOptions(Parse(spec), PipelineOptions());
}

TEST(SpecTest, MaxErrorsTakesACountOrAFraction) {
  struct Case {
    std::string text;
    int64_t count;
    double fraction;
  };
  for (const Case& c : std::vector<Case>{{"100", 100, 1.0},
                                         {"0", 0, 1.0},
                                         {"0.05", -1, 0.05},
                                         {"5%", -1, 0.05},
                                         {"'7.5%'", -1, 0.075}}) {
    SCOPED_TRACE(c.text);
    const PipelineOptions o = Parse("max_errors: " + c.text);
    EXPECT_EQ(o.max_errors, c.count);
    EXPECT_DOUBLE_EQ(o.max_error_fraction, c.fraction);
  }
}

// A flag overriding a spec's max_errors goes through the same function: the new limit
// replaces the old one of either kind.
TEST(SpecTest, MaxErrorsOverrideReplacesTheOtherKindOfLimit) {
  PipelineOptions o = Parse("max_errors: 5%");
  ASSERT_TRUE(ParseMaxErrors("10", &o).ok());
  EXPECT_EQ(o.max_errors, 10);
  EXPECT_EQ(o.max_error_fraction, 1.0);
  ASSERT_TRUE(ParseMaxErrors("0.5", &o).ok());
  EXPECT_EQ(o.max_errors, -1);
  EXPECT_EQ(o.max_error_fraction, 0.5);
  ASSERT_TRUE(ParseMaxErrors("", &o).ok());
  EXPECT_EQ(o.max_errors, -1);
  EXPECT_EQ(o.max_error_fraction, 1.0);
  EXPECT_FALSE(ParseMaxErrors("-3", &o).ok());
}

TEST(SpecTest, ReadsAnExplicitStagesList) {
  const PipelineOptions o = Parse(R"(
stages:
  - type: read
  - type: decode
    name: jpeg
    concurrency: 3
    options: {fast_idct: true, max_pixels: 1000000}
  - type: augment
    options:
      mode: eval
      mean: [0.5, 0.25, 0.125]
)");
  ASSERT_EQ(o.stages.size(), 3u);
  EXPECT_EQ(o.stages[0].type, "read");
  EXPECT_EQ(o.stages[0].name, "");
  EXPECT_EQ(o.stages[0].concurrency, 0);
  EXPECT_TRUE(o.stages[0].args.empty());
  EXPECT_EQ(o.stages[1].type, "decode");
  EXPECT_EQ(o.stages[1].name, "jpeg");
  EXPECT_EQ(o.stages[1].concurrency, 3);
  EXPECT_EQ(o.stages[1].args,
            (std::map<std::string, std::string>{{"fast_idct", "true"}, {"max_pixels", "1000000"}}));
  EXPECT_EQ(o.stages[2].args,
            (std::map<std::string, std::string>{{"mode", "eval"}, {"mean", "0.5,0.25,0.125"}}));
}

TEST(SpecTest, ValidatesCustomStageTypesAgainstTheirSchema) {
  ASSERT_TRUE(kTestStagesRegistered);
  const PipelineOptions o =
      Parse("stages:\n  - {type: spec_test_blur, options: {radius: 4, edge: wrap}}\n");
  ASSERT_EQ(o.stages.size(), 1u);
  EXPECT_EQ(o.stages[0].args.at("radius"), "4");

  const std::string bad[][2] = {
      {"stages: [{type: spec_test_blur, options: {radius: 1.5}}]",
       "t.yaml:1:51: stage 'spec_test_blur' option 'radius' must be int, got '1.5'"},
      {"stages: [{type: spec_test_blur, options: {edge: mirror}}]",
       "t.yaml:1:49: stage 'spec_test_blur' option 'edge' must be one of clamp, wrap, got "
       "'mirror'"},
      {"stages: [{type: spec_test_blur, options: {radios: 2}}]",
       "t.yaml:1:43: stage 'spec_test_blur' has no option 'radios' (did you mean 'radius'?)"},
      {"stages: [{type: spec_test_noop, options: {x: 1}}]",
       "t.yaml:1:43: stage 'spec_test_noop' has no option 'x' (there are none)"},
  };
  for (const auto& [text, want] : bad) {
    EXPECT_EQ(std::string(ParseSpec(text, "", "t.yaml").status().message()), want);
  }
}

TEST(SpecTest, BatchOpsReadsAListOfBatchStagesAndSpecYamlWritesItBack) {
  const std::string text =
      "data: d\nbatch_ops:\n  - type: mixup_cutmix\n    options:\n      mixup_alpha: 0.8\n"
      "      mode: elem\n  - type: label_smoothing\n    name: smooth\n";
  absl::StatusOr<PipelineOptions> o = ParseSpec(text, "", "t.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->batch_ops.size(), 2u);
  EXPECT_EQ(o->batch_ops[0].type, "mixup_cutmix");
  EXPECT_EQ(o->batch_ops[0].args.at("mixup_alpha"), "0.8");
  EXPECT_EQ(o->batch_ops[0].args.at("mode"), "elem");
  EXPECT_EQ(o->batch_ops[0].where, "t.yaml:3:5");  // Leads Create's range errors.
  EXPECT_EQ(o->batch_ops[1].name, "smooth");
  absl::StatusOr<PipelineOptions> back = ParseSpec(SpecYaml(*o), "", "u.yaml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << SpecYaml(*o);
  ASSERT_EQ(back->batch_ops.size(), 2u);
  EXPECT_EQ(back->batch_ops[0].args, o->batch_ops[0].args);
  EXPECT_EQ(back->batch_ops[1].name, "smooth");
}

// ErrorCase is one mistake and the exact message it must produce.
struct ErrorCase {
  std::string name;
  std::string text;
  std::string message;  // The whole expected message, "t.yaml:LINE:COL: ...".
};

class SpecErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SpecErrorTest, FailsWithOneLocatedLine) {
  const ErrorCase& c = GetParam();
  absl::StatusOr<PipelineOptions> o = ParseSpec(c.text, "", "t.yaml");
  ASSERT_FALSE(o.ok()) << "parsed: " << c.text;
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(o.status().message()), c.message);
}

const ErrorCase kErrorCases[] = {
    // Malformed YAML: yaml-cpp's own message, at its position.
    {"UnclosedList", "data: d\nbatch_size: [1, 2\n",
     "t.yaml:3:1: invalid YAML: end of sequence flow not found"},
    {"BadIndentation", "data: d\n  batch_size: 2\n",
     "t.yaml:2:13: invalid YAML: illegal map value"},
    {"BadEscape", "data: \"\\xZZ\"\n",
     "t.yaml:1:12: invalid YAML: bad character found while scanning hex number"},
    {"UndefinedAlias", "data: *nowhere\n",
     "t.yaml:1:7: invalid YAML: the referenced anchor is not defined"},
    // Shape of the document.
    {"Empty", "",
     "t.yaml:1:1: the spec is empty (it maps pipeline keys such as data and "
     "batch_size to values)"},
    {"OnlyComments", "# nothing yet\n",
     "t.yaml:1:1: the spec is empty (it maps pipeline keys "
     "such as data and batch_size to values)"},
    {"NotAMapping", "- data\n- batch_size\n",
     "t.yaml:1:1: pipeline must be a mapping of keys, got a list"},
    {"TwoDocuments", "data: a\n---\ndata: b\n",
     "t.yaml:2:1: a spec is one YAML document; this is a second (remove the '---')"},
    // yaml-cpp's LoadAll loops forever (and allocates without bound) on these.
    {"StrayComma", ",\n", "t.yaml:1:1: invalid YAML: unexpected ','"},
    {"StrayCommaAfterContent", "[1]\n, 2\n", "t.yaml:2:1: invalid YAML: unexpected ','"},
    {"DeepNesting", std::string(5000, '['), "t.yaml:1:1: invalid YAML: nested too deeply"},
    {"ListAsKey", "? [a, b]\n: 1\n",
     "t.yaml:1:3: keys in pipeline must be plain names, got a list"},
    // Unknown and repeated keys.
    {"UnknownKeyWithSuggestion", "data: d\nbatchsize: 32\n",
     "t.yaml:2:1: unknown key 'batchsize' in pipeline (did you mean 'batch_size'?)"},
    {"UnknownKeyByContainment", "workers: 4\n",
     "t.yaml:1:1: unknown key 'workers' in pipeline (did you mean 'num_workers'?)"},
    // No close match: where the 46 keys are listed, not all of them (a 650-character line).
    {"UnknownKeySaysWhereKeysAreListed", "colour: red\n",
     "t.yaml:1:1: unknown key 'colour' in pipeline (none is close; flowloader stages lists "
     "the keys)"},
    {"UnknownKeyOfAShortListListsThem", "shard: {colour: 1}\n",
     "t.yaml:1:9: unknown key 'colour' in shard (known: rank, world_size)"},
    {"MergeKeyIsNamed", "shard: {<<: {rank: 0}}\n",
     "t.yaml:1:9: merge keys (<<) are not supported: write the keys out in shard"},
    {"MergeKeyInAStage", "stages:\n  - &r {type: read}\n  - {<<: *r, name: r2}\n",
     "t.yaml:3:6: merge keys (<<) are not supported: write the keys out in a stage"},
    {"DuplicateKey", "batch_size: 8\ndata: d\nbatch_size: 16\n",
     "t.yaml:3:1: duplicate key 'batch_size' in pipeline (first at line 1)"},
    // Wrong types.
    {"IntGivenText", "batch_size: many\n",
     "t.yaml:1:13: batch_size must be an integer, got 'many'"},
    {"IntGivenFloat", "num_workers: 2.5\n",
     "t.yaml:1:14: num_workers must be an integer, got '2.5'"},
    {"IntGivenList", "epochs: [1]\n", "t.yaml:1:9: epochs must be an integer, got a list"},
    {"MissingValue", "batch_size:\nnum_workers: 2\n",
     "t.yaml:1:1: batch_size needs a value (an integer)"},
    {"NullValue", "data: ~\n", "t.yaml:1:1: data needs a value (a string)"},
    {"StringGivenMapping", "name: {a: 1}\n", "t.yaml:1:7: name must be a string, got a mapping"},
    {"EmptyString", "name: ''\n", "t.yaml:1:7: name must not be empty"},
    {"BoolGivenYes", "shuffle: yes\n", "t.yaml:1:10: shuffle must be true or false, got 'yes'"},
    {"SeedNegative", "seed: -1\n", "t.yaml:1:7: seed must be in [0, 18446744073709551615], got -1"},
    {"SeedText", "seed: abc\n", "t.yaml:1:7: seed must be an integer, got 'abc'"},
    // Out of range.
    {"BatchSizeZero", "batch_size: 0\n", "t.yaml:1:13: batch_size must be >= 1, got 0"},
    {"PrefetchNegative", "prefetch_batches: -2\n",
     "t.yaml:1:19: prefetch_batches must be >= 1, got -2"},
    {"WorkersOverflowInt", "num_workers: 99999999999\n",
     "t.yaml:1:14: num_workers must be <= 2147483647, got 99999999999"},
    {"EpochsOverflowInt64", "epochs: 99999999999999999999999\n",
     "t.yaml:1:9: epochs must be <= 9223372036854775807, got 99999999999999999999999"},
    {"EpochsNegative", "epochs: -1\n", "t.yaml:1:9: epochs must be >= 0, got -1"},
    {"ImageSizeZero", "image_size: 0\n", "t.yaml:1:13: image_size must be >= 1, got 0"},
    // Enumerations.
    {"TransformUnknown", "transform: sideways\n",
     "t.yaml:1:12: transform must be one of train, eval, got 'sideways'"},
    {"LayoutUnknown", "layout: nhwc\n",
     "t.yaml:1:9: layout must be one of float_chw, uint8_hwc, got 'nhwc'"},
    {"EvenShardsUnknown", "even_shards: drop\n",
     "t.yaml:1:14: even_shards must be one of pad, trim, got 'drop'"},
    {"OnErrorUnknown", "on_error: maybe\n",
     "t.yaml:1:11: on_error must be skip or fail, got 'maybe'"},
    {"DeviceUnknown", "device: tpu\n", "t.yaml:1:9: device must be auto, cpu or cuda, got 'tpu'"},
    {"MaxErrorsText", "max_errors: lots\n",
     "t.yaml:1:13: max_errors must be a count (100) or a fraction (0.05, 5%), got 'lots'"},
    {"MaxErrorsOverHundredPercent", "max_errors: 150%\n",
     "t.yaml:1:13: max_errors must be a count (100) or a fraction (0.05, 5%), got '150%'"},
    // shard.
    {"ShardNotAMapping", "shard: 2\n", "t.yaml:1:8: shard must be a mapping, got '2'"},
    {"ShardUnknownKey", "shard: {rank: 0, wold_size: 2}\n",
     "t.yaml:1:18: unknown key 'wold_size' in shard (did you mean 'world_size'?)"},
    {"ShardRankPastWorldSize", "shard:\n  rank: 2\n  world_size: 2\n",
     "t.yaml:2:9: rank must be < world_size (2), got 2"},
    {"ShardWorldSizeZero", "shard: {world_size: 0}\n",
     "t.yaml:1:21: world_size must be >= 1, got 0"},
    // stages.
    {"StagesNotAList", "stages: {type: read}\n",
     "t.yaml:1:9: stages must be a list of stages, got a mapping"},
    {"StagesEmpty", "stages: []\n",
     "t.yaml:1:9: stages is empty: leave it out for the built-in read, decode, augment"},
    {"StageNotAMapping", "stages:\n  - read\n",
     "t.yaml:2:5: a stage must be a mapping {type, name, concurrency, options}, got 'read'"},
    {"StageWithoutType", "stages:\n  - name: x\n",
     "t.yaml:2:5: a stage needs a type (one of: annotations, augment, decode, label_map, read, "
     "sanitize_bounding_boxes, spec_test_blur, spec_test_noop, transforms)"},
    {"UnknownStageType", "stages:\n  - type: decod\n",
     "t.yaml:2:11: unknown stage type 'decod' (did you mean 'decode'?)"},
    {"UnknownStageTypeListsTheKnown", "stages:\n  - type: sharpen\n",
     "t.yaml:2:11: unknown stage type 'sharpen' (known: annotations, augment, decode, label_map, read, "
     "sanitize_bounding_boxes, spec_test_blur, spec_test_noop, transforms)"},
    {"UnknownStageKey", "stages:\n  - type: read\n    option: {}\n",
     "t.yaml:3:5: unknown key 'option' in stage 'read' (did you mean 'options'?)"},
    {"UnknownOp",
     "stages:\n  - type: transforms\n    ops:\n      - random_resized_crop: {size: 64}\n"
     "      - random_horizntal_flip\n",
     "t.yaml:5:9: unknown op 'random_horizntal_flip' (did you mean "
     "'random_horizontal_flip'?)"},
    {"UnknownOpSaysWhereOpsAreListed",
     "stages:\n  - type: transforms\n    ops:\n      - posterise_more: {bits: 2}\n",
     "t.yaml:4:9: unknown op 'posterise_more' (none is close; flowloader stages lists the "
     "ops)"},
    {"OpArgumentOutOfRange",
     "stages:\n  - type: transforms\n    ops:\n      - random_resized_crop: {size: 64, p: abc}\n",
     "t.yaml:4:44: random_resized_crop: p must be a number (the probability: 1 or more always "
     "applies, 0 or less never), got abc"},
    {"SubOpUnknownWhereWritten",
     "stages:\n  - type: transforms\n    ops:\n      - random_choice:\n"
     "          transforms: [grayscale, random_invrt]\n",
     "t.yaml:5:35: unknown op 'random_invrt' (did you mean 'random_invert'?)"},
    {"OpArgumentUnknown",
     "stages:\n  - type: transforms\n    ops:\n      - center_crop: {sise: 64}\n",
     "t.yaml:4:23: center_crop has no argument 'sise' (did you mean 'size'?)"},
    {"OpArgumentAgainstAnotherGivenOne",
     "stages:\n  - type: transforms\n    ops:\n      - resize: {max_size: 200, size: 300}\n",
     "t.yaml:4:28: resize: max_size must be an integer > size=300, got 200"},
    {"RandAugmentMagnitudeBeyondItsBins",
     "stages:\n  - type: transforms\n    ops:\n"
     "      - rand_augment: {num_magnitude_bins: 40, magnitude: 50}\n",
     "t.yaml:4:59: rand_augment: magnitude must be a number in [-40, 39], got 50"},
    {"PixelOpAfterNormalize",
     "stages:\n  - type: transforms\n    ops:\n      - center_crop: {size: 8}\n"
     "      - normalize\n      - random_horizontal_flip\n",
     "t.yaml:6:9: op 3 (random_horizontal_flip): works on uint8 pixels, so it must come "
     "before normalize (op 2)"},
    {"EmptyOps", "stages:\n  - type: transforms\n    ops: []\n",
     "t.yaml:3:10: ops is empty: a view needs at least one op (flowloader stages lists them)"},
    {"OpsOnAStageWithoutThem", "stages:\n  - type: read\n    ops: [normalize]\n",
     "t.yaml:3:5: unknown key 'ops' in stage 'read' (known: type, name, concurrency, "
     "options, inputs, outputs)"},
    {"PortsNotAList", "stages:\n  - type: augment\n    outputs: view0\n",
     "t.yaml:3:14: outputs must be a non-empty list of field names ([image], [view0, view1]), "
     "got 'view0'"},
    {"PortNameNotAName", "stages:\n  - type: augment\n    inputs: [image, 2x]\n",
     "t.yaml:3:21: inputs: a field name is letters, digits and _ (not starting with a digit), "
     "got '2x'"},
    {"UnknownOption", "stages:\n  - type: decode\n    options: {fastidct: true}\n",
     "t.yaml:3:15: stage 'decode' has no option 'fastidct' (did you mean 'fast_idct'?)"},
    {"OptionOfWrongType", "stages:\n  - type: decode\n    options:\n      max_pixels: lots\n",
     "t.yaml:4:19: stage 'decode' option 'max_pixels' must be int, got 'lots'"},
    {"OptionNotInChoices", "stages:\n  - type: augment\n    options: {mode: sideways}\n",
     "t.yaml:3:21: stage 'augment' option 'mode' must be one of train, eval, got 'sideways'"},
    {"OptionGivenMapping", "stages:\n  - type: augment\n    options: {mean: {r: 1}}\n",
     "t.yaml:3:21: mean must be a value or a list of values, got a mapping"},
    {"OptionListOfLists", "stages:\n  - type: augment\n    options: {mean: [[1], 2, 3]}\n",
     "t.yaml:3:22: items of mean must be plain values, got a list"},
    {"OptionsNotAMapping", "stages:\n  - type: read\n    options: [1]\n",
     "t.yaml:3:14: options must be a mapping, got a list"},
    {"NegativeConcurrency", "stages:\n  - {type: read, concurrency: -1}\n",
     "t.yaml:2:31: concurrency must be >= 0, got -1"},
    {"DuplicateStageByType", "stages:\n  - type: read\n  - type: read\n",
     "t.yaml:3:11: two stages are named 'read' (the first at line 2): give one a distinct name"},
    {"DuplicateStageByName", "stages:\n  - {type: read, name: a}\n  - {type: decode, name: a}\n",
     "t.yaml:3:26: two stages are named 'a' (the first at line 2): give one a distinct name"},
    {"ReservedStageName", "stages:\n  - {type: read, name: collate}\n",
     "t.yaml:2:24: stage name 'collate' is the pipeline's own; give this stage a name"},
    {"StagesWithBuiltinKeys", "image_size: 160\nstages:\n  - type: read\n",
     "t.yaml:1:1: image_size configures the built-in stages, which the stages list at line 2 "
     "replaces: set augment's image_size option there instead"},
    {"StagesWithTransform", "stages:\n  - type: read\ntransform: eval\n",
     "t.yaml:3:1: transform configures the built-in stages, which the stages list at line 1 "
     "replaces: set augment's mode option there instead"},
    // batch_ops: batch stage types only, their options typed and chosen as stages' are.
    {"PerSampleStageInBatchOps", "batch_ops:\n  - type: augment\n",
     "t.yaml:2:11: 'augment' is a per-sample stage: list it under stages:, not batch_ops:"},
    {"BatchStageInStages", "stages:\n  - type: read\n  - type: mixup_cutmix\n",
     "t.yaml:3:11: 'mixup_cutmix' is a batch stage: list it under batch_ops:, not stages:"},
    {"BatchOpModeFoo", "batch_ops:\n  - type: mixup_cutmix\n    options: {mode: foo}\n",
     "t.yaml:3:21: stage 'mixup_cutmix' option 'mode' must be one of batch, pair, elem, got "
     "'foo'"},
    {"BatchOpsNotAList", "batch_ops: mixup_cutmix\n",
     "t.yaml:1:12: batch_ops must be a list of batch ops, got 'mixup_cutmix'"},
    {"BatchOpUnknownKey", "batch_ops:\n  - type: label_smoothing\n    concurrency: 2\n",
     "t.yaml:3:5: unknown key 'concurrency' in batch op 'label_smoothing' (known: type, name, "
     "options)"},
    {"RepeatedAugmentZero", "repeated_augment: 0\n",
     "t.yaml:1:19: repeated_augment must be >= 1, got 0"},
    // Text that must not break the one-line rule.
    {"ControlCharactersInKey", "\"bad\\nkey\\x01\": 1\n",
     "t.yaml:1:1: unknown key 'bad\\x0akey\\x01' in pipeline (none is close; flowloader "
     "stages lists the keys)"},
    // What YAML forbids and yaml-cpp passed through: a NUL (the name 'a\0b' read 'a' in
    // logs) and a byte that is not UTF-8 (a label that fails Prometheus's whole scrape).
    {"NulByteInText", std::string("data: d\nname: a\0b\n", 18),
     "t.yaml:2:8: the text holds a control character (\\x00): a spec is plain UTF-8 text "
     "(is this the right file?)"},
    {"Latin1ByteInText", "data: d\nname: a\xe4" "b\n",
     "t.yaml:2:8: the text holds byte 0xe4, which is not UTF-8: a spec is plain UTF-8 text "
     "(is this the right file?)"},
    {"TruncatedUtf8AtTheEnd", "data: d\nname: a\xc3",
     "t.yaml:2:8: the text holds byte 0xc3, which is not UTF-8: a spec is plain UTF-8 text "
     "(is this the right file?)"},
    // A float option is finite: 1e309 reads as inf (a read retry that waits for ever).
    {"FloatOptionOverflows", "stages:\n  - type: read\n    options: {backoff_ms: 1e309}\n",
     "t.yaml:3:27: stage 'read' option 'backoff_ms' must be a finite number, got '1e309'"},
    {"FloatOptionInf", "stages:\n  - type: read\n    options: {backoff_ms: inf}\n",
     "t.yaml:3:27: stage 'read' option 'backoff_ms' must be a finite number, got 'inf'"},
    {"LongValueIsShortened", "batch_size: " + std::string(100, 'x') + "\n",
     "t.yaml:1:13: batch_size must be an integer, got '" + std::string(40, 'x') + "...'"},
    // An alias is the node it names, so the message points at the anchor.
    {"SelfReferencingAlias", "shard: &s {rank: *s}\n",
     "t.yaml:1:8: rank must be an integer, got a mapping"},
};

INSTANTIATE_TEST_SUITE_P(Mistakes, SpecErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) {
                           return info.param.name;
                         });

// Hostile text and random damage to a real spec: a status every time (ok or one line
// naming the file), never a crash or an escaped exception.
TEST(SpecTest, HostileAndMutatedTextNeverCrashes) {
  constexpr char kBinary[] = "data: d\0\xff\xfe\x80 x";
  std::vector<std::string> inputs = {
      std::string(200000, '['),
      std::string(100000, '{') + std::string(100000, '}'),
      std::string(kBinary, sizeof(kBinary) - 1),
      "\xef\xbb\xbf"
      "data: \xc3\x28\n",
      "a: &a [*a, *a]\nb: *a\n",
      "!!binary abc: def",
      "%YAML 9.9\n---\ndata: d\n",
      "data: |\n  multi\n  line\n",
  };
  std::ifstream in("runtime/specs/custom.yaml");
  const std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(base.empty());
  std::mt19937 rng(1234);
  const std::string alphabet = " \n\t:-[]{},#&*!|>'\"%@`?~0123456789abcxyz\\";
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.erase(at, 1 + rng() % 8);
      }
      if (text.empty()) text = "x";
    }
    inputs.push_back(text);
  }
  int failed = 0;
  for (const std::string& text : inputs) {
    absl::StatusOr<PipelineOptions> o = ParseSpec(text, "", "m.yaml");
    if (o.ok()) continue;
    ++failed;
    const std::string message(o.status().message());
    EXPECT_TRUE(absl::StartsWith(message, "m.yaml:")) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_GT(failed, 1000);  // The mutations must actually reach the error paths.
}

TEST(SpecTest, RelativeDataResolvesAgainstTheBaseDirectory) {
  EXPECT_EQ(ParseSpec("data: imgs/train", "/srv/specs", "t").value().data, "/srv/specs/imgs/train");
  EXPECT_EQ(ParseSpec("data: ../imgs", "/srv/specs/", "t").value().data, "/srv/specs/../imgs");
  EXPECT_EQ(ParseSpec("data: /abs/imgs", "/srv/specs", "t").value().data, "/abs/imgs");
  EXPECT_EQ(ParseSpec("data: imgs", "", "t").value().data, "imgs");
  EXPECT_EQ(ParseSpec("batch_size: 2", "/srv", "t").value().data, "");  // Left for --data.
}

TEST(SpecTest, RelativeHttpCaFileResolvesAgainstTheBaseDirectory) {
  EXPECT_EQ(ParseSpec("http_ca_file: ca.pem", "/srv/specs", "t").value().http.ca_file,
            "/srv/specs/ca.pem");
  EXPECT_EQ(ParseSpec("http_ca_file: /etc/ca.pem", "/srv/specs", "t").value().http.ca_file,
            "/etc/ca.pem");
  EXPECT_EQ(ParseSpec("batch_size: 2", "/srv", "t").value().http.ca_file, "");
}

TEST(SpecTest, LoadSpecFileResolvesDataAgainstTheFilesDirectory) {
  const std::string dir = TempDir() + "/load_spec";
  std::filesystem::create_directories(dir + "/sub");
  WriteFile(dir + "/sub/spec.yaml", "data: images\nbatch_size: 8\n");
  absl::StatusOr<PipelineOptions> o = LoadSpecFile(dir + "/sub/spec.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->data, dir + "/sub/images");
  EXPECT_EQ(o->batch_size, 8);
}

TEST(SpecTest, LoadSpecFileErrorsNameTheFile) {
  const std::string dir = TempDir() + "/load_errors";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/bad.yaml", "data: d\n\nnum_workers: -4\n");
  EXPECT_EQ(std::string(LoadSpecFile(dir + "/bad.yaml").status().message()),
            dir + "/bad.yaml:3:14: num_workers must be >= 1, got -4");

  absl::Status missing = LoadSpecFile(dir + "/missing.yaml").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StartsWith(missing.message(), dir + "/missing.yaml: cannot open the spec"))
      << missing;

  EXPECT_EQ(std::string(LoadSpecFile(dir).status().message()),
            dir + ": is a directory, not a spec file");

  WriteFile(dir + "/huge.yaml", std::string((1 << 20) + 1, '#'));
  EXPECT_EQ(std::string(LoadSpecFile(dir + "/huge.yaml").status().message()),
            dir + "/huge.yaml: over 1 MiB, too large for a spec (the wrong file?)");
}

// README's op-list example (the ```yaml block starting with `stages:`, with its
// `batch_ops:`) is a spec that parses, so it cannot drift from the op names and arguments.
// An argument whose range depends on another is judged against the value written, not
// the other's default (torchvision accepts both of these).
TEST(SpecTest, OpArgumentsAreCheckedTogetherAsTorchvisionChecksThem) {
  for (const char* ops : {"[{resize: {size: 100, max_size: 200}}, {center_crop: {size: 64}}]",
                          "[{resize: {max_size: 200, size: 100}}, {center_crop: {size: 64}}]",
                          "[{rand_augment: {num_magnitude_bins: 100, magnitude: 50}}, "
                          "{center_crop: {size: 64}}]"}) {
    absl::StatusOr<PipelineOptions> o = ParseSpec(
        absl::StrCat("stages:\n  - type: transforms\n    ops: ", ops, "\n"), "", "t.yaml");
    EXPECT_TRUE(o.ok()) << ops << ": " << o.status();
  }
}

// compose, random_choice and random_order take an op list as `transforms`, written as
// the view's own list is; it comes out as the op text's [op(...); op(...)].
TEST(SpecTest, OpListsAsArgumentsParseIntoTheOpText) {
  absl::StatusOr<PipelineOptions> o = ParseSpec(
      "stages:\n  - type: transforms\n    ops:\n"
      "      - random_choice:\n"
      "          transforms: [random_horizontal_flip, {color_jitter: {brightness: 0.4}}]\n"
      "          weights: [1, 3]\n"
      "      - random_order: {transforms: [grayscale, {random_crop: {size: 8}}]}\n",
      "", "t.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->stages[0].args.at("ops"),
            "random_choice(transforms=[random_horizontal_flip(); color_jitter(brightness=0.4)], "
            "weights=[1, 3]); random_order(transforms=[grayscale(); random_crop(size=8)])");
}

// An item may be one op in the op text's one-line form, as docs/specs.md's detection
// and segmentation examples write them (they were refused as "unknown op
// 'random_resized_crop(size=320, scale=[0.3, 1.0])'"); a mistake in one is still one
// line at the item.
TEST(SpecTest, AnOpItemMayBeOneOpInTheOneLineForm) {
  absl::StatusOr<PipelineOptions> o = ParseSpec(
      "stages:\n  - type: transforms\n    ops:\n"
      "      - random_resized_crop(size=320, scale=[0.3, 1.0])\n"
      "      - random_choice(transforms=[random_invert(); grayscale()], weights=[1, 3])\n"
      "      - color_jitter(brightness=0.2)\n"
      "      - normalize()\n",
      "", "t.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->stages[0].args.at("ops"),
            "random_resized_crop(scale=[0.3, 1.0], size=320); "
            "random_choice(transforms=[random_invert(); grayscale()], weights=[1, 3]); "
            "color_jitter(brightness=0.2); normalize()");
  for (const auto& [item, want] : std::vector<std::pair<std::string, std::string>>{
           {"center_crop(sise=64)", "t.yaml:4:9: center_crop has no argument 'sise' (did you "
                                    "mean 'size'?)"},
           {"center_crop(size=64); normalize()",
            "t.yaml:4:9: an item is one op, got 2 (write each op as its own item)"},
           {"center_crop(size=-3)", "t.yaml:4:9: center_crop: size"}}) {
    absl::StatusOr<PipelineOptions> bad = ParseSpec(
        absl::StrCat("stages:\n  - type: transforms\n    ops:\n      - ", item, "\n"), "",
        "t.yaml");
    ASSERT_FALSE(bad.ok()) << item;
    EXPECT_TRUE(absl::StartsWith(bad.status().message(), want)) << bad.status();
  }
}

TEST(SpecTest, ReadmeOpListBlockParses) {
  std::ifstream in("README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t start = readme.find("```yaml\nstages:\n");
  ASSERT_NE(start, std::string::npos);
  const size_t body = start + std::string("```yaml\n").size();
  const std::string block = readme.substr(body, readme.find("```", body) - body);
  absl::StatusOr<PipelineOptions> o = ParseSpec(block, "", "README.md");
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->stages.size(), 3u);
  EXPECT_TRUE(absl::StrContains(o->stages[2].args.at("ops"), "trivial_augment_wide()"));
  ASSERT_EQ(o->batch_ops.size(), 1u);  // And its batch op.
  EXPECT_EQ(o->batch_ops[0].type, "mixup_cutmix");
  EXPECT_EQ(o->batch_ops[0].args.at("mixup_alpha"), "0.2");
}

TEST(SpecTest, ExampleSpecsParse) {
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator("runtime/specs")) {
    SCOPED_TRACE(entry.path().string());
    absl::StatusOr<PipelineOptions> o = LoadSpecFile(entry.path().string());
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->data, "runtime/specs/../../.sample_data");
    ++parsed;
  }
  EXPECT_EQ(parsed, 7);

  // The recipes: one transforms item per view list, named after its view.
  const PipelineOptions dino = LoadSpecFile("runtime/specs/dino.yaml").value();
  ASSERT_EQ(dino.stages.size(), 5u);
  EXPECT_EQ(dino.stages[2].name, "transforms_global1");
  EXPECT_EQ(dino.stages[4].outputs.size(), 8u);
  EXPECT_TRUE(absl::StrContains(dino.stages[3].args.at("ops"), "random_solarize("));

  const PipelineOptions train = LoadSpecFile("runtime/specs/train.yaml").value();
  EXPECT_EQ(train.name, "train");
  EXPECT_TRUE(train.stages.empty());
  EXPECT_EQ(train.epochs, 2);
  EXPECT_DOUBLE_EQ(train.max_error_fraction, 0.05);

  const PipelineOptions custom = LoadSpecFile("runtime/specs/custom.yaml").value();
  ASSERT_EQ(custom.stages.size(), 3u);
  EXPECT_EQ(custom.stages[1].name, "jpeg_decode");
  EXPECT_EQ(custom.stages[2].args.at("mean"), "0.5,0.5,0.5");
  EXPECT_EQ(custom.on_error, ErrorPolicy::kFail);
  EXPECT_EQ(custom.max_errors, 0);
  EXPECT_FALSE(custom.pin_memory);

  const PipelineOptions views = LoadSpecFile("runtime/specs/views.yaml").value();
  ASSERT_EQ(views.stages.size(), 4u);
  EXPECT_EQ(views.stages[2].outputs, (std::vector<std::string>{"view0", "view1"}));
  EXPECT_EQ(views.stages[3].outputs, std::vector<std::string>{"small"});
}

TEST(SpecTest, StageItemsBindPortsToFieldsWithTheirLocations) {
  const PipelineOptions o = Parse(R"(
data: d
stages:
  - type: read
  - type: decode
    outputs: [pixels]
  - type: augment
    inputs: [pixels]
    outputs: [view0]
)");
  ASSERT_EQ(o.stages.size(), 3u);
  EXPECT_TRUE(o.stages[0].inputs.empty());
  EXPECT_EQ(o.stages[1].outputs, std::vector<std::string>{"pixels"});
  EXPECT_EQ(o.stages[1].outputs_where, std::vector<std::string>{"t.yaml:6:15"});
  EXPECT_EQ(o.stages[2].inputs, std::vector<std::string>{"pixels"});
  EXPECT_EQ(o.stages[2].inputs_where, std::vector<std::string>{"t.yaml:8:14"});
  EXPECT_EQ(o.stages[2].outputs, std::vector<std::string>{"view0"});
  // Written back (best.yaml) and read again to the same bindings.
  const PipelineOptions again = Parse(SpecYaml(o));
  EXPECT_EQ(again.stages[2].inputs, o.stages[2].inputs);
  EXPECT_EQ(again.stages[2].outputs, o.stages[2].outputs);
}

// `flowloader stages` prints the registry's Help: it must be a stages list a spec accepts,
// with every type and every option at its default.
TEST(SpecTest, StageHelpIsAStagesListTheParserAccepts) {
  const std::string help = StageRegistry::Global().Help();
  const std::string spec =
      "stages:\n" + absl::StrReplaceAll(help, {{"\n", "\n  "}}).insert(0, "  ");
  absl::StatusOr<PipelineOptions> o = ParseSpec(spec, "", "help");
  ASSERT_TRUE(o.ok()) << o.status() << "\n" << spec;
  // Every type once (in pipeline order, not the sorted order of Types()).
  std::vector<std::string> listed;
  for (const StageSpec& stage : o->stages) listed.push_back(stage.type);
  // The batch stage types follow as a commented `batch_ops:` list: uncommented, a
  // spec accepts that too.
  const size_t ops_at = help.find("# batch_ops:\n");
  ASSERT_NE(ops_at, std::string::npos) << help;
  std::string ops = "batch_ops:\n";
  for (absl::string_view line : absl::StrSplit(help.substr(ops_at + 13), '\n')) {
    if (!line.empty()) absl::StrAppend(&ops, line.substr(1), "\n");  // Drop the '#'.
  }
  absl::StatusOr<PipelineOptions> batch = ParseSpec(ops, "", "help");
  ASSERT_TRUE(batch.ok()) << batch.status() << "\n" << ops;
  for (const StageSpec& op : batch->batch_ops) listed.push_back(op.type);
  std::sort(listed.begin(), listed.end());
  ASSERT_EQ(listed, StageRegistry::Global().Types());
  std::vector<StageSpec> all = o->stages;
  all.insert(all.end(), batch->batch_ops.begin(), batch->batch_ops.end());
  for (const StageSpec& stage : all) {
    const StageSchema schema = StageRegistry::Global().Find(stage.type).value();
    ASSERT_EQ(stage.args.size(), schema.options.size()) << stage.type;
    for (const OptionSchema& option : schema.options) {
      EXPECT_EQ(stage.args.at(option.name), option.default_value) << option.name;
    }
  }
}

TEST(SpecTest, SourcesReadRelativeToTheSpecAndWriteBack) {
  absl::StatusOr<PipelineOptions> o = ParseSpec(
      "sources:\n  - {name: a, data: imgs/a, weight: 3}\n  - {name: b, data: /abs/b.txt}\n"
      "epoch_samples: 1000\n",
      "/srv/specs", "t.yaml");
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->sources.size(), 2u);
  EXPECT_EQ(o->sources[0].name, "a");
  EXPECT_EQ(o->sources[0].data, "/srv/specs/imgs/a");
  EXPECT_EQ(o->sources[0].weight, 3.0);
  EXPECT_EQ(o->sources[1].data, "/abs/b.txt");
  EXPECT_EQ(o->sources[1].weight, 1.0);
  EXPECT_EQ(o->epoch_samples, 1000);
  EXPECT_TRUE(o->data.empty());
  const PipelineOptions back = Parse(SpecYaml(*o));
  ASSERT_EQ(back.sources.size(), 2u);
  EXPECT_EQ(back.sources[0].data, "/srv/specs/imgs/a");
  EXPECT_EQ(back.sources[0].weight, 3.0);
  EXPECT_EQ(back.sources[1].name, "b");
  EXPECT_EQ(back.epoch_samples, 1000);
}

TEST(SpecTest, BadSourcesAreOneLocatedLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"sources: []", "t.yaml:1:10: sources must be a non-empty list of {name, data, weight}, got a list"},
      {"sources:\n  - {name: a, data: x, weight: 0}",
       "t.yaml:2:32: weight must be a number > 0, got '0'"},
      {"sources:\n  - {name: a, data: x}\n  - {name: a, data: y}",
       "t.yaml:3:5: two sources are named 'a' (names must be unique)"},
      {"sources:\n  - {name: a}", "t.yaml:2:5: a source needs a name and data "
                                 "({name: a, data: DIR, weight: 1})"},
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(std::string(ParseSpec(text, "", "t.yaml").status().message()), want) << text;
  }
}

}  // namespace
}  // namespace flowloader
