#include "graph/internal/stage_plan.h"

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flowloader {
namespace graph_internal {
namespace {

// The built-in types in the order a pipeline runs them: the first one writing a field is
// the fix suggested for a stage that reads it too early.
constexpr const char* kBuiltinOrder[] = {"read", "decode", "augment"};

// FieldState is what the walk knows of one field at the current stage.
struct FieldState {
  std::string writer;    // Label of the stage that wrote it, or "the source".
  std::string freed_by;  // Label of the stage that freed it; empty while readable.
};

std::string NameOf(const StageSpec& spec) { return spec.name.empty() ? spec.type : spec.name; }

// Label names a stage in messages: 'jpeg_decode' (decode), or 'decode' when unnamed.
std::string Label(const StageSpec& spec) {
  const std::string name = NameOf(spec);
  if (name == spec.type) return absl::StrCat("'", name, "'");
  return absl::StrCat("'", name, "' (", spec.type, ")");
}

absl::Status Refuse(const StageSpec& stage, const std::string& message) {
  if (stage.where.empty()) return absl::InvalidArgumentError(message);
  return absl::InvalidArgumentError(absl::StrCat(stage.where, ": ", message));
}

bool Declares(const std::vector<FieldSchema>& fields, const std::string& name) {
  for (const FieldSchema& f : fields) {
    if (f.name == name) return true;
  }
  return false;
}

// WriterOf is a registered type that writes `field` (a built-in first), or "".
std::string WriterOf(const std::string& field, const StageRegistry& registry) {
  std::vector<std::string> types(std::begin(kBuiltinOrder), std::end(kBuiltinOrder));
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

std::string FieldName(const std::string& field) {
  if (field == kOutputField) return absl::StrCat("the batch tensor '", field, "'");
  return absl::StrCat("'", field, "'");
}

absl::Status CheckInputs(const StageSpec& stage, const StageSchema& schema,
                         const std::map<std::string, FieldState>& fields,
                         const StageRegistry& registry) {
  for (const FieldSchema& input : schema.inputs) {
    auto it = fields.find(input.name);
    if (it == fields.end()) {
      const std::string writer = WriterOf(input.name, registry);
      return Refuse(stage, absl::StrCat("stage ", Label(stage), " reads ", FieldName(input.name),
                                        ", which no earlier stage writes: put ",
                                        writer.empty() ? "a stage that writes it" : AStage(writer),
                                        " before it"));
    }
    if (!it->second.freed_by.empty()) {
      return Refuse(stage, absl::StrCat("stage ", Label(stage), " reads ", FieldName(input.name),
                                        ", which stage ", it->second.freed_by,
                                        " frees before it: put ", Label(stage), " before ",
                                        it->second.freed_by));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOutputs(const StageSpec& stage, const StageSchema& schema,
                          const std::map<std::string, FieldState>& fields) {
  for (const FieldSchema& output : schema.outputs) {
    // Read and written: modified in place, after the writer the inputs check found.
    if (Declares(schema.inputs, output.name)) continue;
    auto it = fields.find(output.name);
    if (it == fields.end()) continue;
    if (output.name == kOutputField) {
      return Refuse(stage, absl::StrCat("stages ", it->second.writer, " and ", Label(stage),
                                        " both write ", FieldName(output.name),
                                        ": a pipeline has one batch output today; keep one "
                                        "of them"));
    }
    return Refuse(stage, absl::StrCat("stages ", it->second.writer, " and ", Label(stage),
                                      " both write ", FieldName(output.name),
                                      ": a field has one writer; remove one, or declare it as "
                                      "an input of the second too to modify it in place"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStagePlan(const std::vector<StageSpec>& stages, const StageRegistry& registry) {
  std::map<std::string, FieldState> fields;  // Written so far, by name.
  for (const FieldSchema& f : SampleFields()) {
    if (IsSourceField(f.name)) fields[f.name].writer = "the source";
  }
  std::vector<std::string> names;
  for (const StageSpec& stage : stages) {
    absl::StatusOr<StageSchema> schema = registry.Find(stage.type);
    if (!schema.ok()) return schema.status();
    // A stage's own options before the list's fields: the item's mistake is the nearer one.
    if (absl::StatusOr<StageArgs> args = StageArgs::Parse(*schema, stage.args); !args.ok()) {
      return Refuse(stage, std::string(args.status().message()));
    }
    // Writers first: of two augments, the second's real fault is the second batch tensor,
    // not that the first freed the image.
    if (absl::Status s = CheckOutputs(stage, *schema, fields); !s.ok()) return s;
    if (absl::Status s = CheckInputs(stage, *schema, fields, registry); !s.ok()) return s;
    for (const FieldSchema& output : schema->outputs) {
      if (!Declares(schema->inputs, output.name)) fields[output.name].writer = Label(stage);
    }
    for (const std::string& freed : schema->frees) fields[freed].freed_by = Label(stage);
    names.push_back(NameOf(stage));
  }
  if (fields.count(kOutputField) == 0) {
    const std::string writer = WriterOf(kOutputField, registry);
    return absl::InvalidArgumentError(absl::StrCat(
        "no stage of [", absl::StrJoin(names, ", "), "] writes ", FieldName(kOutputField),
        ", so no batch can be made: end the list with a stage that writes it",
        writer.empty() ? "" : absl::StrCat(" ('", writer, "' does)")));
  }
  return absl::OkStatus();
}

}  // namespace graph_internal
}  // namespace flowloader
