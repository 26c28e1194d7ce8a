#include "runtime/graph_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "graph/batch_stage.h"
#include "graph/stage_plan.h"
#include "graph/stage.h"
#include "stages/augment/ops/view_program.h"
#include "stages/core/bool_text.h"
#include "runtime/spec.h"
#include "stages/core/one_line.h"

namespace flowloader {
namespace {

// PlannedTensor is one field that becomes a batch tensor, with its per-sample layout.
struct PlannedTensor {
  std::string name;
  std::string writer;
  OutputSpec spec;
};

// Planned is a stage list's plan and its batch tensors' shapes.
struct Planned {
  StagePlan plan;
  std::vector<PlannedTensor> tensors;
};

// TensorLayout runs the factory of the stage that writes batch tensor `field`, with its
// ports bound as planned, and returns the shape it declares (StageEnv::DeclareOutput), as
// Pipeline::Create does.
absl::StatusOr<OutputSpec> TensorLayout(const StageSpec& writer, const StagePorts& ports,
                                        const std::string& field) {
  StageEnv env;
  for (const FieldSchema& f : ports.inputs) env.inputs.push_back(f.name);
  for (const FieldSchema& f : ports.outputs) env.outputs.push_back(f.name);
  absl::StatusOr<std::unique_ptr<SampleStage>> stage =
      StageRegistry::Global().Create(writer.type, writer.args, env);
  if (!stage.ok()) {
    if (writer.where.empty()) return stage.status();
    return absl::InvalidArgumentError(absl::StrCat(writer.where, ": ", stage.status().message()));
  }
  auto declared = env.declared_outputs.find(field);
  if (declared == env.declared_outputs.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stage '", writer.name.empty() ? writer.type : writer.name, "' writes the tensor '",
        field, "' but its factory declares no shape for it (StageEnv::DeclareOutput)"));
  }
  return declared->second;
}

absl::StatusOr<Planned> Plan(const std::vector<StageSpec>& stages) {
  absl::StatusOr<StagePlan> plan = PlanStages(stages, StageRegistry::Global());
  if (!plan.ok()) return plan.status();
  Planned planned{*std::move(plan), {}};
  for (const FieldFlow& field : planned.plan.fields) {
    if (!field.batch_tensor) continue;
    absl::StatusOr<OutputSpec> spec =
        TensorLayout(stages[field.writer], planned.plan.stages[field.writer], field.name);
    if (!spec.ok()) return spec.status();
    planned.tensors.push_back(
        PlannedTensor{field.name, planned.plan.stages[field.writer].name, *spec});
  }
  return planned;
}

std::string Fields(const std::vector<FieldSchema>& fields) {
  std::vector<std::string> parts;
  for (const FieldSchema& f : fields) {
    parts.push_back(absl::StrCat(f.name, " (", FieldKindName(f.kind), ")"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string StageLine(const StagePorts& stage) {
  std::string label = stage.name == stage.type ? stage.name
                                               : absl::StrCat(stage.name, " (", stage.type, ")");
  std::vector<std::string> parts;
  if (!stage.inputs.empty()) parts.push_back(absl::StrCat("reads ", Fields(stage.inputs)));
  if (!stage.outputs.empty()) parts.push_back(absl::StrCat("writes ", Fields(stage.outputs)));
  if (parts.empty()) parts.push_back("declares no fields");
  label.resize(std::max<size_t>(label.size() + 2, 24), ' ');
  return absl::StrCat("  ", label, absl::StrJoin(parts, "; "), "\n");
}

std::string ShapeOf(const OutputSpec& spec) {
  return absl::StrCat("[", absl::StrJoin(spec.sample_shape, ", "), "] ",
                      DTypeName(spec.dtype()));
}

// DotQuoted quotes a DOT node id or label line (stage names are free text).
std::string DotQuoted(const std::string& text) {
  return absl::StrCat("\"", absl::StrReplaceAll(text, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
}

// DotLabel is a quoted label of several lines.
std::string DotLabel(const std::vector<std::string>& lines) {
  std::vector<std::string> quoted;
  for (const std::string& line : lines) {
    const std::string q = DotQuoted(line);
    quoted.push_back(q.substr(1, q.size() - 2));
  }
  return absl::StrCat("\"", absl::StrJoin(quoted, "\\n"), "\"");
}

std::string StageNode(const StagePorts& stage) { return DotQuoted("stage:" + stage.name); }
std::string FieldNode(const std::string& field) { return DotQuoted("field:" + field); }

// OpListsText lists each op-list stage's ops in order (the view's Compose), one line
// per op, or "" when no stage has an op list.
std::string OpListsText(const std::vector<StageSpec>& stages) {
  std::string out;
  for (const StageSpec& stage : stages) {
    absl::StatusOr<StageSchema> schema = StageRegistry::Global().Find(stage.type);
    if (!schema.ok()) continue;
    for (const OptionSchema& option : schema->options) {
      if (option.name != "ops") continue;
      auto given = stage.args.find("ops");
      const std::string text = given != stage.args.end() ? given->second : option.default_value;
      absl::StatusOr<std::vector<augment::OpText>> ops = augment::ParseOpListText(text);
      if (!ops.ok()) continue;
      absl::StrAppend(&out, "  ", stage.name.empty() ? stage.type : stage.name, " ops:\n");
      for (size_t i = 0; i < ops->size(); ++i) {
        absl::StrAppend(&out, "    ", i + 1, ". ", augment::OpListText({(*ops)[i]}), "\n");
      }
    }
  }
  return out.empty() ? out : absl::StrCat("op lists (in order):\n", out);
}

// TargetsOf is what targets the stages bring to the batch, as their factories would say
// (the data is not opened: an `annotations` stage writes boxes, and masks unless its
// option `masks` is false).
TargetsSpec TargetsOf(const std::vector<StageSpec>& stages) {
  TargetsSpec targets;
  for (const StageSpec& stage : stages) {
    if (stage.type != "annotations") continue;
    targets.boxes = true;
    auto it = stage.args.find("masks");
    bool masks = true;
    if (it != stage.args.end()) (void)ParseBoolText(it->second, &masks);
    targets.instance_masks = masks;
  }
  return targets;
}

// BatchOpsLabel checks each batch op as Create does (its factory, over the batch tensors
// planned here; the data is not opened, so its classes count as unknown) and returns the
// label tensor's description: "int64 [N]", or "float32 [N, C]" with C the num_classes
// option or "the data's classes".
absl::StatusOr<std::string> BatchOpsLabel(const std::vector<StageSpec>& ops,
                                          const std::vector<PlannedTensor>& tensors,
                                          const TargetsSpec& targets) {
  BatchStageEnv env;
  env.targets = targets;
  for (const PlannedTensor& t : tensors) {
    env.outputs.push_back(t.spec);
    env.outputs.back().name = t.name;
  }
  env.batch_size = 2;    // Any even size: the spec's is checked when it runs.
  env.data_classes = 1;  // Stands for the data's classes.
  std::string classes = "the data's classes";
  for (const StageSpec& op : ops) {
    absl::StatusOr<std::unique_ptr<BatchStage>> stage =
        StageRegistry::Global().CreateBatch(op.type, op.args, env);
    if (!stage.ok()) {
      const std::string what = absl::StrCat("batch op '", op.type, "': ");
      return absl::InvalidArgumentError(absl::StrCat(op.where.empty() ? "" : op.where + ": ",
                                                     what, stage.status().message()));
    }
    auto it = op.args.find("num_classes");
    if (it != op.args.end() && it->second != "0") classes = it->second;
  }
  if (!env.label.soft()) return std::string("int64 [N]");
  return absl::StrCat("float32 [N, ", classes, "] soft targets");
}

// BatchOpsText lists the batch ops, then the label tensor; nothing without batch ops (the
// label is then the int64 class index every graph has).
absl::StatusOr<std::string> BatchOpsText(const std::vector<StageSpec>& ops,
                                         const std::vector<PlannedTensor>& tensors,
                                         const TargetsSpec& targets) {
  absl::StatusOr<std::string> label = BatchOpsLabel(ops, tensors, targets);
  if (!label.ok()) return label.status();
  std::string out;
  if (ops.empty()) return out;
  {
    absl::StrAppend(&out, "batch ops (each batch, in order, serial, before upload):\n");
    for (const StageSpec& op : ops) {
      std::vector<std::string> args;
      for (const auto& [k, v] : op.args) args.push_back(absl::StrCat(k, "=", v));
      std::string name = op.name.empty() || op.name == op.type
                             ? op.type
                             : absl::StrCat(op.name, " (", op.type, ")");
      name.resize(std::max<size_t>(name.size() + 2, 24), ' ');
      absl::StrAppend(&out, "  ", name,
                      args.empty() ? "defaults" : absl::StrJoin(args, ", "), "\n");
    }
  }
  absl::StrAppend(&out, "label: ", *label, "\n");
  return out;
}

}  // namespace

absl::StatusOr<std::string> GraphText(const std::vector<StageSpec>& stages,
                                      const std::string& title,
                                      const std::vector<StageSpec>& batch_ops) {
  absl::StatusOr<Planned> planned = Plan(stages);
  if (!planned.ok()) return planned.status();
  std::string out = absl::StrCat("graph of ", title, ": ", planned->plan.stages.size(),
                                 " stages, ", planned->plan.fields.size(), " fields\n");
  StagePorts source{"source", "source", {}, {}};
  for (const FieldFlow& f : planned->plan.fields) {
    if (f.writer < 0) source.outputs.push_back({f.name, f.kind});
  }
  absl::StrAppend(&out, StageLine(source));
  for (const StagePorts& stage : planned->plan.stages) absl::StrAppend(&out, StageLine(stage));
  absl::StrAppend(&out, OpListsText(stages));
  absl::StrAppend(&out, "batch tensors:\n");
  for (const PlannedTensor& t : planned->tensors) {
    absl::StrAppend(&out, "  ", t.name, "  ", ShapeOf(t.spec), "  (written by ", t.writer, ")\n");
  }
  absl::StatusOr<std::string> ops = BatchOpsText(batch_ops, planned->tensors, TargetsOf(stages));
  if (!ops.ok()) return ops.status();
  return out + *ops;
}

absl::StatusOr<std::string> GraphDot(const std::vector<StageSpec>& stages,
                                     const std::string& title,
                                     const std::vector<StageSpec>& batch_ops) {
  absl::StatusOr<Planned> planned = Plan(stages);
  if (!planned.ok()) return planned.status();
  const StagePlan& plan = planned->plan;
  std::string out = absl::StrCat("digraph flowloader {\n  label=", DotQuoted(title),
                                 ";\n  rankdir=LR;\n  source [shape=box, label=\"source\"];\n");
  absl::StrAppend(&out, "  batch [shape=box3d, label=\"batch\"];\n");
  for (const StagePorts& stage : plan.stages) {
    absl::StrAppend(&out, "  ", StageNode(stage), " [shape=box, label=",
                    stage.name == stage.type
                        ? DotLabel({stage.name})
                        : DotLabel({stage.name, absl::StrCat("(", stage.type, ")")}),
                    "];\n");
  }
  for (const FieldFlow& f : plan.fields) {
    absl::StrAppend(&out, "  ", FieldNode(f.name), " [shape=ellipse, label=",
                    DotLabel({f.name, FieldKindName(f.kind)}), "];\n");
    const std::string writer = f.writer < 0 ? "source" : StageNode(plan.stages[f.writer]);
    absl::StrAppend(&out, "  ", writer, " -> ", FieldNode(f.name), ";\n");
    for (int reader : f.readers) {
      absl::StrAppend(&out, "  ", FieldNode(f.name), " -> ", StageNode(plan.stages[reader]),
                      ";\n");
    }
  }
  for (const PlannedTensor& t : planned->tensors) {
    absl::StrAppend(&out, "  ", FieldNode(t.name), " -> batch [label=",
                    DotQuoted(ShapeOf(t.spec)), "];\n");
  }
  // The batch ops, a chain after the batch: each runs on the whole batch.
  absl::StatusOr<std::string> label =
      BatchOpsLabel(batch_ops, planned->tensors, TargetsOf(stages));
  if (!label.ok()) return label.status();
  std::string previous = "batch";
  for (const StageSpec& op : batch_ops) {
    const std::string name = op.name.empty() ? op.type : op.name;
    const std::string node = DotQuoted("batch_op:" + name);
    absl::StrAppend(&out, "  ", node, " [shape=box3d, label=",
                    name == op.type ? DotLabel({name})
                                    : DotLabel({name, absl::StrCat("(", op.type, ")")}),
                    "];\n  ", previous, " -> ", node, ";\n");
    previous = node;
  }
  if (!batch_ops.empty()) {
    absl::StrAppend(&out, "  ", previous, " -> upload [label=", DotQuoted("label " + *label),
                    "];\n  upload [shape=box, label=\"upload\"];\n");
  }
  return out + "}\n";
}

int GraphCommand(const GraphCommandOptions& options) {
  std::vector<StageSpec> stages;
  std::vector<StageSpec> batch_ops;
  std::string title = options.spec;
  if (!options.spec.empty()) {
    absl::StatusOr<PipelineOptions> spec = LoadSpecFile(options.spec);
    if (!spec.ok()) {
      std::fprintf(stderr, "flowloader: %s\n", OneLine(spec.status().message()).c_str());
      return 2;
    }
    stages = spec->stages;
    batch_ops = spec->batch_ops;
    if (stages.empty()) {
      absl::StatusOr<std::vector<StageSpec>> builtin = DefaultStages(*spec);
      if (!builtin.ok()) {
        std::fprintf(stderr, "flowloader: %s\n", OneLine(builtin.status().message()).c_str());
        return 2;
      }
      stages = *std::move(builtin);
    }
  } else {
    title = "the built-in stages";
    stages = DefaultStages(PipelineOptions()).value();
  }
  absl::StatusOr<std::string> text =
      options.dot ? GraphDot(stages, title, batch_ops) : GraphText(stages, title, batch_ops);
  if (!text.ok()) {
    std::fprintf(stderr, "flowloader: %s\n", OneLine(text.status().message()).c_str());
    return 2;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}

}  // namespace flowloader
