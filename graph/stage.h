// stage.h: the per-sample stage interface, its declared schema, and the stage registry.
//
// A pipeline is a list of per-sample stages (read → decode → augment by default, plus any
// user stage) followed by the fixed batch stages (collate, upload). Each stage type is
// registered once by name with a schema (DALI's DALI_SCHEMA idea): its options with types,
// defaults and docs. The spec parser, the CLI's help and argument validation all come from
// that one declaration; the graph builder only sees SampleStage objects.
//
// Thread-safety: a SampleStage's Process is called concurrently (up to the stage's
// concurrency) on different samples and must not mutate shared state without locking.
// The registry is thread-safe; register before building pipelines.
#ifndef FLOWLOADER_GRAPH_STAGE_H_
#define FLOWLOADER_GRAPH_STAGE_H_

#include <mutex>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/stage_stats.h"
#include "stages/augment/transform.h"
#include "stages/collate/batch.h"
#include "stages/core/memory_plan.h"
#include "stages/core/worker_memory.h"
#include "stages/core/rng.h"
#include "stages/decode/decoder.h"
#include "stages/detection/targets.h"
#include "stages/reader/dataset.h"
#include "stages/reader/env.h"

namespace flowloader {

// SampleContext is one sample's state as it moves through the per-sample stages. The
// graph owns a fixed pool of them (one per batch slot) and reuses them, so the byte and
// pixel buffers keep their capacity: no allocation per sample once warm.
struct SampleContext {
  // Identity, set before the first stage.
  int64_t epoch = 0;
  int64_t position = 0;  // Position in this rank's epoch order.
  int64_t index = 0;     // Dataset index.
  int slot = 0;          // Row in the batch.
  uint64_t seed = 0;
  // The key of the sample's random draws: its dataset index, or with repeated
  // augmentation the copy's position (Sampler::RngKey), so copies differ.
  uint64_t rng_key = 0;
  int copy = 0;  // Which copy of its sample this is (repeated augmentation); else 0.
  const SampleSource* source = nullptr;  // key and label.
  // The sample's entry when its dataset computes them (Dataset::SampleAt): `source`
  // then points here.
  SampleSource computed_source;
  std::string path;                      // Full path of the file.

  // One slot per batch tensor, in the plan's order (StageEnv::batch_tensors): the
  // sample's row in each of the batch buffer's per-tensor regions. Sized once per batch
  // slot when the graph is built, so there is no allocation per sample.
  struct OutputSlot {
    void* data = nullptr;
    size_t bytes = 0;
    // The image size written, for a padded batch (StageEnv::size_divisibility): the
    // stage wrote [C, height, width] (or [height, width, C]) at the slot's start.
    int height = 0;
    int width = 0;
  };
  std::vector<OutputSlot> outputs;
  // output is the batch slot of the sample's first batch tensor (outputs[0]), what a
  // stage of a one-tensor graph writes; output_bytes is its size.
  void* output() const { return outputs.empty() ? nullptr : outputs.front().data; }
  size_t output_bytes() const { return outputs.empty() ? 0 : outputs.front().bytes; }

  // Working data, filled by the built-in stages (read: bytes; decode: info, plan,
  // decoded; augment: writes its view of `outputs`).
  std::string bytes;
  decode::ImageInfo info;
  augment::CropPlan plan;  // View 0's crop (also plans[0] when views > 1).
  bool has_plan = false;
  // One crop per view when several augment branches read the decoded image (decode plans
  // them all from the header, so that it decodes once, the union of their boxes).
  std::vector<augment::CropPlan> plans;
  std::vector<uint8_t> planned;  // planned[v]: plans[v] was drawn for this sample.
  decode::DecodedImage decoded;
  // Detection targets (fields `boxes` and `masks`), written by the annotations stage and
  // moved by the ops; empty and untouched in a graph without them.
  detection::Targets targets;

  // The first error, if any; later stages are not run for a failed sample.
  absl::Status status;
  std::string failed_stage;

  // owner is the graph's batch record this sample belongs to (opaque to stages).
  void* owner = nullptr;

  // When the pipeline is traced, the graph sets these before each stage's Process so a
  // stage can record spans of its parts (its OpCosts() rows) inside its own span:
  // trace->Record(trace_stage, start, duration, index, row). Null when not traced.
  TraceBuffer* trace = nullptr;
  int32_t trace_stage = -1;

  // Rng returns this sample's random stream `stream` (deterministic in seed, epoch and
  // rng_key: the index, or the copy's position under repeated augmentation).
  SampleRng Rng(uint64_t stream) const { return SampleRng(seed, epoch, rng_key, stream); }
  const std::string& key() const { return source->key; }
};

// SampleStage processes one sample in place. A returned error is attached to the sample
// (with the stage name and sample key) and the error policy decides: skip or fail.
class SampleStage {
 public:
  virtual ~SampleStage() = default;
  virtual absl::Status Process(SampleContext& sample) const = 0;
  // BytesProduced is what the stage made for `sample` after a successful Process (for
  // the bytes metric): read counts file bytes, decode pixels, augment the output tensor.
  virtual size_t BytesProduced(const SampleContext& sample) const { return 0; }
  // OpCosts lists the parts of the stage's work it counts on its own (a transforms
  // stage's ops), with counters it updates while processing: the stage table, metrics
  // and trace show them under the stage. Called once, when the graph is built.
  virtual std::vector<OpCostRow> OpCosts() const { return {}; }
  // AnnounceWindow is how many samples past the end of each dispatched batch the stage
  // wants to hear of through Announce; 0 (the default) = none, Announce is never called.
  virtual int64_t AnnounceWindow() const { return 0; }
  // Announce says that the sample at (epoch, position), dataset index `index`, will come
  // to Process: called from one thread in sample order (across an epoch's end too), once
  // per sample, before it is dispatched. The read stage starts remote reads here; such a
  // sample may still never come (the run stops, drop_last, an earlier stage fails it).
  // `due_now`: the sample's batch is being dispatched at this moment (the run's first
  // batch, or one the window did not reach), so the consumer already waits for it.
  virtual void Announce(int64_t /*epoch*/, int64_t /*position*/, int64_t /*index*/,
                        bool /*due_now*/) const {}
};

enum class OptionType { kInt, kFloat, kBool, kString };

// OptionSchema declares one option of a stage type.
struct OptionSchema {
  std::string name;
  OptionType type = OptionType::kString;
  std::string default_value;  // As text; parsed like a given value.
  std::string doc;
  // The only accepted values (a string option's enumeration); empty = any of the type.
  std::vector<std::string> choices;
  // An int option's accepted range, checked before any factory narrows it (so 4294967299
  // is refused, never read as the int 3).
  int64_t min_int = std::numeric_limits<int64_t>::min();
  int64_t max_int = std::numeric_limits<int64_t>::max();
};

// FieldKind is what a per-sample field holds.
enum class FieldKind {
  kBytes,     // A file's bytes (SampleContext::bytes).
  kImage,     // Decoded pixels (SampleContext::decoded).
  kTensor,    // The sample's row of a batch tensor (SampleContext::outputs).
  kLabel,     // The class index (SampleContext::source->label).
  kMetadata,  // Identity: the key and the full path.
  kTargets,   // Detection targets (SampleContext::targets): boxes with their labels,
              // iscrowd, area and image_id; instance masks.
};

// FieldSchema names one per-sample field a stage reads or writes: a declared port. Today a
// field is one of SampleContext's members, by these names and kinds (SampleFields()):
//   key, path (metadata) and label (label): set by the source before the first stage;
//   bytes (bytes): read writes it; image (image): decode writes it;
//   output (tensor): the batch output, one per pipeline; augment writes it;
//   boxes and masks (targets): an image's detection targets (the `boxes` field carries
//   boxes, labels, iscrowd, area and image_id, one row per instance; `masks` the
//   instance masks); the annotations stage writes them, geometric ops move them.
struct FieldSchema {
  std::string name;
  FieldKind kind = FieldKind::kMetadata;
};

inline constexpr char kKeyField[] = "key";
inline constexpr char kPathField[] = "path";
inline constexpr char kLabelField[] = "label";
inline constexpr char kBytesField[] = "bytes";
inline constexpr char kImageField[] = "image";
inline constexpr char kOutputField[] = "output";
inline constexpr char kBoxesField[] = "boxes";
inline constexpr char kMasksField[] = "masks";

// SampleFields lists every field a stage may declare, with its kind, in flow order.
const std::vector<FieldSchema>& SampleFields();
// IsSourceField reports whether the source sets `name` before the first stage.
bool IsSourceField(const std::string& name);
// FieldKindName is "bytes", "image", "tensor", "label", "metadata" or "targets".
const char* FieldKindName(FieldKind kind);

// StageSchema declares a stage type: its name, what it does, its options, and the fields it
// reads and writes (checked when a pipeline is created: graph/stage_plan.h).
struct StageSchema {
  std::string type;
  std::string doc;
  std::vector<OptionSchema> options;
  // Parallel bodies: 0 means num_workers (CPU-heavy work), otherwise a fixed number.
  int default_concurrency = 0;
  // The fields the stage reads (each needs an earlier writer) and writes (each field has
  // one writer). A field in both lists is modified in place: it needs an earlier writer
  // and is not a second one. A stage declaring neither touches no field the graph checks
  // and may sit anywhere in the list. A stage that writes the batch output declares
  // `output` here and calls StageEnv::DeclareOutput in its factory. Register refuses a field that
  // is not one of SampleFields() with its kind.
  std::vector<FieldSchema> inputs;
  std::vector<FieldSchema> outputs;
  // Inputs whose buffers the stage frees once done (the built-ins recycle buffers: decode
  // frees bytes, augment the image). A field is freed after its last reader: the graph
  // lists in StageEnv::may_free the ones this stage may free (where no later stage reads
  // them, e.g. the first of two augment branches must keep the image); its factory checks.
  std::vector<std::string> frees;
  // The (single) tensor output port may be bound to several field names (`outputs: [a,
  // b]`): the stage then writes one independent view into each (augment does).
  bool output_repeats = false;
  // The names Help binds the outputs to (`outputs: [...]`), where the ports' own names
  // would clash with a built-in's: transforms writes `view1` beside augment's `output`,
  // so that Help's list, pasted as is, runs. Empty: the ports' own names.
  std::vector<std::string> help_outputs;
  // A batch stage (graph/batch_stage.h): runs once per collated batch, listed under a
  // spec's `batch_ops:`, registered with RegisterBatch and made by CreateBatch. Its
  // concurrency is 1 and it declares no per-sample fields.
  bool batch_stage = false;
  // What the stage's work is (stage_stats.h): the diagnosis reads a saturated storage
  // stage as the storage's limit, not the CPU's. Compute unless declared.
  StageKind kind = StageKind::kCompute;
};

// StageArgs are one stage instance's option values, validated against its schema.
class StageArgs {
 public:
  // Parse checks every given option exists and has the declared type; missing ones take
  // their default. Errors name the stage type and the option.
  static absl::StatusOr<StageArgs> Parse(const StageSchema& schema,
                                         const std::map<std::string, std::string>& given);

  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  // IsSet reports whether `name` was given explicitly (not defaulted).
  bool IsSet(const std::string& name) const { return explicit_.count(name) > 0; }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> explicit_;
};

// OutputSpec is the per-sample tensor a pipeline's stages write into each batch slot.
struct OutputSpec {
  std::vector<int64_t> sample_shape;  // [C, H, W] or [H, W, C].
  bool is_float = true;               // float32 when true, uint8 otherwise.
  size_t sample_bytes = 0;
  std::string name;                   // The batch tensor's field name (set by the graph).
  // The option the user sets the sample's size with, for the memory plan's refusals:
  // "five_crop size" for an op list's last op of a fixed size; empty is image_size.
  std::string size_knob;

  DType dtype() const { return is_float ? DType::kFloat32 : DType::kUint8; }
};

// ViewPlanner is one view's crop planner (augment's, or a transforms list's head),
// offered to the decode stage that writes the image it reads: `view` is the view's batch
// tensor index, and so its random stream (ViewStream). A null planner is a view that
// needs the whole image (an op list without a crop-and-resize head): decode then decodes
// everything, in RGB, and the planned views crop from that.
struct ViewPlanner {
  const augment::Transform* planner = nullptr;
  int view = 0;
  // The option that sets the planned crop's size (the decode scratch's refusal names
  // it): "random_resized_crop size" for an op list's head; empty is image_size.
  std::string size_knob;
};

// ViewStream is view `view`'s random stream: view 0 keeps stream 1, the stream a
// single-view pipeline always used (so its output is unchanged); others are 256 apart.
inline uint64_t ViewStream(int view) { return 1 + 256 * static_cast<uint64_t>(view); }

// StageEnv is what a stage factory may use. Factories run last stage first, so a stage
// can offer a service to the stages before it (augment offers its crop planner to decode
// and declares the output tensor).
// TargetsSpec is which detection targets a pipeline's samples bring to the batch
// (Batch::targets): set by the stage that writes them, read by the batch stages that
// move them (mosaic, copy_paste).
struct TargetsSpec {
  bool boxes = false;           // Instance targets: boxes, labels, iscrowd, area, image_id.
  bool instance_masks = false;  // With boxes: one mask plane per instance.
  int64_t max_instances = 0;    // The most instances one sample has (the memory plan's).
};

struct StageEnv {
  const Dataset* dataset = nullptr;
  Env* env = nullptr;  // File system.
  int num_workers = 1;
  // Set by augment: plans each sample's crop from its header, before decoding (view 0's
  // planner when several branches exist; decode uses view_planners).
  const augment::Transform* crop_planner = nullptr;
  // The stage being created: its ports' bound field names (StageSpec::inputs/outputs, or
  // the ports' own names), and the inputs it may free because no later stage reads them
  // (a field is freed after its last reader). Set by the graph before each factory.
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<std::string> may_free;
  // The target fields (boxes, masks) earlier stages write: the sample carries them here,
  // so a stage that moves pixels must move them too, or refuse (set by the graph).
  std::vector<std::string> carried;
  // Padded batches (GraphOptions::size_divisibility): -1 off (every image one size);
  // else a stage writing the batch tensor may make images of different sizes up to its
  // declared shape, and records each one's size in its OutputSlot.
  int size_divisibility = -1;
  // The instance targets the samples carry (set by the annotations stage's factory).
  TargetsSpec targets;
  // Every batch tensor field, in the plan's order (index = view = SampleContext::outputs).
  std::vector<std::string> batch_tensors;
  // DeclareOutput records the per-sample shape of tensor field `field` (in
  // declared_outputs) and returns its index among batch_tensors, or -1 when it is not a
  // batch tensor of this graph (outside a planned graph: `flowloader graph`'s shape query).
  // Required of the stage that writes a batch tensor (augment, or a user stage declaring
  // a tensor among its outputs).
  int DeclareOutput(const std::string& field, const OutputSpec& spec);
  // DeclareOutput(spec) declares the field the stage's first output port is bound to
  // (outputs.front(), or `output` outside a planned graph).
  int DeclareOutput(const OutputSpec& spec);
  // The declared tensors by field name.
  std::map<std::string, OutputSpec> declared_outputs;
  // Crop planners by the image field they read: decode plans every branch reading its
  // output so that it decodes once, the union of their boxes.
  std::map<std::string, std::vector<ViewPlanner>> view_planners;
  // What a stage keeps in memory besides the batch slots (a cache at its budget, per-worker
  // scratch), added by its factory: the graph checks the pipeline's memory plan, these
  // parts and the batch pool, against what the process may use before allocating the pool.
  std::vector<MemoryPart> memory;
  // What one worker may hold for one sample's images at run time, filled by the graph
  // once the plan is checked (0 until then: no limit). A stage whose image sizes only
  // the sample knows (a whole decode, an op list without a planned head) checks it
  // before it allocates, and skips the sample as decode_memory / op_memory.
  std::shared_ptr<WorkerMemory> worker_memory = std::make_shared<WorkerMemory>();
};

using StageFactory =
    std::function<absl::StatusOr<std::unique_ptr<SampleStage>>(const StageArgs&, StageEnv&)>;

// Batch stages (graph/batch_stage.h) share the registry.
class BatchStage;
struct BatchStageEnv;
using BatchStageFactory =
    std::function<absl::StatusOr<std::unique_ptr<BatchStage>>(const StageArgs&, BatchStageEnv&)>;

// FunctionStageOptions are a function stage's concurrency and declared fields (see
// StageSchema).
struct FunctionStageOptions {
  int concurrency = 0;
  std::vector<FieldSchema> inputs;
  std::vector<FieldSchema> outputs;
};

// StageRegistry maps stage type names to schemas and factories.
class StageRegistry {
 public:
  // Global is the process-wide registry, with the built-in stages already registered.
  static StageRegistry& Global();

  // Register adds a stage type; fails if the name is taken or the schema's defaults do
  // not parse.
  absl::Status Register(StageSchema schema, StageFactory factory);

  // RegisterFunction adds an option-less stage type running `fn` on every sample. It
  // declares no fields, so it may sit anywhere in a stage list; the overload taking
  // FunctionStageOptions declares what it reads and writes (e.g. `output` as both, for a
  // stage after augment that modifies the batch output in place).
  absl::Status RegisterFunction(const std::string& type, const std::string& doc,
                                std::function<absl::Status(SampleContext&)> fn,
                                int concurrency = 0);
  absl::Status RegisterFunction(const std::string& type, const std::string& doc,
                                std::function<absl::Status(SampleContext&)> fn,
                                FunctionStageOptions options);

  // Find returns the schema of `type`, or NotFound listing the known types.
  absl::StatusOr<StageSchema> Find(const std::string& type) const;

  // Create parses `given` against the schema of `type` and runs its factory.
  absl::StatusOr<std::unique_ptr<SampleStage>> Create(
      const std::string& type, const std::map<std::string, std::string>& given,
      StageEnv& env) const;

  // RegisterBatch adds a batch stage type (schema.batch_stage is set for it).
  absl::Status RegisterBatch(StageSchema schema, BatchStageFactory factory);
  // CreateBatch parses `given` against the schema of batch stage `type` and runs its
  // factory; a per-sample type is InvalidArgument (and Create refuses a batch type).
  absl::StatusOr<std::unique_ptr<BatchStage>> CreateBatch(
      const std::string& type, const std::map<std::string, std::string>& given,
      BatchStageEnv& env) const;

  // Types lists every registered type, sorted.
  std::vector<std::string> Types() const;
  // Help describes every stage type, its options and its fields (for the CLI and the spec
  // docs) as a YAML `stages:` list with every option at its default, so it can be pasted
  // into a spec. The list is in pipeline order, built-ins first (read, decode, augment),
  // then user types alphabetically: with the built-ins only, pasted as is, it runs.
  // Batch stage types follow, as a commented `batch_ops:` list.
  std::string Help() const;

 private:
  struct Entry {
    StageSchema schema;
    StageFactory factory;              // Per-sample types.
    BatchStageFactory batch_factory;  // Batch types (schema.batch_stage).
  };
  static void AppendBatchOpsHelp(const std::vector<const Entry*>& entries, std::string* out);
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// YamlScalar writes `text` as a YAML scalar, quoted unless it is plainly a word or a
// number, so that a YAML reader gives back the same text (Help, and specs written by
// `flowloader tune`).
std::string YamlScalar(const std::string& text);

// BuiltinStageOrder lists the built-in stage types in the order a pipeline runs them
// (read, decode, augment): Help's order, and the writer the stage-list check suggests.
const std::vector<std::string>& BuiltinStageOrder();

// RegisterBuiltinStages adds read, decode and augment (called by Global()).
void RegisterBuiltinStages(StageRegistry& registry);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_STAGE_H_
