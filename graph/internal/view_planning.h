// view_planning.h: what the stages writing batch tensors (augment, transforms) share:
// declaring their views and offering their crop planners to decode.
//
// Thread-safety: called from stage factories, on the thread creating the pipeline.
#ifndef FLOWLOADER_GRAPH_INTERNAL_VIEW_PLANNING_H_
#define FLOWLOADER_GRAPH_INTERNAL_VIEW_PLANNING_H_

#include <cstddef>
#include <string>
#include <vector>

#include "graph/stage.h"

namespace flowloader {
namespace graph_internal {

// Contains says whether `names` holds `name`.
bool Contains(const std::vector<std::string>& names, const std::string& name);

// MayFree says whether the stage may free its input `port` (a built-in's own name): it
// is the field's last reader, or the factory runs outside a planned graph.
bool MayFree(const StageEnv& env, size_t port);

// DeclareViews declares a stage's output tensor `spec` under each name it is bound to and
// offers `planner` to the decode of the image it reads (nullptr: the stage needs the whole
// image, so decode decodes it all); returns the views' indexes. `size_knob` names the
// option that sets the planner's crop size (empty: image_size).
std::vector<int> DeclareViews(const augment::Transform* planner, const OutputSpec& spec,
                              StageEnv& env, const std::string& size_knob = "");

}  // namespace graph_internal

// RegisterTransformsStage adds the `transforms` stage type (transforms_stage.cc).
void RegisterTransformsStage(StageRegistry& registry);
// RegisterDetectionStages adds `annotations` and `sanitize_bounding_boxes`
// (detection_stages.cc).
void RegisterDetectionStages(StageRegistry& registry);
// RegisterSegmentationStages adds `label_map` (segmentation_stages.cc).
void RegisterSegmentationStages(StageRegistry& registry);

}  // namespace flowloader

#endif  // FLOWLOADER_GRAPH_INTERNAL_VIEW_PLANNING_H_
