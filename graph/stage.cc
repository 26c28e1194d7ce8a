#include "graph/stage.h"

#include "graph/batch_stage.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "stages/augment/ops/op.h"
#include "stages/core/bool_text.h"

namespace flowloader {
namespace {

const char* TypeName(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "int";
    case OptionType::kFloat:
      return "float";
    case OptionType::kBool:
      return "bool";
    case OptionType::kString:
      return "string";
  }
  return "?";
}

bool Valid(OptionType type, const std::string& text) {
  int64_t i;
  double d;
  bool b;
  switch (type) {
    case OptionType::kInt:
      return absl::SimpleAtoi(text, &i);
    case OptionType::kFloat:
      // Finite: "inf", "nan" and 1e309 (which reads as inf) made a read's retry wait for
      // ever (backoff_ms) and a mixing weight of inf.
      return absl::SimpleAtod(text, &d) && std::isfinite(d);
    case OptionType::kBool:
      return ParseBoolText(text, &b);
    case OptionType::kString:
      return true;
  }
  return false;
}

bool IsChoice(const OptionSchema& option, const std::string& text) {
  if (option.choices.empty()) return true;
  for (const std::string& c : option.choices) {
    if (c == text) return true;
  }
  return false;
}


// CheckFields refuses a declared field that SampleContext does not hold, under the kind it
// has there, and a freed field the stage does not read.
absl::Status CheckFields(const StageSchema& schema) {
  std::vector<const FieldSchema*> declared;
  for (const FieldSchema& f : schema.inputs) declared.push_back(&f);
  for (const FieldSchema& f : schema.outputs) declared.push_back(&f);
  for (const FieldSchema* f : declared) {
    const FieldSchema* known = nullptr;
    std::vector<std::string> names;
    for (const FieldSchema& k : SampleFields()) {
      if (k.name == f->name) known = &k;
      names.push_back(k.name);
    }
    if (known == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' declares field '", f->name,
          "', which a sample does not have (fields: ", absl::StrJoin(names, ", "), ")"));
    }
    if (known->kind != f->kind) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' declares field '", f->name, "' as ",
          FieldKindName(f->kind), ", but it holds ", FieldKindName(known->kind)));
    }
  }
  for (const std::string& freed : schema.frees) {
    bool read = false;
    for (const FieldSchema& f : schema.inputs) read = read || f.name == freed;
    if (!read) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' frees '", freed, "', which is not among its inputs"));
    }
  }
  return absl::OkStatus();
}

// FieldList is "bytes (bytes), output (tensor)" for Help's comments.
std::string FieldList(const std::vector<FieldSchema>& fields) {
  std::vector<std::string> parts;
  for (const FieldSchema& f : fields) {
    parts.push_back(absl::StrCat(f.name, " (", FieldKindName(f.kind), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

// FieldsComment is Help's line on what a stage type reads and writes.
std::string FieldsComment(const StageSchema& schema) {
  if (schema.inputs.empty() && schema.outputs.empty()) {
    return "  # fields: none declared (may sit anywhere in the list)\n";
  }
  std::string line = absl::StrCat("  # reads: ", schema.inputs.empty() ? "-" : FieldList(schema.inputs),
                                  "; writes: ",
                                  schema.outputs.empty() ? "-" : FieldList(schema.outputs));
  if (!schema.frees.empty()) absl::StrAppend(&line, "; frees: ", absl::StrJoin(schema.frees, ", "));
  return line + "\n";
}

// PipelineRank orders Help's list: the built-ins as a pipeline runs them, then the rest.
int PipelineRank(const std::string& type) {
  const std::vector<std::string>& order = BuiltinStageOrder();
  const auto it = std::find(order.begin(), order.end(), type);
  return static_cast<int>(it - order.begin());
}

// FunctionStage adapts a plain function to SampleStage.
class FunctionStage : public SampleStage {
 public:
  explicit FunctionStage(std::function<absl::Status(SampleContext&)> fn) : fn_(std::move(fn)) {}
  absl::Status Process(SampleContext& sample) const override { return fn_(sample); }

 private:
  std::function<absl::Status(SampleContext&)> fn_;
};

}  // namespace

std::string YamlScalar(const std::string& text) {
  bool plain = !text.empty();
  for (char c : text) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' &&
        c != ',' && c != '-' && c != '+') {
      plain = false;
    }
  }
  if (plain && absl::AsciiStrToLower(text) != "null") return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

const std::vector<FieldSchema>& SampleFields() {
  static const std::vector<FieldSchema>* fields = new std::vector<FieldSchema>{
      {kKeyField, FieldKind::kMetadata}, {kPathField, FieldKind::kMetadata},
      {kLabelField, FieldKind::kLabel},  {kBytesField, FieldKind::kBytes},
      {kImageField, FieldKind::kImage},  {kOutputField, FieldKind::kTensor},
      {kBoxesField, FieldKind::kTargets}, {kMasksField, FieldKind::kTargets}};
  return *fields;
}

bool IsSourceField(const std::string& name) {
  return name == kKeyField || name == kPathField || name == kLabelField;
}

const char* FieldKindName(FieldKind kind) {
  switch (kind) {
    case FieldKind::kBytes:
      return "bytes";
    case FieldKind::kImage:
      return "image";
    case FieldKind::kTensor:
      return "tensor";
    case FieldKind::kLabel:
      return "label";
    case FieldKind::kMetadata:
      return "metadata";
    case FieldKind::kTargets:
      return "targets";
  }
  return "?";
}

absl::StatusOr<StageArgs> StageArgs::Parse(const StageSchema& schema,
                                           const std::map<std::string, std::string>& given) {
  StageArgs args;
  for (const OptionSchema& o : schema.options) args.values_[o.name] = o.default_value;
  for (const auto& [name, value] : given) {
    const OptionSchema* option = nullptr;
    for (const OptionSchema& o : schema.options) {
      if (o.name == name) option = &o;
    }
    if (option == nullptr) {
      std::vector<std::string> known;
      for (const OptionSchema& o : schema.options) known.push_back(o.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' has no option '", name, "' (options: ",
          known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    if (!Valid(option->type, value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' option '", name, "' must be ",
          option->type == OptionType::kFloat ? "a finite number" : TypeName(option->type),
          ", got '", value, "'"));
    }
    if (int64_t v = 0; option->type == OptionType::kInt && absl::SimpleAtoi(value, &v) &&
                       (v < option->min_int || v > option->max_int)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' option '", name, "' must be an integer in [",
          option->min_int, ", ", option->max_int, "], got ", v));
    }
    if (!IsChoice(*option, value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stage '", schema.type, "' option '", name, "' must be one of ",
          absl::StrJoin(option->choices, ", "), ", got '", value, "'"));
    }
    args.values_[name] = value;
    args.explicit_[name] = true;
  }
  return args;
}

int64_t StageArgs::GetInt(const std::string& name) const {
  int64_t v = 0;
  (void)absl::SimpleAtoi(values_.at(name), &v);  // Validated by Parse.
  return v;
}

double StageArgs::GetFloat(const std::string& name) const {
  double v = 0;
  (void)absl::SimpleAtod(values_.at(name), &v);
  return v;
}

bool StageArgs::GetBool(const std::string& name) const {
  bool v = false;
  (void)ParseBoolText(values_.at(name), &v);
  return v;
}

const std::string& StageArgs::GetString(const std::string& name) const {
  return values_.at(name);
}

StageRegistry& StageRegistry::Global() {
  static StageRegistry* registry = [] {
    auto* r = new StageRegistry();
    RegisterBuiltinStages(*r);
    RegisterBuiltinBatchStages(*r);
    return r;
  }();
  return *registry;
}

absl::Status StageRegistry::Register(StageSchema schema, StageFactory factory) {
  if (schema.type.empty()) return absl::InvalidArgumentError("stage type name is empty");
  for (const OptionSchema& o : schema.options) {
    if (!Valid(o.type, o.default_value) || !IsChoice(o, o.default_value)) {
      return absl::InvalidArgumentError(absl::StrCat("stage '", schema.type, "' option '",
                                                     o.name, "' has an invalid default '",
                                                     o.default_value, "'"));
    }
  }
  if (absl::Status s = CheckFields(schema); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(schema.type) > 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("stage type '", schema.type, "' is already registered"));
  }
  std::string type = schema.type;
  entries_.emplace(std::move(type), Entry{std::move(schema), std::move(factory)});
  return absl::OkStatus();
}

absl::Status StageRegistry::RegisterFunction(const std::string& type, const std::string& doc,
                                             std::function<absl::Status(SampleContext&)> fn,
                                             int concurrency) {
  FunctionStageOptions options;
  options.concurrency = concurrency;
  return RegisterFunction(type, doc, std::move(fn), std::move(options));
}

absl::Status StageRegistry::RegisterFunction(const std::string& type, const std::string& doc,
                                             std::function<absl::Status(SampleContext&)> fn,
                                             FunctionStageOptions options) {
  StageSchema schema;
  schema.type = type;
  schema.doc = doc;
  schema.default_concurrency = options.concurrency;
  schema.inputs = std::move(options.inputs);
  schema.outputs = std::move(options.outputs);
  return Register(std::move(schema),
                  [fn = std::move(fn)](const StageArgs&, StageEnv&)
                      -> absl::StatusOr<std::unique_ptr<SampleStage>> {
                    return std::unique_ptr<SampleStage>(new FunctionStage(fn));
                  });
}

absl::StatusOr<StageSchema> StageRegistry::Find(const std::string& type) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(type);
  if (it == entries_.end()) {
    std::vector<std::string> known;
    for (const auto& [name, entry] : entries_) known.push_back(name);
    return absl::NotFoundError(absl::StrCat("unknown stage type '", type,
                                            "' (known: ", absl::StrJoin(known, ", "), ")"));
  }
  return it->second.schema;
}

absl::StatusOr<std::unique_ptr<SampleStage>> StageRegistry::Create(
    const std::string& type, const std::map<std::string, std::string>& given,
    StageEnv& env) const {
  StageFactory factory;
  StageSchema schema;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(type);
    if (it == entries_.end()) return Find(type).status();
    schema = it->second.schema;
    factory = it->second.factory;
  }
  if (schema.batch_stage) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", type, "' is a batch stage: list it under batch_ops:, not stages:"));
  }
  absl::StatusOr<StageArgs> args = StageArgs::Parse(schema, given);
  if (!args.ok()) return args.status();
  return factory(*args, env);
}

absl::Status StageRegistry::RegisterBatch(StageSchema schema, BatchStageFactory factory) {
  schema.batch_stage = true;
  schema.default_concurrency = 1;
  if (!schema.inputs.empty() || !schema.outputs.empty() || !schema.frees.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch stage '", schema.type, "' declares per-sample fields; it sees the whole batch"));
  }
  const std::string type = schema.type;
  if (absl::Status s = Register(std::move(schema), nullptr); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  entries_.at(type).batch_factory = std::move(factory);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BatchStage>> StageRegistry::CreateBatch(
    const std::string& type, const std::map<std::string, std::string>& given,
    BatchStageEnv& env) const {
  BatchStageFactory factory;
  StageSchema schema;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(type);
    if (it == entries_.end()) return Find(type).status();
    schema = it->second.schema;
    factory = it->second.batch_factory;
  }
  if (!schema.batch_stage) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", type, "' is a per-sample stage: list it under stages:, not batch_ops:"));
  }
  absl::StatusOr<StageArgs> args = StageArgs::Parse(schema, given);
  if (!args.ok()) return args.status();
  return factory(*args, env);
}

std::vector<std::string> StageRegistry::Types() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> types;
  for (const auto& [name, entry] : entries_) types.push_back(name);
  return types;
}

// AppendBatchOpsHelp lists the batch stage types as a commented `batch_ops:` list (a
// spec's key beside `stages:`), so that Help pasted as is still runs the built-ins only.
void StageRegistry::AppendBatchOpsHelp(const std::vector<const Entry*>& entries,
                                       std::string* out) {
  bool any = false;
  for (const Entry* entry : entries) {
    const StageSchema& schema = entry->schema;
    if (!schema.batch_stage) continue;
    if (!any) {
      absl::StrAppend(out,
                      "# Batch stages, for a spec's `batch_ops:` list (a top-level key): each "
                      "runs once per\n# collated batch, in list order, serially, after the "
                      "per-sample stages and before upload.\n# batch_ops:\n");
      any = true;
    }
    absl::StrAppend(out, "# - type: ", schema.type, "\n#   # ", schema.doc, "\n");
    absl::StrAppend(out, "#   options:\n");
    for (const OptionSchema& o : schema.options) {
      std::string kind = TypeName(o.type);
      if (!o.choices.empty()) absl::StrAppend(&kind, ", one of ", absl::StrJoin(o.choices, "|"));
      std::string line = absl::StrCat("#     ", o.name, ": ", YamlScalar(o.default_value));
      line.resize(std::max<size_t>(line.size() + 2, 34), ' ');
      absl::StrAppend(out, line, "# ", kind, ": ", o.doc, "\n");
    }
  }
}

std::string StageRegistry::Help() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# Stage types for the `stages:` list of a pipeline spec (flowloader run --spec=FILE),\n"
      "# each with every option at its default. An item is {type, name, concurrency,\n"
      "# options}: name (the `stage` label in metrics) defaults to the type, concurrency 0\n"
      "# means the type's default, and options left out keep the default shown. Stages run\n"
      "# in list order, so this list is in pipeline order: the built-ins (read, decode,\n"
      "# augment) as they run, then other types alphabetically (move each to where what it\n"
      "# reads is written). Each stage reads fields an earlier one writes; a field has one\n"
      "# writer, and one stage must write the batch output (`output`). An item may also\n"
      "# bind its fields to other names, one per field in the order shown:\n"
      "# `inputs: [pixels]`, `outputs: [view0]` (`flowloader graph --spec=FILE` shows\n"
      "# the planned graph). transforms is augment's op-list form (its ops are listed\n"
      "# after the stages); here it writes a second view, `view1`.\n";
  std::vector<const Entry*> ordered;
  for (const auto& [name, entry] : entries_) ordered.push_back(&entry);
  // Stable: the map's alphabetical order stays within a rank.
  std::stable_sort(ordered.begin(), ordered.end(), [](const Entry* a, const Entry* b) {
    return PipelineRank(a->schema.type) < PipelineRank(b->schema.type);
  });
  for (const Entry* entry : ordered) {
    const StageSchema& schema = entry->schema;
    if (schema.batch_stage) continue;  // Listed below, under batch_ops:.
    absl::StrAppend(&out, "- type: ", schema.type, "\n  # ", schema.doc, "\n",
                    FieldsComment(schema));
    if (!schema.help_outputs.empty()) {
      absl::StrAppend(&out, "  outputs: [", absl::StrJoin(schema.help_outputs, ", "),
                      "]  # its own batch tensor\n");
    }
    absl::StrAppend(&out, "  concurrency: ", schema.default_concurrency, "  # ",
                    schema.default_concurrency == 0 ? "0 = num_workers"
                                                    : "fixed parallel bodies",
                    "\n");
    if (schema.options.empty()) {
      absl::StrAppend(&out, "  options: {}  # none\n");
      continue;
    }
    absl::StrAppend(&out, "  options:\n");
    for (const OptionSchema& o : schema.options) {
      std::string kind = TypeName(o.type);
      if (!o.choices.empty()) absl::StrAppend(&kind, ", one of ", absl::StrJoin(o.choices, "|"));
      std::string line = absl::StrCat("    ", o.name, ": ", YamlScalar(o.default_value));
      line.resize(std::max<size_t>(line.size() + 2, 32), ' ');  // Comments in one column.
      absl::StrAppend(&out, line, "# ", kind, ": ", o.doc, "\n");
    }
  }
  absl::StrAppend(&out,
                  "# Ops for a transforms stage's `ops:` list (torchvision's transforms by "
                  "their\n# snake_case names), each with every argument at its default:\n",
                  augment::OpRegistry::Global().Help());
  AppendBatchOpsHelp(ordered, &out);
  return out;
}

const std::vector<std::string>& BuiltinStageOrder() {
  static const std::vector<std::string>* const order =
      new std::vector<std::string>{"read", "decode", "augment"};
  return *order;
}

int StageEnv::DeclareOutput(const std::string& field, const OutputSpec& spec) {
  OutputSpec named = spec;
  named.name = field;
  declared_outputs[field] = named;
  for (size_t i = 0; i < batch_tensors.size(); ++i) {
    if (batch_tensors[i] == field) return static_cast<int>(i);
  }
  return -1;
}

int StageEnv::DeclareOutput(const OutputSpec& spec) {
  return DeclareOutput(outputs.empty() ? std::string(kOutputField) : outputs.front(), spec);
}

}  // namespace flowloader
