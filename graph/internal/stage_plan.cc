#include "graph/stage_plan.h"

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flowloader {
namespace graph_internal {
namespace {

// BoundStage is one stage of the list with its ports bound to field names.
struct BoundStage {
  const StageSpec* spec = nullptr;
  StageSchema schema;
  std::vector<std::string> inputs;   // Parallel to schema.inputs.
  std::vector<std::string> outputs;  // Parallel to schema.outputs.
  std::vector<std::string> frees;    // Bound names of the freed inputs.
};

// FieldState is what the walk knows of one field at the current stage.
struct FieldState {
  std::string writer;    // Label of the stage that wrote it, or "the source".
  FieldKind kind = FieldKind::kMetadata;
};

std::string NameOf(const StageSpec& spec) { return spec.name.empty() ? spec.type : spec.name; }

// Label names a stage in messages: 'jpeg_decode' (decode), or 'decode' when unnamed.
std::string Label(const StageSpec& spec) {
  const std::string name = NameOf(spec);
  if (name == spec.type) return absl::StrCat("'", name, "'");
  return absl::StrCat("'", name, "' (", spec.type, ")");
}

absl::Status RefuseAt(const std::string& where, const std::string& message) {
  if (where.empty()) return absl::InvalidArgumentError(message);
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

absl::Status Refuse(const StageSpec& stage, const std::string& message) {
  return RefuseAt(stage.where, message);
}

// InputWhere / OutputWhere: where port `i`'s binding was written, else the stage's item.
std::string InputWhere(const StageSpec& stage, size_t i) {
  return i < stage.inputs_where.size() && !stage.inputs_where[i].empty() ? stage.inputs_where[i]
                                                                          : stage.where;
}
std::string OutputWhere(const StageSpec& stage, size_t i) {
  return i < stage.outputs_where.size() && !stage.outputs_where[i].empty()
             ? stage.outputs_where[i]
             : stage.where;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names) {
    if (n == name) return true;
  }
  return false;
}

bool Declares(const std::vector<FieldSchema>& fields, const std::string& name) {
  for (const FieldSchema& f : fields) {
    if (f.name == name) return true;
  }
  return false;
}

std::string PortList(const std::vector<FieldSchema>& ports) {
  std::vector<std::string> names;
  for (const FieldSchema& p : ports) names.push_back(p.name);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

// Bind maps a stage's ports to the names its item gives (`which` is "inputs" or
// "outputs"), one name per port; none given keeps the ports' own names.
absl::StatusOr<std::vector<std::string>> Bind(const StageSpec& stage,
                                              const std::vector<FieldSchema>& ports,
                                              const std::vector<std::string>& given,
                                              const char* which, bool repeats = false) {
  std::vector<std::string> bound;
  if (given.empty()) {
    for (const FieldSchema& p : ports) bound.push_back(p.name);
    return bound;
  }
  // A repeating port (augment's views) takes the names left after the other ports.
  const bool fits = given.size() == ports.size() ||
                    (repeats && !ports.empty() && given.size() > ports.size());
  if (!fits) {
    return Refuse(stage, absl::StrCat("stage ", Label(stage), " has ", ports.size(), " ", which,
                                      " (", PortList(ports), "), but `", which, ": [",
                                      absl::StrJoin(given, ", "), "]` names ", given.size(),
                                      ": give one field name per port"));
  }
  return given;
}

absl::StatusOr<BoundStage> BindStage(const StageSpec& spec, const StageRegistry& registry) {
  BoundStage stage;
  stage.spec = &spec;
  absl::StatusOr<StageSchema> schema = registry.Find(spec.type);
  if (!schema.ok()) return schema.status();
  stage.schema = *std::move(schema);
  // A stage's own options before the list's fields: the item's mistake is the nearer one.
  if (absl::StatusOr<StageArgs> args = StageArgs::Parse(stage.schema, spec.args); !args.ok()) {
    return Refuse(spec, std::string(args.status().message()));
  }
  absl::StatusOr<std::vector<std::string>> inputs =
      Bind(spec, stage.schema.inputs, spec.inputs, "inputs");
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<std::vector<std::string>> outputs =
      Bind(spec, stage.schema.outputs, spec.outputs, "outputs", stage.schema.output_repeats);
  if (!outputs.ok()) return outputs.status();
  stage.inputs = *std::move(inputs);
  stage.outputs = *std::move(outputs);
  // Each extra view is one more port of the repeated (last) output's kind.
  while (stage.schema.outputs.size() < stage.outputs.size()) {
    stage.schema.outputs.push_back(stage.schema.outputs.back());
  }
  for (const std::string& port : stage.schema.frees) {
    for (size_t i = 0; i < stage.schema.inputs.size(); ++i) {
      if (stage.schema.inputs[i].name == port) stage.frees.push_back(stage.inputs[i]);
    }
  }
  return stage;
}

// WritesNew reports whether output `i` of `stage` is a new field (not modified in place).
bool WritesNew(const BoundStage& stage, size_t i) {
  return !Contains(stage.inputs, stage.outputs[i]);
}

// WriterOf is a registered type that writes `field` (a built-in first, in pipeline
// order: the fix suggested for a stage that reads it too early), or "".
std::string WriterOf(const std::string& field, const StageRegistry& registry) {
  std::vector<std::string> types = BuiltinStageOrder();
  for (const std::string& t : registry.Types()) types.push_back(t);
  for (const std::string& type : types) {
    absl::StatusOr<StageSchema> schema = registry.Find(type);
    if (schema.ok() && Declares(schema->outputs, field) && !Declares(schema->inputs, field)) {
      return type;
    }
  }
  return "";
}

// AStage is "a 'read' stage" or "an 'augment' stage".
std::string AStage(const std::string& type) {
  const bool vowel = absl::StrContains("aeiou", type.substr(0, 1));
  return absl::StrCat(vowel ? "an '" : "a '", type, "' stage");
}

std::string FieldName(const std::string& field, FieldKind kind) {
  if (kind == FieldKind::kTensor) return absl::StrCat("the batch tensor '", field, "'");
  return absl::StrCat("'", field, "'");
}

// Planner walks the bound stages in list order.
class Planner {
 public:
  Planner(std::vector<BoundStage> stages, const StageRegistry& registry)
      : stages_(std::move(stages)), registry_(registry) {
    for (size_t i = 0; i < stages_.size(); ++i) {
      for (size_t j = 0; j < stages_[i].outputs.size(); ++j) {
        if (WritesNew(stages_[i], j)) producers_.emplace(stages_[i].outputs[j], i);
      }
      for (const std::string& input : stages_[i].inputs) last_reader_[input] = i;
    }
  }

  absl::StatusOr<StagePlan> Plan();

 private:
  absl::Status CheckOutputs(size_t i) const;
  absl::Status CheckInputs(size_t i) const;
  absl::Status RefuseUnwritten(size_t i, size_t port) const;
  bool FindPath(size_t from, size_t to, std::set<size_t>& seen,
                std::vector<std::string>& path) const;
  void Record(size_t i, StagePlan& plan);
  std::string Written(FieldKind kind) const;

  std::vector<BoundStage> stages_;
  const StageRegistry& registry_;
  std::map<std::string, size_t> producers_;  // First writer in the whole list, by field.
  std::map<std::string, FieldState> fields_;  // Written so far, by name.
  std::map<std::string, size_t> field_index_;  // Into StagePlan::fields.
  std::map<std::string, size_t> last_reader_;  // The last stage reading each field.
};

absl::Status Planner::CheckOutputs(size_t i) const {
  const BoundStage& stage = stages_[i];
  const StageSpec& spec = *stage.spec;
  for (size_t j = 0; j < stage.outputs.size(); ++j) {
    // Read and written: modified in place, after the writer the inputs check found.
    if (!WritesNew(stage, j)) continue;
    const std::string& name = stage.outputs[j];
    const FieldKind kind = stage.schema.outputs[j].kind;
    for (size_t k = 0; k < j; ++k) {
      if (stage.outputs[k] == name) {
        return RefuseAt(OutputWhere(spec, j),
                        absl::StrCat("stage ", Label(spec), " writes ", FieldName(name, kind),
                                     " twice: give each of its outputs its own name"));
      }
    }
    auto it = fields_.find(name);
    if (it != fields_.end() && kind == FieldKind::kTensor) {
      return RefuseAt(OutputWhere(spec, j),
                      absl::StrCat("stages ", it->second.writer, " and ", Label(spec),
                                   " both write ", FieldName(name, kind),
                                   ": each batch tensor has one writer; bind one of them to "
                                   "another name (`outputs: [", name, "_2]`)"));
    }
    if (it != fields_.end()) {
      return RefuseAt(OutputWhere(spec, j),
                      absl::StrCat("stages ", it->second.writer, " and ", Label(spec),
                                   " both write ", FieldName(name, kind),
                                   ": a field has one writer; remove one, or declare it as an "
                                   "input of the second too to modify it in place"));
    }
    // A sample holds one bytes and one image field (SampleContext's bytes and decoded
    // image), so a second name of such a kind cannot run yet. Tensors are batch slots:
    // each tensor field gets its own region of the batch buffer.
    if (kind == FieldKind::kBytes || kind == FieldKind::kImage) {
      for (const auto& [other, state] : fields_) {
        if (state.kind != kind) continue;
        return RefuseAt(
            OutputWhere(spec, j),
            absl::StrCat("stage ", Label(spec), " writes ", FieldName(name, kind), " and stage ",
                         state.writer, " writes ", FieldName(other, kind), ": a sample holds one ",
                         FieldKindName(kind), " field today; keep one of them"));
      }
    }
  }
  return absl::OkStatus();
}

std::string Planner::Written(FieldKind kind) const {
  std::vector<std::string> names;
  for (const auto& [name, state] : fields_) {
    if (state.kind == kind) names.push_back(name);
  }
  if (names.empty()) {
    return absl::StrCat("no ", FieldKindName(kind), " field is written before it");
  }
  return absl::StrCat(FieldKindName(kind), " fields written before it: ",
                      absl::StrJoin(names, ", "));
}

// FindPath looks for a chain of fields from stage `from`'s inputs back to stage `to`,
// appending "'stage' → 'field'" steps to `path` on success.
bool Planner::FindPath(size_t from, size_t to, std::set<size_t>& seen,
                       std::vector<std::string>& path) const {
  if (!seen.insert(from).second) return false;
  for (const std::string& input : stages_[from].inputs) {
    auto it = producers_.find(input);
    if (it == producers_.end()) continue;
    if (it->second == to || FindPath(it->second, to, seen, path)) {
      path.push_back(absl::StrCat("'", input, "' → '", NameOf(*stages_[from].spec), "'"));
      return true;
    }
  }
  return false;
}

absl::Status Planner::RefuseUnwritten(size_t i, size_t port) const {
  const BoundStage& stage = stages_[i];
  const StageSpec& spec = *stage.spec;
  const std::string& name = stage.inputs[port];
  const FieldKind kind = stage.schema.inputs[port].kind;
  const std::string reads = absl::StrCat("stage ", Label(spec), " reads ", FieldName(name, kind));
  auto later = producers_.find(name);
  if (later != producers_.end()) {
    std::set<size_t> seen;
    std::vector<std::string> path;
    if (FindPath(later->second, i, seen, path)) {
      return RefuseAt(InputWhere(spec, port),
                      absl::StrCat(reads, ", written by ", Label(*stages_[later->second].spec),
                                   ", which depends on it: a cycle ('", NameOf(spec), "' → ",
                                   absl::StrJoin(path.rbegin(), path.rend(), " → "), " → '",
                                   name, "' → '", NameOf(spec),
                                   "'); a field must be written before it is read"));
    }
  }
  const std::string writer = WriterOf(name, registry_);
  if (later == producers_.end() && writer.empty()) {
    return RefuseAt(InputWhere(spec, port),
                    absl::StrCat(reads, ", which no stage writes (", Written(kind),
                                 "): bind its input '", stage.schema.inputs[port].name,
                                 "' to one of those"));
  }
  const std::string fix = !writer.empty()
                              ? AStage(writer)
                              : absl::StrCat("stage ", Label(*stages_[later->second].spec));
  return RefuseAt(InputWhere(spec, port),
                  absl::StrCat(reads, ", which no earlier stage writes: put ", fix, " before it"));
}

absl::Status Planner::CheckInputs(size_t i) const {
  const BoundStage& stage = stages_[i];
  const StageSpec& spec = *stage.spec;
  for (size_t port = 0; port < stage.inputs.size(); ++port) {
    const std::string& name = stage.inputs[port];
    const FieldKind kind = stage.schema.inputs[port].kind;
    auto it = fields_.find(name);
    if (it == fields_.end()) return RefuseUnwritten(i, port);
    if (it->second.kind != kind) {
      return RefuseAt(InputWhere(spec, port),
                      absl::StrCat("stage ", Label(spec), " input '",
                                   stage.schema.inputs[port].name, "' needs a field of kind ",
                                   FieldKindName(kind), ", but '", name, "' (written by ",
                                   it->second.writer, ") is ", FieldKindName(it->second.kind),
                                   " (", Written(kind), ")"));
    }
  }
  return absl::OkStatus();
}

void Planner::Record(size_t i, StagePlan& plan) {
  const BoundStage& stage = stages_[i];
  StagePorts planned{NameOf(*stage.spec), stage.spec->type, {}, {}, {}};
  for (size_t port = 0; port < stage.inputs.size(); ++port) {
    planned.inputs.push_back({stage.inputs[port], stage.schema.inputs[port].kind});
    plan.fields[field_index_.at(stage.inputs[port])].readers.push_back(static_cast<int>(i));
  }
  for (size_t j = 0; j < stage.outputs.size(); ++j) {
    const FieldKind kind = stage.schema.outputs[j].kind;
    planned.outputs.push_back({stage.outputs[j], kind});
    if (!WritesNew(stage, j)) continue;
    fields_[stage.outputs[j]] = FieldState{Label(*stage.spec), kind};
    field_index_[stage.outputs[j]] = plan.fields.size();
    plan.fields.push_back(FieldFlow{stage.outputs[j], kind, static_cast<int>(i), {},
                                       kind == FieldKind::kTensor});
    if (kind == FieldKind::kTensor) plan.batch_tensors.push_back(stage.outputs[j]);
  }
  // A field is freed after its last reader: a stage declaring `frees` frees only what no
  // later stage reads (two augment branches share one decoded image).
  for (const std::string& freed : stage.frees) {
    if (last_reader_.at(freed) == i) planned.frees.push_back(freed);
  }
  plan.stages.push_back(std::move(planned));
}

absl::StatusOr<StagePlan> Planner::Plan() {
  StagePlan plan;
  for (const FieldSchema& f : SampleFields()) {
    if (!IsSourceField(f.name)) continue;
    fields_[f.name] = FieldState{"the source", f.kind};
    field_index_[f.name] = plan.fields.size();
    plan.fields.push_back(FieldFlow{f.name, f.kind, -1, {}, false});
  }
  for (size_t i = 0; i < stages_.size(); ++i) {
    // Writers first: of two augments, the second's real fault is the second batch tensor,
    // not that the first freed the image.
    if (absl::Status s = CheckOutputs(i); !s.ok()) return s;
    if (absl::Status s = CheckInputs(i); !s.ok()) return s;
    Record(i, plan);
  }
  if (plan.batch_tensors.empty()) {
    std::vector<std::string> names;
    for (const BoundStage& stage : stages_) names.push_back(NameOf(*stage.spec));
    const std::string writer = WriterOf(kOutputField, registry_);
    return absl::InvalidArgumentError(absl::StrCat(
        "no stage of [", absl::StrJoin(names, ", "), "] writes ",
        FieldName(kOutputField, FieldKind::kTensor),
        ", so no batch can be made: end the list with a stage that writes it",
        writer.empty() ? "" : absl::StrCat(" ('", writer, "' does)")));
  }
  return plan;
}

}  // namespace
}  // namespace graph_internal

absl::StatusOr<StagePlan> PlanStages(const std::vector<StageSpec>& stages,
                                     const StageRegistry& registry) {
  std::vector<graph_internal::BoundStage> bound;
  // Bound in list order: the first item with a bad type, option or binding is refused.
  for (const StageSpec& spec : stages) {
    absl::StatusOr<graph_internal::BoundStage> stage = graph_internal::BindStage(spec, registry);
    if (!stage.ok()) return stage.status();
    bound.push_back(*std::move(stage));
  }
  return graph_internal::Planner(std::move(bound), registry).Plan();
}

absl::Status CheckStagePlan(const std::vector<StageSpec>& stages, const StageRegistry& registry) {
  return PlanStages(stages, registry).status();
}

}  // namespace flowloader
