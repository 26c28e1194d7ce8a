#include "graph/graph_builder.h"

#include <utility>

#include "graph/stage_plan.h"

namespace flowloader {

GraphBuilder::StageRef& GraphBuilder::StageRef::Name(const std::string& name) {
  spec().name = name;
  return *this;
}

GraphBuilder::StageRef& GraphBuilder::StageRef::Option(const std::string& name,
                                                       const std::string& value) {
  spec().args[name] = value;
  return *this;
}

GraphBuilder::StageRef& GraphBuilder::StageRef::Concurrency(int concurrency) {
  spec().concurrency = concurrency;
  return *this;
}

GraphBuilder::StageRef& GraphBuilder::StageRef::Inputs(std::vector<std::string> fields) {
  spec().inputs = std::move(fields);
  return *this;
}

GraphBuilder::StageRef& GraphBuilder::StageRef::Outputs(std::vector<std::string> fields) {
  spec().outputs = std::move(fields);
  return *this;
}

GraphBuilder::StageRef GraphBuilder::Add(const std::string& type) {
  StageSpec spec;
  spec.type = type;
  stages_.push_back(std::move(spec));
  return StageRef(this, stages_.size() - 1);
}

absl::StatusOr<std::vector<StageSpec>> GraphBuilder::Build() const {
  if (absl::Status s = CheckStagePlan(stages_, StageRegistry::Global());
      !s.ok()) {
    return s;
  }
  return stages_;
}

}  // namespace flowloader
