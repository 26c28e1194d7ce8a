// graph_builder.h: the per-sample stage graph a spec's `stages:` list describes, built in
// code.
//
//   flowloader::GraphBuilder graph;
//   graph.Add("read");
//   graph.Add("decode").Name("jpeg").Outputs({"pixels"});
//   graph.Add("augment").Inputs({"pixels"}).Outputs({"view0"}).Option("image_size", "96");
//   absl::StatusOr<std::vector<flowloader::StageSpec>> stages = graph.Build();
//   options.stages = *stages;  // PipelineOptions::stages, as a spec's list would set it
//
// Each Add is one item of the list, with the same fields a spec item has (type, name,
// concurrency, options, inputs, outputs); Build plans the graph as Pipeline::Create does
// (graph/stage_plan.h) and returns its one-line refusal, so a graph built here
// fails where the same spec would, and with the same words.
//
// Thread-safety: a GraphBuilder is a plain value; use one from one thread at a time.
#ifndef FLOWLOADER_GRAPH_GRAPH_BUILDER_H_
#define FLOWLOADER_GRAPH_GRAPH_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/pipeline_graph.h"

namespace flowloader {

class GraphBuilder {
 public:
  // StageRef configures one added stage; it stays valid while its builder lives.
  class StageRef {
   public:
    // Name is the stage's metrics name (default: its type).
    StageRef& Name(const std::string& name);
    // Option sets one of the type's options, as text (checked by Build).
    StageRef& Option(const std::string& name, const std::string& value);
    // Concurrency fixes the stage's parallel bodies (0 = the type's default).
    StageRef& Concurrency(int concurrency);
    // Inputs / Outputs bind the type's ports, in order, to these field names.
    StageRef& Inputs(std::vector<std::string> fields);
    StageRef& Outputs(std::vector<std::string> fields);

   private:
    friend class GraphBuilder;
    StageRef(GraphBuilder* builder, size_t index) : builder_(builder), index_(index) {}
    StageSpec& spec() const { return builder_->stages_[index_]; }
    GraphBuilder* builder_;
    size_t index_;
  };

  // Add appends a stage of registered type `type` (checked by Build).
  StageRef Add(const std::string& type);

  // Build returns the stage list for PipelineOptions::stages when the graph plans (every
  // field read is written earlier, with the kind its reader declares, one writer each, a
  // batch tensor written), else the planner's one-line InvalidArgument (NotFound for an
  // unknown type).
  absl::StatusOr<std::vector<StageSpec>> Build() const;

 private:
  std::vector<StageSpec> stages_;
};

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_GRAPH_BUILDER_H_
