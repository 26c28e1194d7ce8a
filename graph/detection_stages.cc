// detection_stages.cc: the stage types of detection graphs: `annotations` writes each
// image's targets (boxes, labels, iscrowd, area, image_id and instance masks) from the
// dataset's COCO file, and `sanitize_bounding_boxes` drops degenerate boxes with every
// field of theirs, as torchvision.transforms.v2.SanitizeBoundingBoxes does. The geometric
// ops between them (the transforms stage) move the targets with the pixels.
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/stage.h"
#include "stages/detection/geometry.h"

namespace flowloader {
namespace {

class AnnotationsStage : public SampleStage {
 public:
  AnnotationsStage(const Dataset* dataset, bool masks)
      : dataset_(dataset), coco_(dataset->annotations()), masks_(masks) {}
  absl::Status Process(SampleContext& sample) const override {
    // Windowed masks (Targets::masks_windowed): only each instance's box is rasterised.
    coco_->MakeTargets(dataset_->annotation_image(sample.index), masks_, &sample.targets,
                       /*windowed=*/true);
    return absl::OkStatus();
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    return sample.targets.Bytes();
  }

 private:
  const Dataset* const dataset_;  // Owned by the pipeline.
  const detection::CocoDataset* const coco_;  // Owned by the dataset.
  const bool masks_;
};

StageSchema AnnotationsSchema() {
  return StageSchema{
      "annotations",
      "writes each image's detection targets from the COCO instances file given as "
      "`annotations` (boxes xyxy, labels, iscrowd, area, image_id; with masks, one mask "
      "per instance rasterised from its polygons or RLE)",
      {{"masks", OptionType::kBool, "true",
        "rasterise instance masks (false: boxes only, no mask cost)"}},
      0,
      {{kPathField, FieldKind::kMetadata}},
      {{kBoxesField, FieldKind::kTargets}, {kMasksField, FieldKind::kTargets}}};
}

absl::StatusOr<std::unique_ptr<SampleStage>> CreateAnnotations(const StageArgs& args,
                                                               StageEnv& env) {
  const detection::CocoDataset* coco =
      env.dataset != nullptr ? env.dataset->annotations() : nullptr;
  if (coco == nullptr) {
    return absl::InvalidArgumentError(
        "annotations: the data has no annotation file: give `annotations: instances.json` "
        "(--annotations) with `data:` the images directory");
  }
  const bool masks = args.GetBool("masks") && coco->options().masks;
  // A worker holds one sample's targets and, while an op moves them, a second copy.
  const int64_t per_sample =
      coco->MaxInstances() * (masks ? 2 * coco->MaxPlaneBytes() : 0) +
      coco->MaxInstances() * 32;
  if (per_sample > 0) {
    env.memory.push_back(
        {"annotation targets", "annotation_targets", per_sample * env.num_workers,
         absl::StrCat("num_workers ", env.num_workers, " × max instances ",
                      coco->MaxInstances(), masks ? absl::StrCat(" × 2 masks of ",
                                                                 coco->MaxPlaneBytes(), " px")
                                                  : std::string(" boxes")),
         {"num_workers", "masks"}});
  }
  env.targets.boxes = true;
  env.targets.instance_masks = masks;
  env.targets.max_instances = coco->MaxInstances();
  return std::unique_ptr<SampleStage>(new AnnotationsStage(env.dataset, masks));
}

class SanitizeStage : public SampleStage {
 public:
  explicit SanitizeStage(detection::SanitizeOptions options) : options_(options) {}
  absl::Status Process(SampleContext& sample) const override {
    detection::Sanitize(options_, &sample.targets);
    return absl::OkStatus();
  }

 private:
  const detection::SanitizeOptions options_;
};

StageSchema SanitizeSchema() {
  return StageSchema{
      "sanitize_bounding_boxes",
      "drops boxes narrower or lower than min_size, smaller than min_area, or outside the "
      "image, with their labels, iscrowd, area and masks (torchvision v2's "
      "SanitizeBoundingBoxes)",
      {{"min_size", OptionType::kFloat, "1", "smallest width and height kept, pixels"},
       {"min_area", OptionType::kFloat, "1", "smallest area kept, pixels²"}},
      0,
      {{kBoxesField, FieldKind::kTargets}},
      {{kBoxesField, FieldKind::kTargets}}};
}

absl::StatusOr<std::unique_ptr<SampleStage>> CreateSanitize(const StageArgs& args,
                                                            StageEnv& env) {
  detection::SanitizeOptions o;
  o.min_size = args.GetFloat("min_size");
  o.min_area = args.GetFloat("min_area");
  if (!(o.min_size >= 0) || !(o.min_area >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sanitize_bounding_boxes: min_size and min_area must be >= 0, got ", o.min_size, " and ",
        o.min_area));
  }
  return std::unique_ptr<SampleStage>(new SanitizeStage(o));
}

}  // namespace

void RegisterDetectionStages(StageRegistry& registry) {
  (void)registry.Register(AnnotationsSchema(), CreateAnnotations);
  (void)registry.Register(SanitizeSchema(), CreateSanitize);
}

}  // namespace flowloader
