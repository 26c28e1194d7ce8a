// graph_command.h: `flowloader graph`: the planned per-sample graph of a spec, without
// running it.
//
// The plan is Pipeline::Create's own (graph/stage_plan.h PlanStages): each stage
// with the fields its ports are bound to, each field's kind, writer and readers, and which
// fields become batch tensors (with their per-sample shape and dtype, from the stage that
// writes them). The text form is one line per stage, then the batch:
//
//   graph of train.yaml: 3 stages, 6 fields
//     source                 writes key (metadata), path (metadata), label (label)
//     read (read)            reads path (metadata); writes bytes (bytes)
//     decode (decode)        reads bytes (bytes); writes image (image)
//     augment (augment)      reads image (image); writes output (tensor)
//   batch tensors:
//     output  [3, 224, 224] float32  (written by augment)
//   batch ops (each batch, in order, serial, before upload):
//     mixup_cutmix            cutmix_alpha=1.0, mixup_alpha=0.8
//   label: float32 [N, the data's classes] soft targets
//
// (The batch ops' and the label's lines appear when the spec has `batch_ops:`.)
//
// --dot prints the same graph as Graphviz DOT instead (stages as boxes, fields as ellipses,
// the batch as the sink of its tensors): `flowloader graph --spec=F --dot | dot -Tsvg`.
//
// Exit codes: 0 planned; 2 an unreadable spec or a graph Create would refuse (its one
// line, with the spec's file:line:column, on stderr; nothing on stdout).
//
// Thread-safety: GraphCommand writes to stdout and stderr; call it from one thread.
#ifndef FLOWLOADER_RUNTIME_GRAPH_COMMAND_H_
#define FLOWLOADER_RUNTIME_GRAPH_COMMAND_H_

#include <string>

#include "absl/status/statusor.h"
#include "runtime/pipeline.h"

namespace flowloader {

struct GraphCommandOptions {
  std::string spec;  // YAML spec; empty = the built-in read → decode → augment.
  bool dot = false;  // Graphviz DOT instead of text.
};

// GraphCommand prints the planned graph and returns the process exit code.
int GraphCommand(const GraphCommandOptions& options);

// GraphText is the text form of the graph of `stages` (titled by `title`), or the
// planner's refusal.
absl::StatusOr<std::string> GraphText(const std::vector<StageSpec>& stages,
                                      const std::string& title,
                                      const std::vector<StageSpec>& batch_ops = {});

// GraphDot is the DOT form of the same graph.
absl::StatusOr<std::string> GraphDot(const std::vector<StageSpec>& stages,
                                     const std::string& title,
                                     const std::vector<StageSpec>& batch_ops = {});

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_GRAPH_COMMAND_H_
